import { PGlite, type Results, type Transaction } from '@electric-sql/pglite';
import type { Db, Driver, QueryResult } from '../driver.ts';
import { assertChannelName } from '../driver.ts';

export interface PgliteDriverOptions {
  /** A directory path, or `memory://` for a database that lives only as long as the process. */
  dataDir: string;
}

function toResult<Row extends object>(result: Results<Row>): QueryResult<Row> {
  return { rows: result.rows, rowCount: Math.max(result.rows.length, result.affectedRows ?? 0) };
}

function transactionDb(tx: Transaction): Db {
  const db: Db = {
    query: async <Row extends object>(sql: string, params?: readonly unknown[]) =>
      toResult(await tx.query<Row>(sql, params ? [...params] : undefined)),
    exec: async (sql) => {
      await tx.exec(sql);
    },
    transaction: (fn) => fn(db),
  };
  return db;
}

/**
 * PGlite is one Postgres backend in this process: statements are serialised, and a transaction holds the
 * only connection, so code inside transaction() must use the tx it is given, never the driver.
 */
export async function createPgliteDriver(options: PgliteDriverOptions): Promise<Driver> {
  const db = await PGlite.create(options.dataDir);
  return {
    name: 'pglite',
    query: async <Row extends object>(sql: string, params?: readonly unknown[]) =>
      toResult(await db.query<Row>(sql, params ? [...params] : undefined)),
    exec: async (sql) => {
      await db.exec(sql);
    },
    transaction: (fn) => db.transaction((tx) => fn(transactionDb(tx))),
    listen: async (channel, onNotify) => {
      assertChannelName(channel);
      const unlisten = await db.listen(channel, onNotify);
      return () => unlisten();
    },
    // One process, one session: nobody else could see the lock, so there is nothing to hold.
    holdSessionLock: async () => ({ release: async () => {} }),
    close: () => db.close(),
  };
}
