/**
 * The embedded launcher: admitted ToolRuns execute in this process's worker pool. A transport over
 * runs/execution/, which builds the order, takes the events and finishes the run; what it decides itself
 * is whether it executes a run at all (claim, shutdown) and what a shutdown's interruption becomes.
 */

import { defaultSettings } from '../../config/config.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import type { ResolvedSystem, RunOrder } from '../../contract/wire/run-order.ts';
import type { EngineResult, IdentityTokenSource } from '../../engine/types.ts';
import type { WorkerPool } from '../../engine/worker/pool.ts';
import type { TraceExport } from '../../platform/traces.ts';
import {
  type AccessTokens,
  type Budgets,
  buildOrder,
  executeInPool,
  type FinishDeps,
  type FinishMetrics,
  failedResult,
  finishRun,
  type OrderSources,
  RunReport,
} from '../../runs/execution/index.ts';
import {
  afterInterruption,
  interruptedSteps,
  SHUTDOWN_MESSAGE,
  ShutdownInterrupt,
  stoppedByShutdown,
} from '../../runs/interrupted.ts';
import type { RunEventHub } from '../../runs/run-events.ts';
import type { Store, StoredRun } from '../../store/index.ts';
import type { StateLimits } from '../../tools/state.ts';
import type { Execution, Launcher, LaunchResult } from './launcher.ts';

/** What the pool launcher needs besides the pool: the run's inputs and credentials, resolved at launch. */
export interface LaunchContext {
  store: Store;
  pool: WorkerPool;
  executor: string;
  resolveSystems(systemIds: string[], mode: 'dev' | 'prod'): Promise<ResolvedSystem[]>;
  /** Runtime credentials of the run (and their removal once it ran). */
  takeCredentials(runId: string): Promise<RunOrder['runtimeCredentials']>;
  dropCredentials(runId: string): Promise<void>;
  /** Registers the execution for cancellation; returns the unregister function. */
  track(runId: string, controller: AbortController): () => void;
  /** Counts the runs that ended (api/metrics.ts). */
  metrics?: FinishMetrics;
  /** Live progress of the runs for `GET /v1/logs/stream`. */
  events?: Pick<RunEventHub, 'emit'>;
  /** Where traced runs' spans go (platform/traces.ts, docs/operations.md); absent: tracing is off. */
  traces?: TraceExport | undefined;
  /** The current OAuth access token of a tokenManaged system. */
  accessToken?: AccessTokens;
  /** Where a run's outbound identity tokens come from (runs/identity/). */
  identityToken?: (run: StoredRun) => IdentityTokenSource;
  /** Systems' rate budgets (systems/budgets.ts); without it nothing is held back. */
  budgets?: Budgets;
  /** Executions a read-only run gets at most when a shutdown interrupts it (KUBEGLUE_MAX_RUN_ATTEMPTS). */
  maxRunAttempts?: number;
  /** Bounds of persistent tool state (KUBEGLUE_TOOL_STATE_*); the defaults without it. */
  stateLimits?: StateLimits;
  log?(line: string): void;
}

/** How often a run another live process executes is looked at again: how soon its process's death is noticed. */
const ELSEWHERE_RECHECK_MS = 5_000;

interface PoolExecution {
  controller: AbortController;
  startedAt: string;
  done: Promise<void>;
}

/**
 * Executes admitted ToolRuns in the worker pool and records their outcome in the store: the embedded
 * counterpart of the runner Pod. Only one executor can claim a run.
 */
export class PoolLauncher implements Launcher {
  readonly kind = 'pool';
  readonly #ctx: LaunchContext;
  /** Where the parts of a run's order come from here (the tool: its ToolRun's snapshot). */
  readonly #sources: Omit<OrderSources, 'tool'>;
  readonly #finish: FinishDeps;
  readonly #executions = new Map<string, PoolExecution>();
  /** Runs another live process executes, each looked at again later (#executingElsewhere). */
  readonly #rechecks = new Map<string, NodeJS.Timeout>();
  #changed: (toolRunName: string) => void = () => {};
  /** False once shutting down: nothing new starts here (the run stays queued for the next process). */
  #accepting = true;

  constructor(ctx: LaunchContext) {
    this.#ctx = ctx;
    this.#sources = {
      systems: (run) => ctx.resolveSystems(run.systemIds, run.executionMode ?? 'prod'),
      runtimeCredentials: (run) => ctx.takeCredentials(run.runId),
      store: ctx.store,
      timeoutFrom: 'order',
    };
    this.#finish = {
      store: ctx.store,
      stateLimits: ctx.stateLimits,
      metrics: ctx.metrics,
      dropCredentials: (runId) => ctx.dropCredentials(runId),
      log: (line) => ctx.log?.(line),
    };
  }

  async open(changed: (toolRunName: string) => void): Promise<void> {
    this.#changed = changed;
  }

  /**
   * Shutdown, first part: launches nothing new and gives the runs executing here up to graceMs to finish;
   * those still executing then are interrupted (see close()).
   */
  async drain(graceMs: number): Promise<void> {
    this.#accepting = false;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    try {
      await Promise.race([this.#settled(), graceOver]);
    } finally {
      clearTimeout(timer);
    }
    await this.close();
  }

  /**
   * Interrupts the runs executing here (a shutdown, not a cancel) and waits until each has recorded what
   * becomes of it: a read-only run is handed back to run again, any other fails saying the server shut
   * down (runs/interrupted.ts).
   */
  async close(): Promise<void> {
    this.#accepting = false;
    for (const recheck of this.#rechecks.values()) clearTimeout(recheck);
    this.#rechecks.clear();
    const reason = new ShutdownInterrupt();
    for (const execution of this.#executions.values()) execution.controller.abort(reason);
    await this.#settled();
  }

  /** Resolves once no execution is left (including any that ends while it waits). */
  async #settled(): Promise<void> {
    while (this.#executions.size > 0) {
      await Promise.allSettled([...this.#executions.values()].map((e) => e.done));
    }
  }

  async launch(toolRun: ToolRunResource): Promise<LaunchResult> {
    const name = toolRun.metadata.name;
    if (this.#executions.has(name)) return { launched: true };
    if (!this.#accepting) return { launched: false };
    const run = await this.#ctx.store.claimRun(toolRun.spec.runId, this.#ctx.executor);
    if (!run) return { launched: false };
    const controller = new AbortController();
    const execution: PoolExecution = {
      controller,
      startedAt: new Date().toISOString(),
      done: Promise.resolve(),
    };
    this.#executions.set(name, execution);
    let handedOver: () => void = () => {};
    const inPool = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    execution.done = this.#execute(toolRun, run, controller, handedOver).finally(() => {
      handedOver();
      // The outcome is in the store before the execution disappears (observe, then read the store).
      this.#executions.delete(name);
      this.#changed(name);
    });
    // Launched once the order is on its way to a worker: the reconcile's own writes (the ToolRun's status)
    // then go on while the run executes, instead of the run waiting for them.
    await inPool;
    return { launched: true };
  }

  async observe(toolRun: ToolRunResource): Promise<Execution> {
    const since =
      this.#executions.get(toolRun.metadata.name)?.startedAt ?? (await this.#executingElsewhere(toolRun));
    return since
      ? { launcher: 'pool', phase: 'Running', since, cooperativeCancel: false }
      : { launcher: 'pool', phase: 'None', cooperativeCancel: false };
  }

  /**
   * When another embedded process on the same Postgres started the run, if that process is alive (it
   * claimed the run and holds its executor lock): the run is its own. Nothing tells this process when that
   * one is gone, so it looks again after ELSEWHERE_RECHECK_MS (a run whose process died is then lost).
   */
  async #executingElsewhere(toolRun: ToolRunResource): Promise<string | undefined> {
    // The SQLite file is held by this process alone (exclusive locking): no other can execute the run, so
    // the reconcile of every async run is spared the read.
    if (this.#ctx.store.driver !== 'pg') return undefined;
    const run = await this.#ctx.store.getRun(toolRun.spec.runId);
    const executor = run?.status === 'running' ? run.executor : undefined;
    if (!run || !executor || executor === this.#ctx.executor) return undefined;
    if (!(await this.#ctx.store.executorAlive(executor))) return undefined;
    const name = toolRun.metadata.name;
    if (!this.#rechecks.has(name)) {
      const recheck = setTimeout(() => {
        this.#rechecks.delete(name);
        this.#changed(name);
      }, ELSEWHERE_RECHECK_MS);
      recheck.unref();
      this.#rechecks.set(name, recheck);
    }
    return run.metadata.startedAt;
  }

  async stop(toolRun: ToolRunResource): Promise<void> {
    this.#executions.get(toolRun.metadata.name)?.controller.abort();
  }

  async cleanup(): Promise<void> {
    // Nothing outlives an in-process execution.
  }

  /** Executes the run and records its outcome; `handedOver` is called once the order has gone to the pool. */
  async #execute(
    toolRun: ToolRunResource,
    run: StoredRun,
    controller: AbortController,
    handedOver: () => void,
  ): Promise<void> {
    const untrack = this.#ctx.track(run.runId, controller);
    const report = new RunReport(run, { events: this.#ctx.events, traces: this.#ctx.traces });
    let result: EngineResult;
    try {
      const order = await buildOrder(
        run,
        { ...this.#sources, tool: toolRun.spec.tool, traced: report.traced },
        Date.now(),
      );
      const executing = executeInPool(this.#ctx.pool, order, report, {
        signal: controller.signal,
        mode: run.executionMode ?? 'prod',
        accessToken: this.#ctx.accessToken,
        identityToken: this.#ctx.identityToken?.(run),
        budgets: this.#ctx.budgets,
        // Nothing batches with a launch, and the step should not wait for the reconcile that launched it.
        immediate: true,
      });
      handedOver();
      result = await executing;
    } catch (error) {
      handedOver();
      // No order (e.g. a system deleted after the run was accepted): the run fails, the process carries on.
      result = failedResult((error as Error).message);
    } finally {
      untrack();
    }
    // Stopped by this process's shutdown, not by a cancel (whose abort is stored already).
    if (result.status === 'aborted' && stoppedByShutdown(controller.signal)) {
      const failed = await this.#interrupted(run, result);
      if (!failed) return;
      result = failed;
    }
    await finishRun(run, result, report, this.#finish);
  }

  /**
   * A run the shutdown interrupted: handed back to the store to run again (a read-only run within its
   * attempts; its runtime credentials stay), else the failed result to record.
   */
  async #interrupted(run: StoredRun, result: EngineResult): Promise<EngineResult | undefined> {
    const attempt = run.attempt ?? 1;
    const verdict = afterInterruption({
      cause: SHUTDOWN_MESSAGE,
      tool: run.tool,
      async: true,
      attempt,
      maxAttempts: this.#ctx.maxRunAttempts ?? defaultSettings('embedded').maxRunAttempts,
    });
    if (verdict.retry) {
      const handed = await this.#ctx.store.retryRun(run.runId, {
        fromAttempt: attempt,
        fromExecutor: this.#ctx.executor,
      });
      if (handed) {
        this.#ctx.log?.(`shutdown: run ${run.runId} handed back to run again (attempt ${verdict.attempt})`);
        return undefined;
      }
    }
    const error = verdict.retry ? `${SHUTDOWN_MESSAGE} (it was not retried)` : verdict.error;
    this.#ctx.log?.(`shutdown: run ${run.runId} failed: ${error}`);
    return {
      ...result,
      status: 'failed',
      data: null,
      error,
      stepResults: interruptedSteps(result.stepResults),
    };
  }
}

// --- PodLauncher ---
