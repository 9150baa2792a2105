import { inject } from 'vitest';
import { type DriverName, openStore, type Store, type StoredRun } from '../../store/index.ts';
import { createTestDatabase } from './postgres.ts';

/** Every store test runs on both backends: the embedded SQLite store and Postgres. */
export const DRIVERS: DriverName[] = ['sqlite', 'pg'];

/** A fresh store on the driver: SQLite in memory, or a new database on the test run's Postgres. */
export async function openTestStore(driver: DriverName): Promise<{ store: Store; close(): Promise<void> }> {
  if (driver === 'sqlite') {
    const store = await openStore({ driver: 'sqlite', path: ':memory:' });
    return { store, close: () => store.close() };
  }
  const database = await createTestDatabase(inject('databaseUrl'));
  const store = await openStore({ driver: 'pg', url: database.url });
  return {
    store,
    close: async () => {
      await store.close();
      await database.drop();
    },
  };
}

/** A run row in `running` state, for store tests; fields can be overridden. */
export function runningRun(runId: string, overrides: Partial<StoredRun> = {}): StoredRun {
  return {
    runId,
    toolId: 'tool-a',
    status: 'running',
    requestSource: 'api',
    systemIds: [],
    metadata: { startedAt: '2026-03-01T10:00:00.000Z' },
    ...overrides,
  };
}
