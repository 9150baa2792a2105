import type { Recording } from '../contract/api/recording.ts';
import type { Db, Driver, DriverName } from './driver.ts';
import { applyMigrations, type MigrationReport } from './migrate.ts';
import { MIGRATIONS } from './migrations.ts';
import {
  countApiKeys,
  findApiKeyByHash,
  findApiKeyById,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
  setApiKeyQuotas,
  touchApiKeys,
} from './queries/api-keys.ts';
import { type DocumentationStore, documentationQueries } from './queries/documentation.ts';
import {
  CANCEL_CHANNEL,
  EXECUTOR_LOCK_SQL,
  failRunsOfDeadExecutors,
  publishCancel,
  publishRunEvent,
  RUN_EVENTS_CHANNEL,
} from './queries/executors.ts';
import {
  bindGatewayTunnelOwnerQueries,
  type GatewayTunnelOwnerQueries,
} from './queries/gateway-tunnel-owners.ts';
import { bindGatewayTunnelQueries, type GatewayTunnelQueries } from './queries/gateway-tunnels.ts';
import { bindIdentityKeyQueries, type IdentityKeyQueries } from './queries/identity-keys.ts';
import { bindOAuthQueries, type OAuthQueries } from './queries/oauth.ts';
import {
  abandonOutbox,
  claimOutbox,
  completeOutbox,
  enqueueOutbox,
  OUTBOX_CHANNEL,
  outboxBacklog,
  pruneOutbox,
  retryOutbox,
} from './queries/outbox.ts';
import {
  compactResourceEvents,
  getResource,
  listResources,
  RESOURCE_CHANNEL,
  type ResourceChange,
  type ResourceEventPage,
  type ResourceKey,
  type ResourceList,
  type ResourceRecord,
  type ResourceWriter,
  resourceChangeOf,
  resourceEventsAfter,
  writeResources,
} from './queries/resources.ts';
import { pruneRunOutputs, pruneRuns } from './queries/retention.ts';
import { deleteRunCredentials, getRunCredentials, pruneRunCredentials } from './queries/run-credentials.ts';
import {
  getRunFile,
  getRunFiles,
  getRunRecording,
  getRunResult,
  getStepResults,
  saveStepResult,
} from './queries/run-results.ts';
import { bindRunSlotQueries, type RunSlotQueries } from './queries/run-slots.ts';
import { bindRunStatsQueries, type RunStatsQueries } from './queries/run-stats.ts';
import { finishRun, insertRun } from './queries/run-writes.ts';
import {
  acceptEvents,
  findEndedRunnerAttemptByToken,
  findRunnerAttemptByToken,
  getRunnerAttempt,
  issueRunToken,
  nextStepSeq,
  recordHeartbeat,
} from './queries/runner-attempts.ts';
import {
  abortRun,
  claimRun,
  failRunningRuns,
  failStartedRuns,
  getRun,
  insertRuns,
  listRuns,
  listStartedRuns,
  retryRun,
} from './queries/runs.ts';
import { bindScheduleTickQueries, type ScheduleTickQueries } from './queries/schedule-ticks.ts';
import { deleteSecret, getSecret, putSecret } from './queries/secrets.ts';
import { bindSystemBudgetQueries, type SystemBudgetQueries } from './queries/system-budgets.ts';
import { bindToolStateQueries, type ToolStateQueries } from './queries/tool-state.ts';
import { createRunWriteBatcher, type RunWriteBatcher } from './run-batcher.ts';
import type {
  ApiKeyQuotas,
  EndedRunnerAttempt,
  FinishRun,
  InsertRunOptions,
  InsertRunResult,
  ListRunsFilter,
  OutboxInput,
  OutboxRow,
  RunnerAttempt,
  RunnerAttemptRef,
  RunPage,
  StoredApiKey,
  StoredFileArtifact,
  StoredRun,
  StoredRunFile,
  StoredRunResult,
  StoredStepResult,
} from './types.ts';

export type StoreConfig =
  | { driver: 'pg'; url: string; poolSize?: number }
  /**
   * The embedded store: path is the database file (see embeddedStorePath), or `:memory:` for one that lives as
   * long as the store is open.
   */
  | { driver: 'sqlite'; path: string };

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
   * with what it changed, and after a lost notification connection is restored, with undefined (anything
   * may have changed). Resolves once listening.
   */
  onChange(listener: (change: ResourceChange | undefined) => void): Promise<() => Promise<void>>;
}

/** The typed queries; the same set is bound to the pool or to one transaction. */
export interface StoreQueries {
  /** Outbox rows are written (same transaction) only when the run is inserted. */
  insertRun(run: StoredRun, opts?: InsertRunOptions): Promise<InsertRunResult>;
  insertRuns(runs: readonly StoredRun[]): Promise<number>;
  /** The first terminal write wins (true); outbox rows are written (same transaction) only then. */
  finishRun(runId: string, finish: FinishRun): Promise<boolean>;
  /** Only a running run: returns it aborted, or undefined when it was not running. */
  abortRun(runId: string, opts: { error: string; completedAt: string }): Promise<StoredRun | undefined>;
  /** Crash recovery: every running run (of that executor, if given) becomes failed; returns their ids. */
  failRunningRuns(opts: { executor?: string; error: string; completedAt: string }): Promise<string[]>;
  /**
   * Startup recovery: running runs started by an executor other than exceptExecutor become failed (runs no
   * executor has started are left alone); returns their ids.
   */
  failStartedRuns(opts: { exceptExecutor?: string; error: string; completedAt: string }): Promise<string[]>;
  /** Running runs started by an executor other than exceptExecutor (startup recovery), oldest first. */
  listStartedRuns(opts: { exceptExecutor?: string }): Promise<StoredRun[]>;
  /**
   * Hands a running run at attempt fromAttempt (held by fromExecutor, when given) back for another attempt:
   * executor cleared, attempt + 1, step results dropped; refused (undefined) once a completion effect of the
   * run is in the outbox.
   */
  retryRun(
    runId: string,
    opts: { fromAttempt: number; fromExecutor?: string },
  ): Promise<StoredRun | undefined>;
  /** Sets the executor of a running, not yet started run; undefined when not running or already claimed. */
  claimRun(runId: string, executor: string): Promise<StoredRun | undefined>;
  getRun(runId: string): Promise<StoredRun | undefined>;
  listRuns(filter: ListRunsFilter): Promise<RunPage>;
  saveStepResult(runId: string, seq: number, result: StoredStepResult): Promise<void>;
  getStepResults(runId: string): Promise<StoredStepResult[]>;
  getRunResult(runId: string): Promise<StoredRunResult | undefined>;
  /** The run's recording (options.record); undefined when it recorded nothing or retention removed it. */
  getRunRecording(runId: string): Promise<Recording | undefined>;
  getRunFile(runId: string, fileKey: string): Promise<StoredRunFile | undefined>;
  /** Metadata of a run's files, by file key. */
  getRunFiles(runId: string): Promise<StoredFileArtifact[]>;

  insertApiKey(key: Omit<StoredApiKey, 'lastUsedAt'>): Promise<void>;
  /** Not revoked. */
  findApiKeyByHash(keyHash: string): Promise<StoredApiKey | undefined>;
  /** Revoked or not (revokedAt); undefined when no key ever had the id. */
  findApiKeyById(id: string): Promise<{ key: StoredApiKey; revokedAt: string | null } | undefined>;
  /** Not revoked, oldest first. */
  listApiKeys(): Promise<StoredApiKey[]>;
  /** False if unknown or already revoked. */
  revokeApiKey(id: string): Promise<boolean>;
  /** Not revoked; admin true/false counts only admin/non-admin keys. */
  countApiKeys(opts?: { admin?: boolean }): Promise<number>;
  /** Sets last_used_at in one statement (never moves it back). */
  touchApiKeys(ids: readonly string[], at: string): Promise<void>;
  /** Sets a key's quotas (null: none); false when the key is unknown or revoked. */
  setApiKeyQuotas(id: string, quotas: ApiKeyQuotas): Promise<boolean>;

  /** Ids in input order; wakes onOutbox listeners at commit. */
  enqueueOutbox(rows: readonly OutboxInput[]): Promise<number[]>;
  /** Due rows (FOR UPDATE SKIP LOCKED), each leased for leaseMs and its attempts counted. */
  claimOutbox(opts: { limit: number; leaseMs: number }): Promise<OutboxRow[]>;
  completeOutbox(id: number): Promise<void>;
  retryOutbox(id: number, opts: { nextAttemptAt: string; error: string; failed?: boolean }): Promise<void>;
  /** Done, with last_error. */
  abandonOutbox(id: number, error: string): Promise<void>;
  /** Rows not done. */
  outboxBacklog(): Promise<number>;
  /** Deletes delivered or abandoned rows finished before `before` (ISO time); returns how many. */
  pruneOutbox(before: string): Promise<number>;

  /**
   * Runner attempts (store/queries/runner-attempts.ts, table run_executions): only the SHA-256 hash of a run's token is stored.
   * Issues the token of an attempt of a running run; false if not running or a later attempt holds one.
   * A new attempt replaces the token, restarts the event sequence and drops older partial step results.
   */
  issueRunToken(runId: string, attempt: number, tokenHash: string, issuedAt?: string): Promise<boolean>;
  /** Only while the run is running. */
  findRunnerAttemptByToken(tokenHash: string): Promise<RunnerAttemptRef | undefined>;
  /** Only once the run has ended; grants nothing, it lets the runner be told its run is over. */
  findEndedRunnerAttemptByToken(tokenHash: string): Promise<EndedRunnerAttempt | undefined>;
  /** False when the attempt is not current or the run is no longer running. */
  recordHeartbeat(runId: string, attempt: number, at: string): Promise<boolean>;
  /**
   * How many of events firstSeq…firstSeq+count-1 are new; undefined = refused (not the current attempt,
   * run not running, or a gap). Locks the execution until the transaction ends: call it in one.
   */
  acceptEvents(runId: string, attempt: number, firstSeq: number, count: number): Promise<number | undefined>;
  /** The seq of the run's next step result (0-based). */
  nextStepSeq(runId: string): Promise<number>;
  getRunnerAttempt(runId: string): Promise<RunnerAttempt | undefined>;

  /**
   * Sealed runtime credentials of an accepted async run (written with the run: InsertRunOptions.sealedCredentials),
   * keyed by the exact run id; ciphertext only.
   */
  getRunCredentials(runId: string): Promise<Uint8Array | undefined>;
  /** False when the run had none. */
  deleteRunCredentials(runId: string): Promise<boolean>;
  /** Removes the credentials of every run that is no longer running; returns how many. */
  pruneRunCredentials(): Promise<number>;

  /**
   * Run retention, one small batch per call: deletes up to limit ended runs that started before `before`
   * (ISO), oldest first, with their results, files and step results; returns how many.
   */
  pruneRuns(opts: { before: string; limit: number }): Promise<number>;
  /**
   * Result retention, one small batch per call: deletes up to limit results stored before `before` (with the
   * runs' step results) and up to limit files created before it; the run records stay. Returns how many.
   */
  pruneRunOutputs(opts: { before: string; limit: number }): Promise<number>;

  /** Ciphertext only; upsert. */
  putSecret(namespace: string, name: string, data: Uint8Array): Promise<void>;
  getSecret(namespace: string, name: string): Promise<Uint8Array | undefined>;
  deleteSecret(namespace: string, name: string): Promise<boolean>;

  /** OAuth token cache, refresh lease and authorization states (store/queries/oauth.ts). */
  oauth: OAuthQueries;
  /** The signing keys of outbound identity tokens (store/queries/identity-keys.ts). */
  identityKeys: IdentityKeyQueries;
  /** Which API replica holds each gateway tunnel (store/queries/gateway-tunnels.ts). */
  gatewayTunnels: GatewayTunnelQueries;
  /** Which API key owns each gateway tunnel id (store/queries/gateway-tunnel-owners.ts). */
  gatewayTunnelOwners: GatewayTunnelOwnerQueries;
  /** Tick claims of schedules and the running runs of a schedule (store/queries/schedule-ticks.ts). */
  scheduleTicks: ScheduleTickQueries;

  resources: ResourceStore;
  /** System documentation and its processing (store/queries/documentation.ts). */
  documentation: DocumentationStore;
  /** Persistent tool state and what runs record of it (store/queries/tool-state.ts). */
  toolState: ToolStateQueries;
  /** Rate budgets of systems, shared by every process on the database (queries/system-budgets.ts). */
  systemBudgets: SystemBudgetQueries;
  /** What the runs of a time window add up to, and the async runs waiting (store/queries/run-stats.ts). */
  runStats: RunStatsQueries;
  /** Runs counted against tools' maxConcurrentRuns and keys' quotas, across processes (store/queries/run-slots.ts). */
  runSlots: RunSlotQueries;
}

export interface Store extends StoreQueries {
  readonly driver: DriverName;
  readonly migrations: MigrationReport;
  /**
   * Group commit of run inserts and terminal writes (the hot path): same results as insertRun/finishRun, each
   * settling after the COMMIT of a transaction shared with other concurrent calls.
   */
  readonly batch: RunWriteBatcher;
  /** Runs fn in one transaction; everything done through tx commits or rolls back together. */
  transaction<T>(fn: (tx: StoreQueries) => Promise<T>): Promise<T>;
  /**
   * Calls listener after outbox rows are committed, from any process on the same database (LISTEN/NOTIFY), and
   * after a lost notification connection is restored. Resolves once listening.
   */
  onOutbox(listener: () => void): Promise<() => Promise<void>>;
  /**
   * Holds this process's executor lock while it lives (Postgres): failRunsOfDeadExecutors in other
   * processes leaves its runs alone until the lock is released or the process is gone.
   */
  holdExecutorLock(executor: string): Promise<{ release(): Promise<void> }>;
  /**
   * Whether the process of `executor` is alive: it holds its executor lock (holdExecutorLock). On the
   * embedded SQLite store, which one process holds, only this process's executors are.
   */
  executorAlive(executor: string): Promise<boolean>;
  /** Running runs of executors (id prefix) that no longer hold their lock become failed; returns their ids. */
  failRunsOfDeadExecutors(opts: { prefix: string; error: string; completedAt: string }): Promise<string[]>;
  /** Tells every process (onCancel) that a run was cancelled. */
  publishCancel(runId: string): Promise<void>;
  /** Calls listener with the run id of every cancel published by any process. Resolves once listening. */
  onCancel(listener: (runId: string) => void): Promise<() => Promise<void>>;
  /** Sends a live run event message (runs/run-events.ts) to every process listening with onRunEvent. */
  publishRunEvent(payload: string): Promise<void>;
  /**
   * Calls listener with every message publishRunEvent sent, from any process (this one included); with ''
   * after a lost notification connection was restored (messages may have been lost). Resolves once listening.
   */
  onRunEvent(listener: (payload: string) => void): Promise<() => Promise<void>>;
  /** Waits for queued batch writes, then closes the database. */
  close(): Promise<void>;
}

export async function openStore(config: StoreConfig, opts: OpenStoreOptions = {}): Promise<Store> {
  // Only the chosen driver is loaded: an embedded process never holds pg, a Postgres one never SQLite.
  const driver =
    config.driver === 'pg'
      ? (await import('./drivers/pg.ts')).createPgDriver({
          url: config.url,
          ...(config.poolSize ? { poolSize: config.poolSize } : {}),
        })
      : (await import('./drivers/sqlite.ts')).createSqliteDriver({ path: config.path });
  try {
    const migrations = await applyMigrations(driver, MIGRATIONS, opts.onProgress);
    const batcher = createRunWriteBatcher(driver);
    return {
      ...bindQueries(driver, driver),
      driver: driver.name,
      migrations,
      batch: { insertRun: batcher.insertRun, finishRun: batcher.finishRun },
      transaction: (fn) => driver.transaction((tx) => fn(bindQueries(tx, driver))),
      onOutbox: (listener) => driver.listen(OUTBOX_CHANNEL, () => listener()),
      holdExecutorLock: (executor) => driver.holdSessionLock(EXECUTOR_LOCK_SQL, executor),
      executorAlive: async (executor) =>
        !(await driver.transaction((tx) => driver.sessionLockFree(tx, EXECUTOR_LOCK_SQL, executor))),
      failRunsOfDeadExecutors: (opts) => failRunsOfDeadExecutors(driver, opts),
      publishCancel: (runId) => publishCancel(driver, runId),
      // An empty payload means notifications may have been lost (a reconnect): nothing to abort by name.
      onCancel: (listener) => driver.listen(CANCEL_CHANNEL, (runId) => runId && listener(runId)),
      publishRunEvent: (payload) => publishRunEvent(driver, payload),
      onRunEvent: (listener) => driver.listen(RUN_EVENTS_CHANNEL, listener),
      close: async () => {
        await batcher.close();
        await driver.close();
      },
    };
  } catch (error) {
    await driver.close().catch(() => {});
    throw error;
  }
}

function bindQueries(db: Db, driver: Driver): StoreQueries {
  return {
    insertRun: (run, opts) => insertRun(db, run, opts),
    insertRuns: (runs) => insertRuns(db, runs),
    finishRun: (runId, finish) => finishRun(db, runId, finish),
    abortRun: (runId, opts) => abortRun(db, runId, opts),
    failRunningRuns: (opts) => failRunningRuns(db, opts),
    failStartedRuns: (opts) => failStartedRuns(db, opts),
    listStartedRuns: (opts) => listStartedRuns(db, opts),
    retryRun: (runId, opts) => retryRun(db, runId, opts),
    claimRun: (runId, executor) => claimRun(db, runId, executor),
    getRun: (runId) => getRun(db, runId),
    listRuns: (filter) => listRuns(db, filter),
    saveStepResult: (runId, seq, result) => saveStepResult(db, runId, seq, result),
    getStepResults: (runId) => getStepResults(db, runId),
    getRunResult: (runId) => getRunResult(db, runId),
    getRunRecording: (runId) => getRunRecording(db, runId),
    getRunFile: (runId, fileKey) => getRunFile(db, runId, fileKey),
    getRunFiles: (runId) => getRunFiles(db, runId),
    insertApiKey: (key) => insertApiKey(db, key),
    findApiKeyByHash: (keyHash) => findApiKeyByHash(db, keyHash),
    findApiKeyById: (id) => findApiKeyById(db, id),
    listApiKeys: () => listApiKeys(db),
    revokeApiKey: (id) => revokeApiKey(db, id),
    countApiKeys: (opts) => countApiKeys(db, opts),
    touchApiKeys: (ids, at) => touchApiKeys(db, ids, at),
    setApiKeyQuotas: (id, quotas) => setApiKeyQuotas(db, id, quotas),
    enqueueOutbox: (rows) => enqueueOutbox(db, rows),
    claimOutbox: (opts) => claimOutbox(db, opts),
    completeOutbox: (id) => completeOutbox(db, id),
    retryOutbox: (id, opts) => retryOutbox(db, id, opts),
    abandonOutbox: (id, error) => abandonOutbox(db, id, error),
    outboxBacklog: () => outboxBacklog(db),
    pruneOutbox: (before) => pruneOutbox(db, before),
    issueRunToken: (runId, attempt, tokenHash, issuedAt) =>
      issueRunToken(db, runId, attempt, tokenHash, issuedAt ?? new Date().toISOString()),
    findRunnerAttemptByToken: (tokenHash) => findRunnerAttemptByToken(db, tokenHash),
    findEndedRunnerAttemptByToken: (tokenHash) => findEndedRunnerAttemptByToken(db, tokenHash),
    recordHeartbeat: (runId, attempt, at) => recordHeartbeat(db, runId, attempt, at),
    acceptEvents: (runId, attempt, firstSeq, count) => acceptEvents(db, runId, attempt, firstSeq, count),
    nextStepSeq: (runId) => nextStepSeq(db, runId),
    getRunnerAttempt: (runId) => getRunnerAttempt(db, runId),
    getRunCredentials: (runId) => getRunCredentials(db, runId),
    deleteRunCredentials: (runId) => deleteRunCredentials(db, runId),
    pruneRunCredentials: () => pruneRunCredentials(db),
    pruneRuns: (opts) => pruneRuns(db, opts),
    pruneRunOutputs: (opts) => pruneRunOutputs(db, opts),
    putSecret: (namespace, name, data) => putSecret(db, namespace, name, data),
    getSecret: (namespace, name) => getSecret(db, namespace, name),
    deleteSecret: (namespace, name) => deleteSecret(db, namespace, name),
    documentation: documentationQueries(db),
    oauth: bindOAuthQueries(db),
    identityKeys: bindIdentityKeyQueries(db),
    gatewayTunnels: bindGatewayTunnelQueries(db),
    gatewayTunnelOwners: bindGatewayTunnelOwnerQueries(db),
    scheduleTicks: bindScheduleTickQueries(db),
    toolState: bindToolStateQueries(db),
    systemBudgets: bindSystemBudgetQueries(db),
    runStats: bindRunStatsQueries(db),
    runSlots: bindRunSlotQueries(db),
    resources: {
      get: (key) => getResource(db, key),
      list: (kind, namespace, labels) => listResources(db, kind, namespace, labels),
      eventsAfter: (kind, namespace, after, limit) => resourceEventsAfter(db, kind, namespace, after, limit),
      write: (fn) => writeResources(db, fn),
      compact: (keepRevisions) => compactResourceEvents(db, keepRevisions),
      onChange: (listener) =>
        driver.listen(RESOURCE_CHANNEL, (payload) => listener(resourceChangeOf(payload))),
    },
  };
}
