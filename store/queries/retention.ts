import type { Db } from '../driver.ts';

/**
 * Run retention: old runs, and earlier their results and files, are deleted in small batches, each its own
 * short transaction, so a sweep never holds locks (Postgres) or the write lock (SQLite) for long. Only
 * runs that have ended are touched.
 */

/**
 * Deletes up to `limit` ended runs that started before `before` (ISO), oldest first, with everything that
 * belongs to them (step results, result, files, recording, credentials, executions: ON DELETE CASCADE).
 * Returns how many.
 */
export async function pruneRuns(db: Db, opts: { before: string; limit: number }): Promise<number> {
  assertLimit(opts.limit);
  const d = db.dialect;
  // runs_started_idx, read oldest first; running runs are passed over.
  const { rowCount } = await db.query(
    `DELETE FROM runs WHERE run_id IN (
       SELECT run_id FROM runs
        WHERE started_at < ${d.timestamp('$1')} AND status <> 'running'
        ORDER BY started_at, run_id
        LIMIT $2)`,
    [opts.before, opts.limit],
  );
  return rowCount;
}

/**
 * Deletes up to `limit` run results stored before `before` (with the runs' step results and recordings, which
 * hold the same data; the run record keeps its recording's summary, as it keeps its files' metadata), and up
 * to `limit` files created before it; the run records stay. Returns how many results and files were deleted.
 */
export async function pruneRunOutputs(db: Db, opts: { before: string; limit: number }): Promise<number> {
  assertLimit(opts.limit);
  return db.transaction(async (tx) => {
    const d = tx.dialect;
    const { rows } = await tx.query<{ run_id: string }>(
      `SELECT run_id FROM run_results WHERE stored_at < ${d.timestamp('$1')} ORDER BY stored_at LIMIT $2`,
      [opts.before, opts.limit],
    );
    const runIds = rows.map((row) => row.run_id);
    if (runIds.length > 0) {
      await tx.query(`DELETE FROM run_step_results WHERE ${d.inArray('run_id', '$1')}`, [runIds]);
      await tx.query(`DELETE FROM run_results WHERE ${d.inArray('run_id', '$1')}`, [runIds]);
      await tx.query(`DELETE FROM run_recordings WHERE ${d.inArray('run_id', '$1')}`, [runIds]);
    }
    const files = await tx.query(
      `DELETE FROM run_files WHERE (run_id, file_key) IN (
         SELECT run_id, file_key FROM run_files WHERE created_at < ${d.timestamp('$1')} ORDER BY created_at LIMIT $2)`,
      [opts.before, opts.limit],
    );
    return runIds.length + files.rowCount;
  });
}

function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be an integer >= 1');
}
