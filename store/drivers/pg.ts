import pg from 'pg';
import { PG_DIALECT } from '../dialect.ts';
import type { Db, Driver, QueryResult, Unlisten } from '../driver.ts';
import { assertChannelName, parseInt8 } from '../driver.ts';

const INT8_OID = 20;

const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

export interface PgDriverOptions {
  url: string;
  /** Maximum pooled connections (default 10). */
  poolSize?: number;
}

type PgQueryable = Pick<pg.PoolClient, 'query'>;

async function runQuery<Row extends object>(
  target: PgQueryable,
  sql: string,
  params: readonly unknown[] | undefined,
): Promise<QueryResult<Row>> {
  const result = await target.query(sql, params ? [...params] : undefined);
  return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
}

/** pg_notify is transactional: sent on a transaction's connection, it goes out at COMMIT. */
async function notify(target: PgQueryable, channel: string, payload: string): Promise<void> {
  assertChannelName(channel);
  await target.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

function transactionDb(client: pg.PoolClient): Db {
  const db: Db = {
    dialect: PG_DIALECT,
    query: (sql, params) => runQuery(client, sql, params),
    exec: async (sql) => {
      await client.query(sql);
    },
    transaction: (fn) => fn(db),
    notify: (channel, payload) => notify(client, channel, payload),
  };
  return db;
}

export function createPgDriver(options: PgDriverOptions): Driver {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10, types });
  // An idle client's connection error must not crash the process; the pool drops that client.
  pool.on('error', () => {});
  const listener = new PgListener(options.url);
  return {
    name: 'pg',
    dialect: PG_DIALECT,
    query: (sql, params) => runQuery(pool, sql, params),
    exec: async (sql) => {
      await pool.query(sql);
    },
    transaction: async (fn) => {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(transactionDb(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError;
        });
        throw error;
      } finally {
        client.release(broken);
      }
    },
    notify: (channel, payload) => notify(pool, channel, payload),
    listen: (channel, onNotify) => listener.add(channel, onNotify),
    holdSessionLock: (lockSql, key) => holdSessionLock(options.url, lockSql, key),
    sessionLockFree: async (tx, lockSql, key) => {
      // A transaction-level try-lock conflicts with the owner's session lock and ends with the commit.
      const { rows } = await tx.query<{ free: boolean }>(
        `SELECT pg_try_advisory_xact_lock(${lockSql}) AS free`,
        [key],
      );
      return rows[0]?.free === true;
    },
    close: async () => {
      await listener.close();
      await pool.end();
    },
  };
}

type Handler = (payload: string) => void;

/**
 * One dedicated connection for LISTEN (a pooled one would drop the subscription when released).
 * After a lost connection it reconnects with backoff and tells every handler to re-read (payload '').
 */
class PgListener {
  readonly #url: string;
  readonly #handlers = new Map<string, Set<Handler>>();
  #client: pg.Client | undefined;
  #connecting: Promise<pg.Client> | undefined;
  #closed = false;
  #retryDelayMs = 100;

  constructor(url: string) {
    this.#url = url;
  }

  async add(channel: string, handler: Handler): Promise<Unlisten> {
    assertChannelName(channel);
    if (this.#closed) throw new Error('store is closed');
    let handlers = this.#handlers.get(channel);
    const firstForChannel = !handlers;
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
    }
    handlers.add(handler);
    const client = await this.#connected();
    // LISTEN is idempotent, so a connection that already listened while connecting does no harm.
    if (firstForChannel) await client.query(`LISTEN ${channel}`);
    return async () => {
      handlers.delete(handler);
      if (handlers.size > 0 || this.#handlers.get(channel) !== handlers) return;
      this.#handlers.delete(channel);
      await this.#client?.query(`UNLISTEN ${channel}`).catch(() => {});
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#handlers.clear();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #connected(): Promise<pg.Client> {
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.#url, types });
    client.on('notification', (message) => {
      for (const handler of this.#handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    await client.connect();
    for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${channel}`);
    this.#client = client;
    this.#retryDelayMs = 100;
    return client;
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    if (this.#closed) return;
    const reconnect = () => {
      if (this.#closed || this.#handlers.size === 0) return;
      this.#connected().then(
        () => {
          for (const handlers of this.#handlers.values()) for (const handler of handlers) handler('');
        },
        () => {
          this.#retryDelayMs = Math.min(this.#retryDelayMs * 2, 5_000);
          setTimeout(reconnect, this.#retryDelayMs).unref();
        },
      );
    };
    setTimeout(reconnect, this.#retryDelayMs).unref();
  }
}

/** A connection of its own holding one advisory lock; reconnects (and locks again) when it drops. */
async function holdSessionLock(
  url: string,
  lockSql: string,
  key: string,
): Promise<{ release(): Promise<void> }> {
  let client: pg.Client | undefined;
  let released = false;
  let retryDelayMs = 100;
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, types });
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    await next.connect();
    await next.query(`SELECT pg_advisory_lock(${lockSql})`, [key]);
    if (released) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
    retryDelayMs = 100;
  };
  const lost = (dropped: pg.Client) => {
    if (client !== dropped) return;
    client = undefined;
    dropped.end().catch(() => {});
    const retry = () => {
      if (released) return;
      connect().catch(() => {
        retryDelayMs = Math.min(retryDelayMs * 2, 5_000);
        setTimeout(retry, retryDelayMs).unref();
      });
    };
    setTimeout(retry, retryDelayMs).unref();
  };
  await connect();
  return {
    release: async () => {
      released = true;
      const held = client;
      client = undefined;
      await held?.end().catch(() => {});
    },
  };
}
