/**
 * The small surface both database drivers (node-postgres and PGlite) offer the store.
 * Queries are written once, in PostgreSQL SQL, and run unchanged on either.
 *
 * Parameter conventions that keep both drivers identical:
 * - JSON values are passed as JSON text (`JSON.stringify(v)`) into a `$n::jsonb` placeholder;
 * - arrays are passed as JS arrays into a `$n::text[]` placeholder;
 * - int8 columns come back as JS numbers (both drivers are configured that way).
 */
export interface QueryResult<Row> {
  rows: Row[];
  /** Rows returned, or rows affected by INSERT/UPDATE/DELETE without RETURNING. */
  rowCount: number;
}

export interface Db {
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
}

export type DriverName = 'pg' | 'pglite';

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
  close(): Promise<void>;
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]*$/;

export function assertChannelName(channel: string): void {
  if (!CHANNEL_NAME.test(channel)) throw new Error(`invalid notification channel name: ${channel}`);
}

/** int8 → number when it fits, like PGlite; values beyond 2^53 stay exact as bigint. */
export function parseInt8(text: string): number | bigint {
  const value = BigInt(text);
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}
