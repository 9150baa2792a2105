/**
 * Cancel: the store's `aborted` is authoritative (DESIGN.md "Cancel"); then the run is stopped where it
 * executes — in this process at once, elsewhere through the store's cancel channel or its ToolRun.
 */
import { KG_ERR_RUN_NOT_CANCELLABLE } from '../contract/api/errors.ts';
import type { Run } from '../contract/api/run.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import { isResourceError } from '../kube/resources/index.ts';
import type { Store, StoredRun } from '../store/index.ts';
import { CANCELLED_MESSAGE, completionEffects } from './completion.ts';
import { type Caller, type RunContext, refOf, visibleRun } from './context.ts';
import { runView } from './run-view.ts';
import { toolRunName } from './toolrun.ts';

/**
 * Cancels a running run: 404 for a run the caller may not see, 400 once it succeeded or failed, the run
 * unchanged when already aborted. The stored status decides; a cancel that loses a race is read again.
 */
export async function cancelRun(ctx: RunContext, runId: string, caller: Caller): Promise<Run> {
  const { deps } = ctx;
  const run = await visibleRun(deps.store, runId, caller);
  if (run.status === 'success' || run.status === 'failed')
    throw KG_ERR_RUN_NOT_CANCELLABLE(runId, run.status);
  const urlFor = deps.urlFor;
  if (run.status === 'aborted') return runView(run, { urlFor });
  const aborted = await deps.store.transaction(async (tx) => {
    const updated = await tx.abortRun(runId, {
      error: CANCELLED_MESSAGE,
      completedAt: new Date().toISOString(),
    });
    if (updated) {
      await tx.enqueueOutbox(completionEffects(updated, 'aborted'));
      // A queued run that is cancelled never starts: its runtime credentials have no use left.
      await tx.deleteRunCredentials(runId);
    }
    return updated;
  });
  if (!aborted) return cancelRun(ctx, runId, caller);
  ctx.running.abort(runId);
  deps.metrics?.runFinished('aborted', aborted.requestSource, aborted.metadata.durationMs ?? 0);
  deps.events?.emit(refOf(aborted), {
    type: 'run_finished',
    status: 'aborted',
    error: CANCELLED_MESSAGE,
    ...(aborted.metadata.durationMs !== undefined ? { durationMs: aborted.metadata.durationMs } : {}),
  });
  // The store already says aborted; reaching the run where it executes is best effort (its own checks
  // of the stored status, the runner's heartbeat and the operator's resync catch a lost message).
  await deps.onCancelled?.(aborted).catch(() => {});
  return runView(aborted, { urlFor });
}

/**
 * How a stored cancel reaches the run wherever it executes, in any deployment (DESIGN.md "Cancel"): a sync run
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
  runs: { abortLocal(runId: string): boolean },
): Promise<() => Promise<void>> {
  return store.onCancel((runId) => {
    runs.abortLocal(runId);
  });
}
