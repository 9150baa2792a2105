import type { ExecutionMode, RequestSource, RunOptions } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import { labelValueForId, shortHash, slug } from '../contract/resources/convert.ts';
import type { ToolRunResource } from '../contract/resources/kinds.ts';
import { RECORDED_FINALIZER, RUN_ID_KEY, TOOL_ID_LABEL } from '../contract/resources/labels.ts';
import { API_VERSION, type OwnerReference } from '../contract/resources/meta.ts';
import type { StoredRun } from '../store/index.ts';
import { withoutTraceOptions } from './execution/index.ts';

/** A DNS-1123 name per run id: `run-<slug>-<hash>` (run ids may be any string the API accepts). */
export function toolRunName(runId: string): string {
  const readable = slug(runId);
  return `run-${readable ? `${readable}-` : ''}${shortHash(runId)}`;
}

/** The work order of a stored async run. Inputs and runtime credentials stay out of it. */
export function toolRunFor(run: StoredRun, namespace: string, owner?: OwnerReference): ToolRunResource {
  const tool = run.tool as unknown as Tool;
  const { createdAt: _c, updatedAt: _u, ...snapshot } = tool;
  return {
    apiVersion: API_VERSION,
    kind: 'ToolRun',
    metadata: {
      name: toolRunName(run.runId),
      namespace,
      labels: { [RUN_ID_KEY]: labelValueForId(run.runId), [TOOL_ID_LABEL]: labelValueForId(run.toolId) },
      finalizers: [RECORDED_FINALIZER],
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      runId: run.runId,
      tool: snapshot,
      ...(run.options ? { options: withoutTraceOptions(run.options) as RunOptions } : {}),
      requestSource: run.requestSource as RequestSource,
      executionMode: (run.executionMode ?? 'prod') as ExecutionMode,
      ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
      ...(run.traceId ? { traceId: run.traceId } : {}),
      ...(run.userId ? { userId: run.userId } : {}),
    },
  };
}
