import type { Db, Driver } from '../driver.ts';
import { terminalSet } from './runs.ts';

/**
 * Liveness of run executors across processes (the API replicas of the Kubernetes deployment): each
 * process holds a session-level advisory lock named after its executor id for as long as it lives, and
 * Postgres drops the lock with the connection. A running run whose executor's lock can be taken has
 * lost its executor. (The embedded SQLite store has one process: its driver keeps the locks in memory.)
 */
export const EXECUTOR_LOCK_SQL = 'hashtextextended($1::text, 7)';

/** Runs left running by executors (with this id prefix) that no longer hold their lock become failed. */
export async function failRunsOfDeadExecutors(
  driver: Driver,
  opts: { prefix: string; error: string; completedAt: string },
): Promise<string[]> {
  const { rows: executors } = await driver.query<{ executor: string }>(
    `SELECT DISTINCT executor FROM runs
      WHERE status = 'running' AND executor IS NOT NULL 
        AND substr(executor, 1, length(${driver.dialect.typed('$1', 'text')})) = ${driver.dialect.typed('$1', 'text')}`,
    [opts.prefix],
  );
  const failed: string[] = [];
  for (const { executor } of executors) {
    const ids = await driver.transaction(async (tx) => {
      if (!(await driver.sessionLockFree(tx, EXECUTOR_LOCK_SQL, executor))) return [];
      const updated = await tx.query<{ run_id: string }>(
        `UPDATE runs SET ${terminalSet(tx.dialect, 'failed')}
          WHERE status = 'running' AND executor = $1
          RETURNING run_id`,
        [executor, opts.error, opts.completedAt],
      );
      return updated.rows.map((row) => row.run_id);
    });
    failed.push(...ids);
  }
  return failed.sort();
}

/** Channel of run cancellations: every API replica aborts the sync run it executes with that id. */
export const CANCEL_CHANNEL = 'kubeglue_cancel';

export async function publishCancel(db: Db, runId: string): Promise<void> {
  await db.notify(CANCEL_CHANNEL, runId);
}

/**
 * Channel of live run events between API replicas (runs/run-events.ts): progress of runs someone streams,
 * and which runs each replica's streams follow. Payloads are small JSON texts (NOTIFY allows < 8000 bytes).
 */
export const RUN_EVENTS_CHANNEL = 'kubeglue_run_events';

export async function publishRunEvent(db: Db, payload: string): Promise<void> {
  await db.notify(RUN_EVENTS_CHANNEL, payload);
}
