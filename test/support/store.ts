import { describe, inject } from 'vitest';
import {
  type DriverName,
  openStore,
  type Store,
  type StoreConfig,
  type StoredRun,
  type TerminalRunStatus,
} from '../../store/index.ts';
import { standIn, useStarted } from './fixture.ts';
import { createTestDatabase } from './postgres.ts';

/** Every store test runs on both backends: the embedded SQLite store and Postgres. */
export const DRIVERS: DriverName[] = ['sqlite', 'pg'];

export interface TestStore {
  store: Store;
  /** How it was opened: for pg, a second store on the same database (another process's view). */
  config: StoreConfig;
  close(): Promise<void>;
}

/** A fresh store on the driver: SQLite in memory, or a new database on the test run's Postgres. */
export async function openTestStore(driver: DriverName): Promise<TestStore> {
  if (driver === 'sqlite') {
    const config: StoreConfig = { driver: 'sqlite', path: ':memory:' };
    const store = await openStore(config);
    return { store, config, close: () => store.close() };
  }
  const database = await createTestDatabase(inject('databaseUrl'));
  const config: StoreConfig = { driver: 'pg', url: database.url };
  const store = await openStore(config);
  return {
    store,
    config,
    close: async () => {
      await store.close();
      await database.drop();
    },
  };
}

/**
 * A fresh store on the driver for the tests of the enclosing block: opened before them, closed after them
 * (see useStarted). `config()` is how it was opened.
 */
export function useTestStore(driver: DriverName): { store: Store; config(): StoreConfig } {
  const opened = useStarted(
    () => openTestStore(driver),
    (test) => test.close(),
  );
  return { store: standIn(() => opened.store), config: () => opened.config };
}

/**
 * `describe` once per driver (titled "<title> on sqlite" and "<title> on pg"), the suite given a fresh store
 * of that driver (see useTestStore), the driver's name, and how the store was opened.
 */
export function describeStore(
  title: string,
  suite: (store: Store, driver: DriverName, config: () => StoreConfig) => void,
): void {
  describe.each(DRIVERS)(`${title} on %s`, (driver) => {
    const { store, config } = useTestStore(driver);
    suite(store, driver, config);
  });
}

/** The database URL of a store opened on Postgres, for a plain client reading its plans or rows. */
export function postgresUrl(config: StoreConfig): string {
  if (config.driver !== 'pg') throw new Error(`a Postgres store was expected, not ${config.driver}`);
  return config.url;
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

/** A run of toolId that started at startedAt (ISO) and ended `status` durationMs later, for seeding. */
export function endedRun(
  runId: string,
  toolId: string,
  status: TerminalRunStatus,
  startedAt: string,
  durationMs: number,
): StoredRun {
  const completedAt = new Date(Date.parse(startedAt) + durationMs).toISOString();
  return { ...runningRun(runId, { toolId }), status, metadata: { startedAt, completedAt, durationMs } };
}
