import { resourceNameForId } from '../../contract/resources/convert.ts';
import type { KubeglueResources } from '../../kube/resources/index.ts';
import { isResourceError } from '../../kube/resources/index.ts';
import { retryOnConflict } from '../../kube/update-status.ts';
import { failedFinish } from '../../runs/execution/index.ts';
import { toolRunFor, toolRunName } from '../../runs/toolrun.ts';
import type { Store } from '../../store/index.ts';

export interface StartHandlerDeps {
  store: Store;
  resources: KubeglueResources;
  namespace: string;
}

/**
 * Outbox `start`: turns a stored async run into its ToolRun work order. Creating it twice is harmless
 * (AlreadyExists = done), so a redelivered row changes nothing.
 */
export function createStartHandler(deps: StartHandlerDeps) {
  return async (row: { runId: string | null }) => {
    if (!row.runId) return { abandon: 'start row without a run id' } as const;
    const run = await deps.store.getRun(row.runId);
    // Cancelled before it started, or already finished: nothing to launch.
    if (run?.status !== 'running') return { done: true } as const;
    const tool = await deps.resources.tools.get(resourceNameForId(run.toolId));
    const owner = tool?.metadata.uid
      ? { apiVersion: tool.apiVersion, kind: 'Tool', name: tool.metadata.name, uid: tool.metadata.uid }
      : undefined;
    try {
      // A 409 Conflict (an overloaded or proxied API server) is tried again at once, jittered, as client-go
      // does, rather than waiting for the outbox's backoff: the run is waiting for its Pod.
      await retryOnConflict(() => deps.resources.toolRuns.create(toolRunFor(run, deps.namespace, owner)));
    } catch (error) {
      if (!isResourceError(error, 'AlreadyExists')) throw error;
    }
    return { done: true } as const;
  };
}

/**
 * A dead `start` row (its handler failed KUBEGLUE_JOB_MAX_FAILURES times in a row): the run was never handed
 * to a ToolRun and never will be, so it fails with the reason instead of staying `running`, and its completion
 * effects go out (a notification tells the caller). A ToolRun that exists after all keeps the run.
 */
export function createStartDeadHandler(deps: Pick<StartHandlerDeps, 'store' | 'resources'>) {
  return async (row: { runId: string | null }, reason: string): Promise<void> => {
    if (!row.runId) return;
    const run = await deps.store.getRun(row.runId);
    if (run?.status !== 'running') return;
    if (await deps.resources.toolRuns.get(toolRunName(run.runId))) return;
    const error = `The run could not be started: ${reason}`;
    await deps.store.finishRun(run.runId, {
      ...failedFinish(run, error, new Date()),
      result: { success: false, error },
    });
  };
}
