/**
 * Carries out the actions decide() returned, in order, against the ToolRun resource, the store, the
 * launcher and the Event recorder. It decides nothing beyond what an action's result forces: a launch
 * that launched nothing ends the batch.
 */
import type { RunReason } from '../../contract/reasons.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import { RECORDED_FINALIZER } from '../../contract/resources/labels.ts';
import { isResourceError, type ResourceClient } from '../../kube/resources/index.ts';
import { CANCELLED_MESSAGE, completionEffects } from '../../runs/completion.ts';
import { failedFinish } from '../../runs/execution/index.ts';
import type { Store, StoredRun } from '../../store/index.ts';
import type { EventRecorder } from '../events.ts';
import type { Launcher } from '../launchers/launcher.ts';
import { versionOf } from '../status.ts';
import type { Action } from './reconcile.ts';

export interface ExecuteDeps {
  toolRuns: Pick<ResourceClient<ToolRunResource>, 'patchStatus' | 'update' | 'delete'>;
  store: Pick<Store, 'batch' | 'transaction' | 'retryRun' | 'getRun'>;
  launcher: Launcher;
  events: EventRecorder;
  /** Hands a written (or deleted) ToolRun to the informer at once (read-your-writes). */
  wrote?: (type: 'MODIFIED' | 'DELETED', toolRun: ToolRunResource) => void;
  now?: () => Date;
}

export interface ExecuteResult {
  /** The ToolRun as last written (or as given). */
  toolRun: ToolRunResource;
  /** The store's run changed (terminal write, abort): reconcile again to mirror it. */
  storeChanged: boolean;
  /** The batch ended early (nothing launched): reconcile again. */
  interrupted: boolean;
  /** The ToolRun is gone or going (finalizer released on a deleted object, TTL delete). */
  gone: boolean;
}

/** A 404 of a status write leaves the ToolRun as it was (it is being deleted). */
function notFoundAsIs(toolRun: ToolRunResource) {
  return (error: unknown): ToolRunResource => {
    if (isResourceError(error, 'NotFound')) return toolRun;
    throw error;
  };
}

export async function execute(
  toolRun: ToolRunResource,
  run: StoredRun | undefined,
  actions: readonly Action[],
  deps: ExecuteDeps,
): Promise<ExecuteResult> {
  const now = deps.now ?? (() => new Date());
  const name = toolRun.metadata.name;
  const result: ExecuteResult = { toolRun, storeChanged: false, interrupted: false, gone: false };
  const written = (updated: ToolRunResource) => {
    result.toolRun = updated;
    // The last finalizer removed from a deleted object: the object is gone, not modified.
    const gone = updated.metadata.deletionTimestamp !== undefined && !updated.metadata.finalizers?.length;
    deps.wrote?.(gone ? 'DELETED' : 'MODIFIED', updated);
  };

  /** The operator's terminal write (the first one wins); the cause is noted only when this write won. */
  const failRun = async (run: StoredRun, error: string, reason: RunReason) => {
    const recorded = await deps.store.batch.finishRun(run.runId, failedFinish(run, error, now()));
    if (recorded) {
      written(
        await deps.toolRuns
          .patchStatus(name, { reason }, versionOf(result.toolRun))
          .catch(notFoundAsIs(result.toolRun)),
      );
    }
    result.storeChanged = true;
  };

  for (const action of actions) {
    switch (action.type) {
      case 'patchStatus':
        try {
          // Guarded by the version we decided on: a newer object is re-decided (a Conflict requeues).
          written(await deps.toolRuns.patchStatus(name, action.patch, versionOf(result.toolRun)));
        } catch (error) {
          // Deleted meanwhile (the cache was behind): nothing left to do for it.
          if (!isResourceError(error, 'NotFound')) throw error;
          result.gone = true;
          return result;
        }
        break;
      case 'event':
        await deps.events.record(result.toolRun, action.reason, action.message);
        break;
      case 'launch': {
        const launched = await deps.launcher.launch(result.toolRun, action.attempt);
        if (!launched.launched) {
          result.interrupted = true;
          return result;
        }
        break;
      }
      case 'finishRun': {
        if (!run) break;
        await failRun(run, action.error, action.reason);
        break;
      }
      case 'retryRun': {
        if (!run) break;
        const handed = await deps.store.retryRun(run.runId, { fromAttempt: action.fromAttempt });
        result.storeChanged = true;
        if (handed) break;
        // Refused. Still running at that attempt: its completion effect is in the outbox, it must not run
        // again. Otherwise it ended or moved on meanwhile: decide again from what the store says now.
        const current = await deps.store.getRun(run.runId);
        if (current?.status === 'running' && (current.attempt ?? 1) === action.fromAttempt) {
          await failRun(run, action.otherwise.error, action.otherwise.reason);
        }
        result.interrupted = true;
        return result;
      }
      case 'abortRun': {
        if (!run) break;
        await deps.store.transaction(async (tx) => {
          const aborted = await tx.abortRun(run.runId, {
            error: CANCELLED_MESSAGE,
            completedAt: now().toISOString(),
          });
          if (aborted) await tx.enqueueOutbox(completionEffects(aborted, 'aborted'));
        });
        result.storeChanged = true;
        break;
      }
      case 'stop':
        await deps.launcher.stop(result.toolRun, action.attempt, { graceMs: action.graceMs });
        break;
      case 'cleanup':
        await deps.launcher.cleanup(result.toolRun, action.attempt, { token: action.token, pod: action.pod });
        break;
      case 'releaseFinalizer': {
        const finalizers = result.toolRun.metadata.finalizers ?? [];
        if (!finalizers.includes(RECORDED_FINALIZER)) break;
        try {
          written(
            await deps.toolRuns.update({
              ...result.toolRun,
              metadata: {
                ...result.toolRun.metadata,
                finalizers: finalizers.filter((f) => f !== RECORDED_FINALIZER),
              },
            }),
          );
        } catch (error) {
          // Gone already, or a newer version: the next reconcile sees it.
          if (!isResourceError(error, 'NotFound')) throw error;
          result.gone = true;
        }
        if (result.toolRun.metadata.deletionTimestamp) result.gone = true;
        break;
      }
      case 'delete':
        try {
          await deps.toolRuns.delete(name);
        } catch (error) {
          if (!isResourceError(error, 'NotFound')) throw error;
        }
        deps.wrote?.('DELETED', result.toolRun);
        result.gone = true;
        break;
    }
  }
  return result;
}

/** The precondition of a status write: the object's version as this reconcile saw it. */
