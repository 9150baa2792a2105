import type { KubeglueResources } from '../kube/resources/index.ts';
import { isResourceError } from '../kube/resources/index.ts';
import type { Store, StoredRun } from '../store/index.ts';
import type { RunService } from './service.ts';
import { toolRunName } from './toolrun.ts';

/**
 * How a stored cancel reaches the run's executor in any deployment (DESIGN.md "Cancel"): a sync run
 * through the store's cancel channel, which every API replica listens to; an async run through its
 * ToolRun's `spec.cancel`, which the operator and (by its heartbeat) the runner act on. A ToolRun not
 * created yet never will be: the outbox start handler skips runs that are no longer running.
 */
export function propagateCancel(deps: {
  store: Pick<Store, 'publishCancel'>;
  toolRuns: KubeglueResources['toolRuns'];
}): (run: StoredRun) => Promise<void> {
  return async (run) => {
    if ((run.options as { async?: boolean } | undefined)?.async !== true) {
      await deps.store.publishCancel(run.runId);
      return;
    }
    try {
      await deps.toolRuns.patch(toolRunName(run.runId), { spec: { cancel: true } });
    } catch (error) {
      if (!isResourceError(error, 'NotFound')) throw error;
    }
  };
}

/** Aborts sync runs of this process that another replica cancelled. */
export function listenForCancels(
  store: Pick<Store, 'onCancel'>,
  runs: Pick<RunService, 'abortLocal'>,
): Promise<() => Promise<void>> {
  return store.onCancel((runId) => {
    runs.abortLocal(runId);
  });
}
