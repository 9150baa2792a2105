import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { SQLITE_DIALECT } from '../dialect.ts';
import type { Db, Driver, QueryResult, Unlisten } from '../driver.ts';
import { assertChannelName } from '../driver.ts';

export interface SqliteDriverOptions {
  /** The database file (its WAL lives next to it), or `:memory:` for one that lives as long as the driver. */
  path: string;
  /** How long opening waits for another process's lock on the file before it gives up (default 5 s). */
  busyTimeoutMs?: number;
}

/** SQLITE_BUSY: another connection holds the lock. */
const SQLITE_BUSY = 5;
/** Prepared statements kept for reuse; the store's SQL texts are a few dozen, listRuns's filters vary more. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Opens the embedded store's database with node:sqlite. The file is opened in exclusive locking mode: this
 * process holds the lock until it closes the database, so a second process on the same file (a second
 * kubeglue on the same data dir) fails at open instead of sharing a store whose notifications, recovery and
 * serialisation assume one process. Durability: WAL with synchronous=NORMAL, so a commit is not fsynced on its
 * own; a power loss may lose the last transactions but never corrupts the database.
 */
export function createSqliteDriver(options: SqliteDriverOptions): Driver {
  const db = new DatabaseSync(options.path, {
    enableForeignKeyConstraints: true,
    timeout: options.busyTimeoutMs ?? 5_000,
  });
  try {
    if (options.path !== ':memory:') {
      // Before journal_mode: in exclusive mode the WAL index lives in this process's memory (no -shm file).
      db.exec('PRAGMA locking_mode = EXCLUSIVE');
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      // Statement journals (every insert into an indexed table inside a transaction opens one) stay in
      // memory: in a temp file they were a third of a run write's CPU, in write system calls. The store's
      // queries sort along indexes, so no large temp b-tree is built here.
      db.exec('PRAGMA temp_store = MEMORY');
      // After a checkpoint, a WAL grown by a burst of writes is cut back to this size.
      db.exec('PRAGMA journal_size_limit = 67108864');
      // Takes the exclusive lock now, and keeps it.
      db.exec('BEGIN IMMEDIATE; COMMIT');
    }
  } catch (error) {
    db.close();
    if (isSqliteError(error) && error.errcode === SQLITE_BUSY) {
      throw new Error(
        `the embedded store ${options.path} is in use by another process (another kubeglue on the same data dir?)`,
      );
    }
    throw error;
  }
  return new SqliteDriver(db);
}

function isSqliteError(error: unknown): error is Error & { errcode: number } {
  return error instanceof Error && typeof (error as { errcode?: unknown }).errcode === 'number';
}

/**
 * Constraint violations carry the SQLSTATE Postgres gives them in `code` (as node-postgres errors do), so code
 * outside the store checks one code for both backends (api/api-keys.ts: 23505 = unique violation).
 */
const SQLSTATE_OF_EXTENDED_CODE: Record<number, string> = {
  1299: '23502', // SQLITE_CONSTRAINT_NOTNULL: not_null_violation
  787: '23503', // SQLITE_CONSTRAINT_FOREIGNKEY: foreign_key_violation
  1555: '23505', // SQLITE_CONSTRAINT_PRIMARYKEY: unique_violation
  2067: '23505', // SQLITE_CONSTRAINT_UNIQUE: unique_violation
  275: '23514', // SQLITE_CONSTRAINT_CHECK: check_violation
};

function withSqlstate(error: unknown): unknown {
  if (!isSqliteError(error)) return error;
  const sqlstate = SQLSTATE_OF_EXTENDED_CODE[error.errcode];
  if (sqlstate) Object.assign(error, { code: sqlstate });
  return error;
}

type Decoder = (value: unknown) => unknown;

const parseJson: Decoder = (value) => (typeof value === 'string' ? JSON.parse(value) : value);

/** Columns decoded by their declared type, so rows look as they do from Postgres (dialect.ts). */
const DECODERS: Record<string, Decoder> = {
  JSON_TEXT: parseJson,
  TEXT_ARRAY: parseJson,
  BOOLEAN: (value) => (typeof value === 'number' || typeof value === 'bigint' ? Number(value) !== 0 : value),
};

interface Prepared {
  statement: StatementSync;
  /** Highest `$n` in the SQL: parameters past it are not bound (SQLite refuses extra ones). */
  parameterCount: number;
  returnsRows: boolean;
  decoders: Array<[string, Decoder]>;
}

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') return value;
  if (value instanceof Uint8Array) return value;
  if (value instanceof Date) return value.toISOString();
  // Arrays (text[]) and objects (jsonb) are stored as JSON text.
  return JSON.stringify(value);
}

/**
 * One queue for transactions and for statements outside them. DatabaseSync runs a statement synchronously,
 * but a transaction awaits between its statements: without the queue, another caller's statement would run
 * inside the open transaction (and be committed or rolled back with it).
 */
class Turns {
  #busy = false;
  readonly #waiting: Array<() => void> = [];

  get busy(): boolean {
    return this.#busy;
  }

  acquire(): Promise<void> {
    if (!this.#busy) {
      this.#busy = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#busy = false;
  }
}

type Handler = (payload: string) => void;

class SqliteDriver implements Driver {
  readonly name = 'sqlite';
  readonly dialect = SQLITE_DIALECT;
  readonly #db: DatabaseSync;
  readonly #turns = new Turns();
  readonly #statements = new Map<string, Prepared>();
  readonly #handlers = new Map<string, Set<Handler>>();
  readonly #sessionLocks = new Map<string, number>();
  #closed = false;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  query<Row extends object>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    return this.#standalone(() => this.#run<Row>(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.#standalone(() => this.#db.exec(sql));
  }

  async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    await this.#turns.acquire();
    let open = true;
    const notifications: Array<[string, string]> = [];
    const whileOpen = <R>(work: () => R): Promise<R> => {
      if (!open) return Promise.reject(new Error('the transaction has ended'));
      try {
        return Promise.resolve(work());
      } catch (error) {
        return Promise.reject(error);
      }
    };
    const tx: Db = {
      dialect: SQLITE_DIALECT,
      query: <Row extends object>(sql: string, params?: readonly unknown[]) =>
        whileOpen(() => this.#run<Row>(sql, params)),
      exec: (sql) => whileOpen(() => this.#db.exec(sql)),
      transaction: (inner) => inner(tx),
      notify: (channel, payload) =>
        whileOpen(() => {
          assertChannelName(channel);
          notifications.push([channel, payload]);
        }),
    };
    try {
      this.#assertOpen();
      this.#db.exec('BEGIN IMMEDIATE');
      let result: T;
      try {
        result = await fn(tx);
        this.#db.exec('COMMIT');
      } catch (error) {
        // Some errors (a full disk) end the transaction by themselves.
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
        throw error;
      }
      for (const [channel, payload] of notifications) this.#emit(channel, payload);
      return result;
    } finally {
      open = false;
      this.#turns.release();
    }
  }

  async notify(channel: string, payload: string): Promise<void> {
    assertChannelName(channel);
    this.#emit(channel, payload);
  }

  /** In-process: the embedded store has one process, so its listeners are all here. */
  async listen(channel: string, onNotify: Handler): Promise<Unlisten> {
    assertChannelName(channel);
    this.#assertOpen();
    let handlers = this.#handlers.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
    }
    // The same function may listen twice; each subscription is removed on its own.
    const subscription: Handler = (payload) => onNotify(payload);
    handlers.add(subscription);
    return async () => {
      handlers.delete(subscription);
    };
  }

  /**
   * One process holds the database (the file's exclusive lock), so a session lock is a key in this process:
   * held until released, free otherwise (what sessionLockFree answers).
   */
  async holdSessionLock(_lockSql: string, key: string): Promise<{ release(): Promise<void> }> {
    this.#sessionLocks.set(key, (this.#sessionLocks.get(key) ?? 0) + 1);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        const count = (this.#sessionLocks.get(key) ?? 1) - 1;
        if (count > 0) this.#sessionLocks.set(key, count);
        else this.#sessionLocks.delete(key);
      },
    };
  }

  async sessionLockFree(_tx: Db, _lockSql: string, key: string): Promise<boolean> {
    return !this.#sessionLocks.has(key);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#turns.acquire();
    try {
      if (this.#closed) return;
      this.#closed = true;
      this.#handlers.clear();
      this.#statements.clear();
      this.#db.close();
    } finally {
      this.#turns.release();
    }
  }

  /** Runs at once when no transaction is open (the common case), else after the queued ones. */
  #standalone<R>(work: () => R): Promise<R> {
    if (!this.#turns.busy) {
      try {
        this.#assertOpen();
        return Promise.resolve(work());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#turns.acquire().then(() => {
      try {
        this.#assertOpen();
        return work();
      } finally {
        this.#turns.release();
      }
    });
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('store is closed');
  }

  #run<Row extends object>(sql: string, params: readonly unknown[] | undefined): QueryResult<Row> {
    try {
      return this.#runPrepared<Row>(this.#prepare(sql), params);
    } catch (error) {
      throw withSqlstate(error);
    }
  }

  #runPrepared<Row extends object>(
    prepared: Prepared,
    params: readonly unknown[] | undefined,
  ): QueryResult<Row> {
    const values: SQLInputValue[] = [];
    for (let index = 0; index < prepared.parameterCount; index++) values.push(toSqlite(params?.[index]));
    if (!prepared.returnsRows) {
      const { changes } = prepared.statement.run(...values);
      return { rows: [], rowCount: Number(changes) };
    }
    const rows = prepared.statement.all(...values) as Record<string, unknown>[];
    if (prepared.decoders.length > 0) {
      for (const row of rows) {
        for (const [column, decode] of prepared.decoders) {
          const value = row[column];
          if (value !== null && value !== undefined) row[column] = decode(value);
        }
      }
    }
    return { rows: rows as Row[], rowCount: rows.length };
  }

  #prepare(sql: string): Prepared {
    const cached = this.#statements.get(sql);
    if (cached) {
      // Most recently used last, so the oldest entry is the one dropped.
      this.#statements.delete(sql);
      this.#statements.set(sql, cached);
      return cached;
    }
    let parameterCount = 0;
    // `$n` is a named parameter to SQLite, numbered in order of appearance; `?n` is parameter n, as in Postgres.
    const text = sql.replace(/\$(\d+)/g, (_, digits: string) => {
      parameterCount = Math.max(parameterCount, Number(digits));
      return `?${digits}`;
    });
    const statement = this.#db.prepare(text);
    const columns = statement.columns();
    const decoders: Array<[string, Decoder]> = [];
    for (const column of columns) {
      const decode = column.type ? DECODERS[column.type.toUpperCase()] : undefined;
      if (decode) decoders.push([column.name, decode]);
    }
    const prepared: Prepared = { statement, parameterCount, returnsRows: columns.length > 0, decoders };
    if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
      const oldest = this.#statements.keys().next().value;
      if (oldest !== undefined) this.#statements.delete(oldest);
    }
    this.#statements.set(sql, prepared);
    return prepared;
  }

  #emit(channel: string, payload: string): void {
    // Delivered asynchronously, as a NOTIFY is: a listener never runs inside the writer's call.
    for (const handler of this.#handlers.get(channel) ?? []) queueMicrotask(() => handler(payload));
  }
}
