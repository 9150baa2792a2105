import type { Dialect } from './dialect.ts';

/**
 * The small surface both database drivers (node-postgres and node:sqlite) offer the store. Queries are
 * written once, with `$n` placeholders and the fragments of `db.dialect` where the two SQL dialects differ.
 *
 * Conventions that keep both drivers identical:
 * - JSON values are passed as JSON text (`JSON.stringify(v)`) into a `dialect.typed($n, 'jsonb')` placeholder;
 * - arrays are passed as JS arrays into a `dialect.textArray($n)` placeholder;
 * - rows come back alike: int8 as JS numbers, jsonb and text[] decoded, booleans as booleans, bytea as bytes,
 *   timestamps as Date (pg) or ISO text (SQLite), which store/queries/values.ts toIso reads either way.
 */
export interface QueryResult<Row> {
  rows: Row[];
  /** Rows returned, or rows affected by INSERT/UPDATE/DELETE without RETURNING. */
  rowCount: number;
}

export interface Db {
  readonly dialect: Dialect;
  query<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<Row>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Runs fn in a transaction; commits when it resolves, rolls back when it throws.
   * Called on a transaction's Db it joins that transaction instead of nesting.
   */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /**
   * Sends `payload` to the listeners of `channel` (Driver.listen) in every process on the database. Called
   * on a transaction's Db it is sent at COMMIT, and never when the transaction rolls back.
   */
  notify(channel: string, payload: string): Promise<void>;
}

export type DriverName = 'pg' | 'sqlite';

export type Unlisten = () => Promise<void>;

export interface Driver extends Db {
  readonly name: DriverName;
  /**
   * Subscribes to NOTIFY on channel. Resolves once the subscription is active, so a notification sent after
   * that is never missed. onNotify('') means "notifications may have been lost" (a reconnect): re-read state.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<Unlisten>;
  /**
   * Holds a session-level advisory lock on `lockSql` (an expression of $1 = key) for as long as this
   * process lives, on a connection of its own: other sessions see it taken until release() or the
   * process dies. A lost connection takes the lock again when it reconnects.
   */
  holdSessionLock(lockSql: string, key: string): Promise<{ release(): Promise<void> }>;
  /**
   * Whether no session holds the lock holdSessionLock(lockSql, key) takes. On Postgres it takes the lock for
   * the rest of `tx` (a transaction of this driver), so the answer stays true until it commits.
   */
  sessionLockFree(tx: Db, lockSql: string, key: string): Promise<boolean>;
  close(): Promise<void>;
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]*$/;

export function assertChannelName(channel: string): void {
  if (!CHANNEL_NAME.test(channel)) throw new Error(`invalid notification channel name: ${channel}`);
}

/** int8 → number when it fits; values beyond 2^53 stay exact as bigint. */
export function parseInt8(text: string): number | bigint {
  const value = BigInt(text);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}
