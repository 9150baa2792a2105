/**
 * What the phases of the run lifecycle share (accept.ts, execute-sync.ts, cancel.ts, chains.ts): the
 * RunService's dependencies, who is asking, and the runs executing in this process.
 */
import { KG_ERR_RUN_NOT_FOUND } from '../contract/api/errors.ts';
import type { ExecutionMode, Run } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { LogFields } from '../contract/log.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { GrantedToken } from '../engine/types.ts';
import type { WorkerPool } from '../engine/worker/pool.ts';
import type { TraceExport } from '../platform/traces.ts';
import type { RateState, Store, StoredRun } from '../store/index.ts';
import type { StateLimits } from '../tools/state.ts';
import type { CallerQuotas } from './capacity.ts';
import type { SyncSlots } from './execute-sync.ts';
import type { Budgets } from './execution/index.ts';
import type { IdentityIssuer } from './identity/issuer.ts';
import type { RunEventHub, RunRef } from './run-events.ts';
import type { UrlForFile } from './run-view.ts';
import type { RunningHere } from './running-here.ts';
import type { RuntimeCredentialVault } from './runtime-credentials.ts';

export interface ToolLookup {
  get(toolId: string): Promise<Tool | undefined>;
}

export interface SystemResolver {
  resolveForRun(systemIds: string[], mode: ExecutionMode): Promise<ResolvedSystem[]>;
}

export interface RunMetrics {
  runStarted(source: string, mode: string): void;
  runFinished(status: string, source: string, durationMs: number): void;
}

export interface RunServiceDeps {
  store: Store;
  tools: ToolLookup;
  systems: SystemResolver;
  /** Executes sync runs; a process that starts only async runs (the operator's chains) has none. */
  pool?: WorkerPool;
  /** Seals the runtime credentials of async runs (stored with the run row). */
  vault: Pick<RuntimeCredentialVault, 'seal'>;
  urlFor: UrlForFile;
  /**
   * Sync runs this process executes at once (KUBEGLUE_MAX_SYNC_RUNS); more are refused at once with 429
   * rather than held, so a burst cannot pile up requests, worker queue entries and results in memory.
   */
  maxSyncRuns: number;
  /** Identifies this process in `runs.executor`, so a restart can tell its dead runs apart. */
  executor: string;
  metrics?: RunMetrics;
  /** After a cancel was stored: reach the process executing the run wherever it is (runs/cancel.ts). */
  onCancelled?: (run: StoredRun) => Promise<void>;
  /** Live progress for `GET /v1/logs/stream`. */
  events?: Pick<RunEventHub, 'emit'>;
  /** Where traced runs' spans go (platform/traces.ts, docs/operations.md); absent: tracing is off. */
  traces?: TraceExport | undefined;
  /**
   * Save-time checks (code compiles, systems exist; KG_ERR_TOOL_INVALID) applied to definitions that run
   * without being saved (`POST /v1/tools/run`, `/v1/tools/step/run`).
   */
  validateTool?: (tool: Tool) => Promise<void>;
  /** The current OAuth access token of a tokenManaged system (systems/oauth/service.ts). */
  accessToken?: (systemId: string, mode: ExecutionMode, rejected?: string) => Promise<GrantedToken>;
  /** Signs the outbound identity tokens of the runs executed here (runs/identity/). */
  identity?: Pick<IdentityIssuer, 'forRun'>;
  /** Systems' rate budgets for a run in a mode (systems/budgets.ts); without it nothing is held back. */
  budgets?: Budgets;
  /** Bounds of persistent tool state (KUBEGLUE_TOOL_STATE_*); the defaults without it. */
  stateLimits?: StateLimits;
  /** The process's log: a shutdown names the sync runs it fails there; each connection test is a line. */
  log?: (line: string, fields?: LogFields) => void;
}

/** What one RunService's phases share: its dependencies, the runs executing here and the sync slots. */
export interface RunContext {
  deps: RunServiceDeps;
  running: RunningHere;
  slots: SyncSlots;
}

/** A started run as the caller is answered: 200 with its outcome, or 202 while it runs. */
export interface StartedRun {
  statusCode: 200 | 202;
  run: Run;
  /** The key's runsPerMinute quota after this run, for the answer's RateLimit-* headers (runs/capacity.ts). */
  rate?: RateState | undefined;
}

export interface Caller {
  id: string;
  /** null: every tool. */
  toolIds: string[] | null;
  /** The systems the caller's tools may use; null: every system. */
  systemIds: string[] | null;
  /** The key's quotas (runs/capacity.ts); absent: none, as for runs a schedule or a chain starts. */
  quotas?: CallerQuotas | undefined;
}

export function canSee(caller: Caller, toolId: string): boolean {
  return caller.toolIds === null || caller.toolIds.includes(toolId);
}

/** The run, if the caller may see it. */
export async function visibleRun(store: Store, runId: string, caller: Caller): Promise<StoredRun> {
  const run = await store.getRun(runId);
  // A key limited to other tools learns nothing about the run, not even that it exists.
  if (!run || !canSee(caller, run.toolId)) throw KG_ERR_RUN_NOT_FOUND(runId);
  return run;
}

export function refOf(run: Pick<StoredRun, 'runId' | 'toolId' | 'traceId'>): RunRef {
  return { runId: run.runId, toolId: run.toolId, traceId: run.traceId ?? run.runId };
}
