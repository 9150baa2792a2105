import type { Db } from '../driver.ts';
import type { EndedRunnerAttempt, RunnerAttempt, RunnerAttemptRef, TerminalRunStatus } from '../types.ts';
import { toIso, toNumber } from './values.ts';

/**
 * Runner attempts (table `run_executions`, migration 7): which attempt of a run a runner Pod is
 * executing, the hash of that attempt's token, and how far its event stream got. The internal API authenticates runners and
 * deduplicates their events here; the token itself is never stored.
 */

/**
 * Issues the token of an attempt for a running run; false when the run is not running (or unknown) or
 * a later attempt already holds a token. A new attempt starts the run over: its token replaces the old
 * one (which stops working at once), its event sequence starts from nothing and the previous attempt's
 * partial step results are dropped, so they cannot mix with the new attempt's. Issuing again for the
 * same attempt (an operator that lost the token before handing it out) replaces only the token.
 */
export async function issueRunToken(
  db: Db,
  runId: string,
  attempt: number,
  tokenHash: string,
  issuedAt: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const d = tx.dialect;
    const previous = await tx.query<{ attempt: number }>(
      `SELECT attempt FROM run_executions WHERE run_id = $1${d.forUpdate}`,
      [runId],
    );
    const issued = await tx.query<{ run_id: string }>(
      `INSERT INTO run_executions (run_id, attempt, token_hash, issued_at)
       SELECT run_id, $2, $3, ${d.timestamp('$4')} FROM runs WHERE run_id = $1 AND status = 'running'
       ON CONFLICT (run_id) DO UPDATE
         SET attempt = EXCLUDED.attempt, token_hash = EXCLUDED.token_hash, issued_at = EXCLUDED.issued_at,
             heartbeat_at = CASE WHEN run_executions.attempt = EXCLUDED.attempt
                                 THEN run_executions.heartbeat_at END,
             last_seq = CASE WHEN run_executions.attempt = EXCLUDED.attempt
                             THEN run_executions.last_seq ELSE 0 END
         WHERE run_executions.attempt <= EXCLUDED.attempt
       RETURNING run_id`,
      [runId, attempt, tokenHash, issuedAt],
    );
    if (issued.rows.length === 0) return false;
    if (toNumber(previous.rows[0]?.attempt ?? 0) < attempt) {
      await tx.query('DELETE FROM run_step_results WHERE run_id = $1', [runId]);
    }
    return true;
  });
}

/** The runner attempt a token hash belongs to, only while its run is running: a token dies with its run. */
export async function findRunnerAttemptByToken(
  db: Db,
  tokenHash: string,
): Promise<RunnerAttemptRef | undefined> {
  const { rows } = await db.query<{ run_id: string; attempt: number }>(
    `SELECT e.run_id, e.attempt FROM run_executions e JOIN runs r ON r.run_id = e.run_id
      WHERE e.token_hash = $1 AND r.status = 'running'`,
    [tokenHash],
  );
  const row = rows[0];
  return row ? { runId: row.run_id, attempt: toNumber(row.attempt) } : undefined;
}

/**
 * The runner attempt of a token hash whose run has ended. It grants nothing: the internal API uses it only to
 * tell a runner that its run is over (cancel, result not recorded) instead of an unexplained 401.
 */
export async function findEndedRunnerAttemptByToken(
  db: Db,
  tokenHash: string,
): Promise<EndedRunnerAttempt | undefined> {
  const { rows } = await db.query<{ run_id: string; attempt: number; status: TerminalRunStatus }>(
    `SELECT e.run_id, e.attempt, r.status FROM run_executions e JOIN runs r ON r.run_id = e.run_id
      WHERE e.token_hash = $1 AND r.status <> 'running'`,
    [tokenHash],
  );
  const row = rows[0];
  return row ? { runId: row.run_id, attempt: toNumber(row.attempt), status: row.status } : undefined;
}

/** Records a sign of life; false when the attempt is not current or the run no longer running (stop). */
export async function recordHeartbeat(db: Db, runId: string, attempt: number, at: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE run_executions SET heartbeat_at = ${db.dialect.greatest('heartbeat_at', db.dialect.timestamp('$3'))}
      WHERE run_id = $1 AND attempt = $2
        AND EXISTS (SELECT 1 FROM runs r WHERE r.run_id = $1 AND r.status = 'running')`,
    [runId, attempt, at],
  );
  return rowCount > 0;
}

/**
 * Accepts events firstSeq … firstSeq+count-1 of an attempt and answers how many of them are new (the
 * batch's last ones): events resent after a lost answer are acknowledged without effect. undefined =
 * refused: the attempt is not current, the run is not running, or the batch would leave a gap. The
 * attempt's row stays locked until the caller's transaction ends, so applying the new events in that
 * transaction happens once even when the same batch arrives twice at once.
 */
export async function acceptEvents(
  db: Db,
  runId: string,
  attempt: number,
  firstSeq: number,
  count: number,
): Promise<number | undefined> {
  const lastSeq = firstSeq + count - 1;
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ last_seq: number | string | bigint }>(
      `SELECT e.last_seq FROM run_executions e JOIN runs r ON r.run_id = e.run_id
        WHERE e.run_id = $1 AND e.attempt = $2 AND r.status = 'running'${tx.dialect.forUpdateOf('e')}`,
      [runId, attempt],
    );
    const row = rows[0];
    if (!row) return undefined;
    const previous = toNumber(row.last_seq);
    if (previous < firstSeq - 1) return undefined;
    if (previous < lastSeq) {
      await tx.query('UPDATE run_executions SET last_seq = $2 WHERE run_id = $1', [runId, lastSeq]);
    }
    return Math.max(0, lastSeq - previous);
  });
}

/** The seq the next step result of a run goes to (0-based, as the terminal write numbers them). */
export async function nextStepSeq(db: Db, runId: string): Promise<number> {
  const { rows } = await db.query<{ next: number | string | bigint }>(
    'SELECT COALESCE(max(seq) + 1, 0) AS next FROM run_step_results WHERE run_id = $1',
    [runId],
  );
  return toNumber(rows[0]?.next ?? 0);
}

export async function getRunnerAttempt(db: Db, runId: string): Promise<RunnerAttempt | undefined> {
  const { rows } = await db.query<{
    attempt: number;
    issued_at: Date | string;
    heartbeat_at: Date | string | null;
    last_seq: number | string | bigint;
  }>('SELECT attempt, issued_at, heartbeat_at, last_seq FROM run_executions WHERE run_id = $1', [runId]);
  const row = rows[0];
  if (!row) return undefined;
  return {
    attempt: toNumber(row.attempt),
    issuedAt: toIso(row.issued_at),
    heartbeatAt: row.heartbeat_at === null ? null : toIso(row.heartbeat_at),
    lastSeq: toNumber(row.last_seq),
  };
}
