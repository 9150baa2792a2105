import { resourceNameForId } from '../crds/convert.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import { isResourceError } from '../kube/resources/index.ts';
import { toolRunFor } from '../runs/toolruns.ts';
import type { Store } from '../store/index.ts';

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
      await deps.resources.toolRuns.create(toolRunFor(run, deps.namespace, owner));
    } catch (error) {
      if (!isResourceError(error, 'AlreadyExists')) throw error;
    }
    return { done: true } as const;
  };
}
