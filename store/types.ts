import type { Recording, RecordingSummary } from '../contract/api/recording.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';

export type RunStatus = 'running' | 'success' | 'failed' | 'aborted';
export type TerminalRunStatus = Exclude<RunStatus, 'running'>;
export type ExecutionMode = 'prod' | 'dev';

export interface StoredFileArtifact {
  fileKey: string;
  filename: string;
  contentType: string;
  size: number;
}

/** A `runs` row. Timestamps are ISO 8601 strings (UTC, millisecond precision). */
export interface StoredRun {
  runId: string;
  toolId: string;
  status: RunStatus;
  requestSource: string;
  userId?: string;
  /** Systems the run's tool references; `GET /runs?systemId=` filters on it. */
  systemIds: string[];
  executionMode?: ExecutionMode;
  traceId?: string;
  parentRunId?: string;
  error?: string;
  /** Snapshot of the tool that was executed. */
  tool?: JsonObject;
  toolPayload?: JsonObject;
  options?: JsonObject;
  fileArtifacts?: StoredFileArtifact[];
  /** What the run's recording holds (its exchanges are in run_recordings); absent: the run recorded nothing. */
  recording?: RecordingSummary;
  resultStorageUri?: string;
  /** The process or Pod executing the run; crash recovery fails running runs whose executor is gone. */
  executor?: string;
  /**
   * The tools the API key that started the run (or the chain it belongs to) may use; absent: every tool.
   * A chain from this run is checked against it, and the chained run inherits it.
   */
  allowedToolIds?: string[];
  /**
   * The systems the API key that started the run (or its chain) may use; absent: every system. A chained
   * run inherits it and is refused before its steps run when its tool uses another system.
   */
  allowedSystemIds?: string[];
  /**
   * Which execution of the run this is (1 unless a lost execution of a read-only async run was handed back
   * to run again: runs/interrupted.ts); absent means 1.
   */
  attempt?: number;
  /** The schedule (ToolSchedule name) whose tick started the run. */
  scheduleId?: string;
  /** The run this one resumes (POST /v1/runs/{runId}/resume): its stored results of the first reusedSteps steps are reused. */
  resumedFrom?: string;
  /** How many of the tool's first steps a resumed run reuses from resumedFrom rather than executes (absent: 0). */
  reusedSteps?: number;
  /** What the run read and wrote of its tool's persistent state (tools/state.ts); absent: the tool has none. */
  state?: StoredRunState;
  /** What the run did not do as written without failing (state changes not saved). */
  warnings?: string[];
  metadata: {
    startedAt: string;
    completedAt?: string;
    durationMs?: number;
  };
}

/** A run's record of its tool's persistent state (Run.metadata.state). */
export interface StoredRunState {
  /** The stateFixture the run was started with: it read this instead of the stored state and saved nothing. */
  fixture?: JsonObject;
  versionRead?: number;
  versionWritten?: number;
}

export type InsertRunResult =
  | { status: 'inserted'; run: StoredRun }
  /** The same run id with the same tool and input hash already exists: the request is a retry. */
  | { status: 'existing'; run: StoredRun }
  /** The run id is taken by a run of another tool or with other inputs. */
  | { status: 'conflict' };

export interface StoredStepResult {
  stepId: string;
  success: boolean;
  data?: JsonValue;
  error?: string;
}

export interface RunFileInput {
  fileKey: string;
  filename: string;
  contentType: string;
  content: Uint8Array;
}

export interface StoredRunFile extends StoredFileArtifact {
  content: Uint8Array;
}

export interface FinishRun {
  status: TerminalRunStatus;
  error?: string;
  completedAt: string;
  durationMs: number;
  /** Written to run_step_results (seq = index) and into run_results.step_results. */
  stepResults?: StoredStepResult[];
  /** When given, a run_results row is written (data of the run, not kept in the runs row). */
  result?: { success: boolean; data?: JsonValue; error?: string };
  /** Files produced by the output transform; their metadata goes into runs.file_artifacts. */
  files?: RunFileInput[];
  resultStorageUri?: string;
  /** Completion effects; written in the same transaction, and only when this terminal write wins. */
  outbox?: OutboxInput[];
  /** The run's recording: its summary goes into runs.recording, the whole of it into run_recordings. */
  recording?: Recording;
}

export interface InsertRunOptions {
  /** Hash of tool and inputs: a repeated runId with the same hash is a retry, with another a conflict. */
  inputHash?: string;
  /** Written in the same transaction, and only when the run is inserted (not for existing/conflict). */
  outbox?: OutboxInput[];
  /**
   * The run's runtime credentials, sealed by the caller (ciphertext only): written into run_credentials in
   * the same statement, and only when this call inserted the run.
   */
  sealedCredentials?: Uint8Array;
}

export interface StoredRunResult {
  runId: string;
  success: boolean;
  data: JsonValue | null;
  stepResults: StoredStepResult[];
  toolPayload: JsonObject | null;
  error: string | null;
  storedAt: string;
}

export interface ListRunsFilter {
  toolId?: string;
  status?: RunStatus;
  /** Any of these sources. */
  requestSources?: readonly string[];
  userId?: string;
  /** Runs whose systemIds contain this id. */
  systemId?: string;
  /** Restriction for API keys limited to some tools: only runs of these tools (empty = none). */
  toolIds?: readonly string[];
  /** Runs started at or after this instant (ISO). */
  startedAfter?: string;
  /** Runs started before this instant (ISO). */
  startedBefore?: string;
  /** 1-based. Ignored (no offset) when `after` is given. */
  page: number;
  limit: number;
  /**
   * Keyset paging: only runs after this one in the list order (started_at DESC, run_id DESC), read from the
   * index without skipping rows, however deep.
   */
  after?: { startedAt: string; runId: string };
}

export interface RunPage {
  runs: StoredRun[];
  /** Matching runs, counted up to RUNS_TOTAL_CAP (store/queries/runs.ts). */
  total: number;
  /** false: more than `total` runs match (total is the cap, a lower bound). */
  totalExact: boolean;
  hasMore: boolean;
}

/** An API key's quotas (docs/operations.md#quotas-per-api-key); null: none. */
export interface ApiKeyQuotas {
  runsPerMinute: number | null;
  concurrentRuns: number | null;
}

/** An `api_keys` row that is not revoked. Only the key's hash is stored. */
export interface StoredApiKey {
  id: string;
  name: string;
  keyHash: string;
  /**
   * What the key may do, as stored (api/scopes.ts reads them: an admin key has every scope, also one
   * added after it was created).
   */
  scopes: string[];
  /** null = every tool. */
  toolIds: string[] | null;
  /** The systems the key may use in tools and runs; null = every system. */
  systemIds: string[] | null;
  /** Every scope and no restriction. */
  admin: boolean;
  createdAt: string;
  lastUsedAt: string | null;
  /** Absent: none (a key stored before quotas existed reads as none too). */
  quotas?: ApiKeyQuotas;
}

/** A unit of deferred work (kinds in use: 'start', 'notify', 'chain'). */
export interface OutboxInput {
  kind: string;
  runId?: string;
  payload: JsonObject;
  /** Not delivered before this time (ISO 8601); default: now. */
  notBefore?: string;
}

export interface OutboxRow {
  id: number;
  kind: string;
  runId: string | null;
  payload: JsonObject;
  /** Claims so far, this one included. */
  attempts: number;
  /** Claims in a row that ended without an outcome from the handler (it threw, or the process died), this one included. */
  failures: number;
  createdAt: string;
  lastError: string | null;
}

/** The attempt a runner token belongs to. */
export interface RunnerAttemptRef {
  runId: string;
  attempt: number;
}

/** A runner token's attempt whose run has ended. */
export interface EndedRunnerAttempt extends RunnerAttemptRef {
  status: TerminalRunStatus;
}

/** A `run_executions` row: the current attempt of a run executed by a runner Pod (never its token). */
export interface RunnerAttempt {
  attempt: number;
  issuedAt: string;
  heartbeatAt: string | null;
  /** Highest event sequence number accepted from the current attempt (0: none yet). */
  lastSeq: number;
}
