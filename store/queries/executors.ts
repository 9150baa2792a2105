import type { Db } from '../driver.ts';
import { durationSql } from './runs.ts';

/**
 * Liveness of run executors across processes (the API replicas of the Kubernetes deployment): each
 * process holds a session-level advisory lock named after its executor id for as long as it lives, and
 * Postgres drops the lock with the connection. A running run whose executor's lock can be taken has
 * lost its executor.
 */
export const EXECUTOR_LOCK_SQL = 'hashtextextended($1::text, 7)';

/** Runs left running by executors (with this id prefix) that no longer hold their lock become failed. */
export async function failRunsOfDeadExecutors(
  db: Db,
  opts: { prefix: string; error: string; completedAt: string },
): Promise<string[]> {
  const { rows: executors } = await db.query<{ executor: string }>(
    `SELECT DISTINCT executor FROM runs
      WHERE status = 'running' AND executor IS NOT NULL AND starts_with(executor, $1::text)`,
    [opts.prefix],
  );
  const failed: string[] = [];
  for (const { executor } of executors) {
    const ids = await db.transaction(async (tx) => {
      // A transaction-level try-lock conflicts with the owner's session lock and ends with the commit.
      const { rows } = await tx.query<{ free: boolean }>(
        `SELECT pg_try_advisory_xact_lock(${EXECUTOR_LOCK_SQL}) AS free`,
        [executor],
      );
      if (!rows[0]?.free) return [];
      const updated = await tx.query<{ run_id: string }>(
        `UPDATE runs SET status = 'failed', error = $2, completed_at = $3, duration_ms = ${durationSql('$3')}
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
  await db.query(`SELECT pg_notify('${CANCEL_CHANNEL}', $1::text)`, [runId]);
}

/**
 * Channel of live run events between API replicas (runs/run-events.ts): progress of runs someone streams,
 * and which runs each replica's streams follow. Payloads are small JSON texts (NOTIFY allows < 8000 bytes).
 */
export const RUN_EVENTS_CHANNEL = 'kubeglue_run_events';

export async function publishRunEvent(db: Db, payload: string): Promise<void> {
  await db.query(`SELECT pg_notify('${RUN_EVENTS_CHANNEL}', $1::text)`, [payload]);
}
