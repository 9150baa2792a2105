import type { JsonObject } from '../../contract/json.ts';
import type { Dialect } from '../dialect.ts';
import type { Db } from '../driver.ts';
import type { OutboxInput, OutboxRow } from '../types.ts';
import { toIso, toNumber } from './values.ts';

/**
 * The outbox: work that must happen after a commit (async starts, notifications, chains). Rows are written in
 * the transaction that makes them necessary; a delivery loop claims due rows with FOR UPDATE SKIP LOCKED, so
 * several loops (replicas) share the work without taking a row twice.
 */

/** NOTIFY channel that wakes delivery loops when rows are enqueued (sent at commit). */
export const OUTBOX_CHANNEL = 'kubeglue_outbox';

/**
 * The JSON record an outbox row travels as inside a multi-row statement. `owner` ties the row to the run whose
 * write must win for the row to be written; `ord` keeps the input order (ids are allocated in that order).
 */
export function outboxRecords(rows: readonly OutboxInput[], owner: string | null, firstOrd = 0): object[] {
  return rows.map((row, index) => ({
    owner,
    ord: firstOrd + index,
    kind: row.kind,
    run_id: row.runId ?? null,
    payload: row.payload,
    not_before: row.notBefore ?? null,
  }));
}

/** Column list of dialect.records over outboxRecords. */
export const OUTBOX_RECORD_TYPES =
  'owner text, ord integer, kind text, run_id text, payload jsonb, not_before timestamptz';

/**
 * Inserts the outbox records of `recordsParam` (only those whose owner is in `owners`, a row source with a
 * run_id column, when given), in record order, returning their ids.
 */
export function outboxInsertSql(d: Dialect, recordsParam: string, owners?: string): string {
  const onlyOwned = owners ? `JOIN ${owners} ON owner.run_id = o.owner` : '';
  return `INSERT INTO outbox (kind, run_id, payload, next_attempt_at)
      SELECT o.kind, o.run_id, COALESCE(o.payload, ${d.typed("'{}'", 'jsonb')}), COALESCE(o.not_before, ${d.now})
        FROM ${d.records(recordsParam, 'o', OUTBOX_RECORD_TYPES)}
        ${onlyOwned}
       ORDER BY o.ord
      RETURNING id`;
}

/**
 * Postgres only (dialect.dataModifyingCtes): outboxInsertSql as an `effects` CTE, then a `wake` CTE that sends
 * one NOTIFY (at commit) when any row was written. The statement must join `wake` (LEFT JOIN wake ON true) so
 * that it is evaluated.
 */
export function outboxInsertCtes(d: Dialect, recordsParam: string, ownersCte?: string): string {
  return `effects AS (
      ${outboxInsertSql(d, recordsParam, ownersCte)}
    ), wake AS (
      SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM (SELECT 1 FROM effects LIMIT 1) AS any_effect
    )`;
}

/** Enqueues rows (ids in input order) and wakes the delivery loops once the surrounding transaction commits. */
export async function enqueueOutbox(db: Db, rows: readonly OutboxInput[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const { rows: inserted } = await db.query<{ id: number | string | bigint }>(
    outboxInsertSql(db.dialect, '$1'),
    [JSON.stringify(outboxRecords(rows, null))],
  );
  if (inserted.length > 0) await db.notify(OUTBOX_CHANNEL, '');
  return inserted.map((row) => toNumber(row.id)).sort((a, b) => a - b);
}

interface OutboxDbRow {
  id: number | string | bigint;
  kind: string;
  run_id: string | null;
  payload: JsonObject;
  attempts: number;
  failures: number;
  created_at: Date | string;
  last_error: string | null;
}

/**
 * Claims up to limit due rows: each gets attempts + 1 and is leased for leaseMs (next_attempt_at moves
 * forward), so a claimer that dies leaves the row to be claimed again after the lease. Rows locked by another
 * claimer's open transaction are skipped, never waited for.
 */
export async function claimOutbox(db: Db, opts: { limit: number; leaseMs: number }): Promise<OutboxRow[]> {
  if (!Number.isInteger(opts.limit) || opts.limit < 1) throw new RangeError('limit must be an integer >= 1');
  if (!(opts.leaseMs >= 0)) throw new RangeError('leaseMs must be >= 0');
  const d = db.dialect;
  const { rows } = await db.query<OutboxDbRow>(
    `WITH due AS (
       SELECT id FROM outbox
        WHERE done_at IS NULL AND next_attempt_at <= ${d.now}
        ORDER BY next_attempt_at, id
        LIMIT $1${d.forUpdateSkipLocked}
     )
     UPDATE outbox
        SET attempts = outbox.attempts + 1, failures = outbox.failures + 1,
            next_attempt_at = ${d.plusMs(d.now, '$2')}
       FROM due
      WHERE outbox.id = due.id
      RETURNING outbox.id, outbox.kind, outbox.run_id, outbox.payload, outbox.attempts, outbox.failures,
                outbox.created_at, outbox.last_error`,
    [opts.limit, opts.leaseMs],
  );
  return rows
    .map((row) => ({
      id: toNumber(row.id),
      kind: row.kind,
      runId: row.run_id,
      payload: row.payload,
      attempts: row.attempts,
      failures: Number(row.failures),
      createdAt: toIso(row.created_at),
      lastError: row.last_error,
    }))
    .sort((a, b) => a.id - b.id);
}

export async function completeOutbox(db: Db, id: number): Promise<void> {
  await db.query(`UPDATE outbox SET done_at = ${db.dialect.now} WHERE id = $1 AND done_at IS NULL`, [id]);
}

/**
 * Makes the row due again at nextAttemptAt, remembering why this attempt failed. `failed`: the handler threw
 * (the claim's failure stays counted); otherwise the handler asked for the retry, and the count restarts.
 */
export async function retryOutbox(
  db: Db,
  id: number,
  opts: { nextAttemptAt: string; error: string; failed?: boolean },
): Promise<void> {
  await db.query(
    `UPDATE outbox SET next_attempt_at = ${db.dialect.timestamp('$2')}, last_error = $3,
            failures = CASE WHEN ${db.dialect.typed('$4', 'boolean')} THEN failures ELSE 0 END
      WHERE id = $1 AND done_at IS NULL`,
    [id, opts.nextAttemptAt, opts.error, opts.failed === true],
  );
}

/** Gives up on the row: done, with the reason kept in last_error. */
export async function abandonOutbox(db: Db, id: number, error: string): Promise<void> {
  await db.query(
    `UPDATE outbox SET done_at = ${db.dialect.now}, last_error = $2 WHERE id = $1 AND done_at IS NULL`,
    [id, error],
  );
}

/** Rows not done yet, due or not. */
export async function outboxBacklog(db: Db): Promise<number> {
  const { rows } = await db.query<{ n: number | string | bigint }>(
    'SELECT count(*) AS n FROM outbox WHERE done_at IS NULL',
  );
  return toNumber(rows[0]?.n ?? 0);
}

/** Deletes rows finished (delivered or abandoned) before `before`; returns how many. */
export async function pruneOutbox(db: Db, before: string): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM outbox WHERE done_at IS NOT NULL AND done_at < ${db.dialect.timestamp('$1')}`,
    [before],
  );
  return rowCount;
}
