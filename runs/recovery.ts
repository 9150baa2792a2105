/**
 * Startup recovery of the embedded deployment: runs left `running` by a process that is gone (killed,
 * crashed: it no longer holds its executor lock) had their execution lost; those of another live process on
 * the same Postgres are left to it. A read-only async run is handed back to run again as its next
 * attempt; any other run fails with the recovery message, its completion effects (notification) queued as
 * with any terminal write. Runs no executor had started yet are left for their start.
 */

import { isAsyncRun } from '../contract/api/run.ts';
import type { Store } from '../store/index.ts';
import { failedFinish } from './execution/index.ts';
import { afterInterruption } from './interrupted.ts';

/** What happened to a run recovery finds: the error begins with it, followed by why it was not retried. */
export const RECOVERY_MESSAGE =
  'kubeglue restarted: the process executing this run stopped before it finished';

/**
 * How often a process sharing one Postgres with others looks for runs that a process gone meanwhile left
 * running (the api role's replicas, embedded processes): the longest such a run stays `running`.
 */
export const RECOVERY_SWEEP_MS = 60_000;

export interface RecoveryReport {
  /** Handed back to run again, with their new attempt. */
  retried: { runId: string; attempt: number }[];
  failed: string[];
}

export async function recoverStartedRuns(
  store: Pick<Store, 'listStartedRuns' | 'retryRun' | 'batch' | 'executorAlive'>,
  opts: { exceptExecutor: string; maxAttempts: number; now?: () => Date },
): Promise<RecoveryReport> {
  const report: RecoveryReport = { retried: [], failed: [] };
  const now = opts.now ?? (() => new Date());
  // Another embedded process on the same Postgres that is alive executes its runs still: they are its own.
  const alive = new Map<string, Promise<boolean>>();
  const executorAlive = (executor: string): Promise<boolean> => {
    let answer = alive.get(executor);
    if (!answer) {
      answer = store.executorAlive(executor);
      alive.set(executor, answer);
    }
    return answer;
  };
  for (const run of await store.listStartedRuns({ exceptExecutor: opts.exceptExecutor })) {
    if (run.executor && (await executorAlive(run.executor))) continue;
    const attempt = run.attempt ?? 1;
    const verdict = afterInterruption({
      cause: RECOVERY_MESSAGE,
      tool: run.tool,
      async: isAsyncRun(run.options),
      attempt,
      maxAttempts: opts.maxAttempts,
    });
    if (verdict.retry) {
      // Guarded by the executor that held it: a run another live process took meanwhile stays its own.
      const handed = await store.retryRun(run.runId, {
        fromAttempt: attempt,
        ...(run.executor ? { fromExecutor: run.executor } : {}),
      });
      // Refused: it ended, or another process holds it now; either way it is not this recovery's.
      if (handed) report.retried.push({ runId: run.runId, attempt: verdict.attempt });
      continue;
    }
    const recorded = await store.batch.finishRun(run.runId, failedFinish(run, verdict.error, now()));
    if (recorded) report.failed.push(run.runId);
  }
  return report;
}
