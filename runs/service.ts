/**
 * runs/: the run lifecycle — accepting a run (idempotency, admission, input validation), sync execution,
 * cancel, chains, completion effects, views, live events, the runtime-credential vault, recovery; and
 * execution/, the one execution layer (a run's order, report and finish) under every transport.
 *
 * May import: contract, config, engine, kube, store, platform, tools, systems, runs/execution.
 *
 * This file is the RunService, the one door the /v1 run endpoints, webhooks and chains go through. It
 * holds what the phases share (context.ts) and hands each call to its phase: requests.ts and accept.ts
 * (the three kinds of request, the checks, the stored run, idempotency), resume.ts (a failed run resumed
 * at its failed step), execute-sync.ts (the sync slots and the sync transport over execution/), cancel.ts,
 * chains.ts, scheduled.ts, connection-test.ts (a system's connection test, an unrecorded one-step run).
 */
import type { ReplayAnswer } from '../contract/api/replay.ts';
import type { Run } from '../contract/api/run.ts';
import type { ConnectionTestResult } from '../contract/api/system.ts';
import type { ToolTestAnswer } from '../contract/api/tool-test-result.ts';
import type { JsonObject } from '../contract/json.ts';
import type { StoredRun } from '../store/index.ts';
import { cancelRun } from './cancel.ts';
import { recordRefusedChain, startChained } from './chains.ts';
import { type ConnectionTestInput, testConnection } from './connection-test.ts';
import {
  type Caller,
  canSee,
  type RunContext,
  type RunServiceDeps,
  type StartedRun,
  visibleRun,
} from './context.ts';
import { SyncSlots } from './execute-sync.ts';
import { type ReplayRun, replayRun } from './replay.ts';
import {
  runStep,
  type StartDraftRun,
  type StartRun,
  type StartStepRun,
  type StepRunOutcome,
  startDraftRun,
  startRun,
} from './requests.ts';
import { type ResumeRun, resumeRun } from './resume.ts';
import { RunningHere } from './running-here.ts';
import { recordRefusedScheduled, type ScheduledRun, startScheduled } from './scheduled.ts';
import { type TestTool, testTool } from './test-tool.ts';

export type { ConnectionTestInput } from './connection-test.ts';
export type { Caller, RunServiceDeps, StartedRun, ToolLookup } from './context.ts';
export type { ReplayRun } from './replay.ts';
export type { StartDraftRun, StartRun, StartStepRun, StepRunOutcome } from './requests.ts';
export type { ResumeRun } from './resume.ts';
export type { RuntimeCredentialVault } from './runtime-credentials.ts';
export type { ScheduledRun } from './scheduled.ts';

/** Starts, cancels and reads runs. */
export class RunService {
  readonly #ctx: RunContext;

  constructor(deps: RunServiceDeps) {
    this.#ctx = { deps, running: new RunningHere(), slots: new SyncSlots(deps.maxSyncRuns) };
  }

  canSee(caller: Caller, toolId: string): boolean {
    return canSee(caller, toolId);
  }

  start(input: StartRun): Promise<StartedRun> {
    return startRun(this.#ctx, input);
  }

  startDraft(input: StartDraftRun): Promise<StartedRun> {
    return startDraftRun(this.#ctx, input);
  }

  /** A failed run resumed at its failed step with the tool's current definition (resume.ts). */
  resume(input: ResumeRun): Promise<StartedRun> {
    return resumeRun(this.#ctx, input);
  }

  /** A finished run's tool executed against its recording only, beside the original (replay.ts); not stored. */
  replay(input: ReplayRun): Promise<ReplayAnswer> {
    return replayRun(this.#ctx, input);
  }

  /** A saved tool's tests, each a replay of its recorded exchanges (test-tool.ts); not stored. */
  test(input: TestTool): Promise<ToolTestAnswer> {
    return testTool(this.#ctx, input);
  }

  runStep(input: StartStepRun): Promise<StepRunOutcome> {
    return runStep(this.#ctx, input);
  }

  /** One harmless read against a system variant, run as an unrecorded one-step run (connection-test.ts). */
  testConnection(input: ConnectionTestInput): Promise<ConnectionTestResult> {
    return testConnection(this.#ctx, input);
  }

  startChained(input: {
    runId: string;
    toolId: string;
    inputs: JsonObject;
    parent: StoredRun;
  }): Promise<StartedRun> {
    return startChained(this.#ctx, input);
  }

  recordRefusedChain(input: {
    runId: string;
    toolId: string;
    parent: StoredRun;
    reason: string;
  }): Promise<void> {
    return recordRefusedChain(this.#ctx.deps.store, input);
  }

  /** The run of a schedule's tick (operator/schedule/), always asynchronous. */
  startScheduled(input: ScheduledRun): Promise<StartedRun> {
    return startScheduled(this.#ctx, input);
  }

  recordRefusedScheduled(input: ScheduledRun & { reason: string }): Promise<void> {
    const { options, ...rest } = input;
    return recordRefusedScheduled(this.#ctx.deps.store, {
      ...rest,
      ...(options.mode ? { mode: options.mode } : {}),
    });
  }

  get(runId: string, caller: Caller): Promise<StoredRun> {
    return visibleRun(this.#ctx.deps.store, runId, caller);
  }

  cancel(runId: string, caller: Caller): Promise<Run> {
    return cancelRun(this.#ctx, runId, caller);
  }

  /** Registers an execution in this process so cancel can reach it (used by the async launcher). */
  track(runId: string, controller: AbortController): () => void {
    return this.#ctx.running.track(runId, controller);
  }

  /** Aborts the execution of runId in this process, if it runs here; whether it did. */
  abortLocal(runId: string): boolean {
    return this.#ctx.running.abort(runId);
  }

  /** Shutdown after the grace period: every run still executing here is stopped (running-here.ts). */
  interruptAll(): void {
    this.#ctx.running.interruptAll();
  }
}
