import type { Db, Driver, DriverName } from './driver.ts';
import { createPgDriver } from './drivers/pg.ts';
import { createPgliteDriver } from './drivers/pglite.ts';
import { applyMigrations, type MigrationReport } from './migrate.ts';
import { MIGRATIONS } from './migrations.ts';
import {
  compactResourceEvents,
  getResource,
  listResources,
  RESOURCE_CHANNEL,
  type ResourceEventPage,
  type ResourceKey,
  type ResourceList,
  type ResourceRecord,
  type ResourceWriter,
  resourceEventsAfter,
  writeResources,
} from './queries/resources.ts';
import {
  finishRun,
  getRunFile,
  getRunResult,
  getStepResults,
  saveStepResult,
} from './queries/run-results.ts';
import { getRun, insertRun, insertRuns, listRuns } from './queries/runs.ts';
import type {
  FinishRun,
  InsertRunResult,
  ListRunsFilter,
  RunPage,
  StoredRun,
  StoredRunFile,
  StoredRunResult,
  StoredStepResult,
} from './types.ts';

export type StoreConfig =
  | { driver: 'pg'; url: string; poolSize?: number }
  /** dataDir: a directory, or `memory://`. The default (`./.kubeglue`) is the caller's decision. */
  | { driver: 'pglite'; dataDir: string };

export interface OpenStoreOptions {
  /** Called with one line per migration applied (the server prints them). */
  onProgress?: (message: string) => void;
}

/** Storage for the embedded resource server (operator/resources/embedded.ts). */
export interface ResourceStore {
  get(key: ResourceKey): Promise<ResourceRecord | undefined>;
  list(kind: string, namespace: string, labels?: Record<string, string>): Promise<ResourceList>;
  eventsAfter(kind: string, namespace: string, after: number, limit: number): Promise<ResourceEventPage>;
  /** A serialised write transaction; see writeResources. */
  write<T>(fn: (writer: ResourceWriter) => Promise<T>): Promise<T>;
  /** Drops feed events older than the newest keepRevisions; returns the compacted revision. */
  compact(keepRevisions: number): Promise<number>;
  /**
   * Calls listener after every committed resource write, from any process on the same database (LISTEN/NOTIFY),
   * and after a lost notification connection is restored. Resolves once listening.
   */
  onChange(listener: () => void): Promise<() => Promise<void>>;
}

/** The typed queries; the same set is bound to the pool or to one transaction. */
export interface StoreQueries {
  insertRun(run: StoredRun, opts?: { inputHash?: string }): Promise<InsertRunResult>;
  insertRuns(runs: readonly StoredRun[]): Promise<number>;
  finishRun(runId: string, finish: FinishRun): Promise<boolean>;
  getRun(runId: string): Promise<StoredRun | undefined>;
  listRuns(filter: ListRunsFilter): Promise<RunPage>;
  saveStepResult(runId: string, seq: number, result: StoredStepResult): Promise<void>;
  getStepResults(runId: string): Promise<StoredStepResult[]>;
  getRunResult(runId: string): Promise<StoredRunResult | undefined>;
  getRunFile(runId: string, fileKey: string): Promise<StoredRunFile | undefined>;
  resources: ResourceStore;
}

export interface Store extends StoreQueries {
  readonly driver: DriverName;
  readonly migrations: MigrationReport;
  /** Runs fn in one transaction; everything done through tx commits or rolls back together. */
  transaction<T>(fn: (tx: StoreQueries) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openStore(config: StoreConfig, opts: OpenStoreOptions = {}): Promise<Store> {
  const driver =
    config.driver === 'pg'
      ? createPgDriver({ url: config.url, ...(config.poolSize ? { poolSize: config.poolSize } : {}) })
      : await createPgliteDriver({ dataDir: config.dataDir });
  try {
    const migrations = await applyMigrations(driver, MIGRATIONS, opts.onProgress);
    return {
      ...bindQueries(driver, driver),
      driver: driver.name,
      migrations,
      transaction: (fn) => driver.transaction((tx) => fn(bindQueries(tx, driver))),
      close: () => driver.close(),
    };
  } catch (error) {
    await driver.close().catch(() => {});
    throw error;
  }
}

function bindQueries(db: Db, driver: Driver): StoreQueries {
  return {
    insertRun: (run, opts) => insertRun(db, run, opts?.inputHash),
    insertRuns: (runs) => insertRuns(db, runs),
    finishRun: (runId, finish) => finishRun(db, runId, finish),
    getRun: (runId) => getRun(db, runId),
    listRuns: (filter) => listRuns(db, filter),
    saveStepResult: (runId, seq, result) => saveStepResult(db, runId, seq, result),
    getStepResults: (runId) => getStepResults(db, runId),
    getRunResult: (runId) => getRunResult(db, runId),
    getRunFile: (runId, fileKey) => getRunFile(db, runId, fileKey),
    resources: {
      get: (key) => getResource(db, key),
      list: (kind, namespace, labels) => listResources(db, kind, namespace, labels),
      eventsAfter: (kind, namespace, after, limit) => resourceEventsAfter(db, kind, namespace, after, limit),
      write: (fn) => writeResources(db, fn),
      compact: (keepRevisions) => compactResourceEvents(db, keepRevisions),
      onChange: (listener) => driver.listen(RESOURCE_CHANNEL, () => listener()),
    },
  };
}
