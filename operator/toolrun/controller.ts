/**
 * The ToolRun controller's wiring: the ToolRun informer, the launcher's own watch (runner Pods, or
 * in-process executions), the work queue and the timers decide() asks for. Each reconcile reads the
 * world (launcher first, then the store, so an execution that ended has its outcome stored), decides
 * (reconcile.ts) and acts (execute.ts).
 */

import type { OperatorSettings } from '../../config/config.ts';
import { DEFAULT_RUN_TIMEOUT_MS } from '../../contract/api/run.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import { Informer } from '../../kube/informer.ts';
import type { ResourceClient } from '../../kube/resources/index.ts';
import type { WorkQueue } from '../../kube/work-queue.ts';
import { KeyedLock } from '../../platform/keyed-lock.ts';
import type { Store } from '../../store/index.ts';
import type { EventRecorder } from '../events.ts';
import type { ControllerHealth } from '../health.ts';
import type { Launcher } from '../launchers/launcher.ts';
import type { OperatorMetrics, ToolRunStates } from '../metrics.ts';
import { reconcileQueue } from '../reconcile-queue.ts';
import {
  type AdmissionEntry,
  type AdmissionVerdict,
  admissionKey,
  admissionQueue,
  admissionState,
  EXACT_POSITIONS,
  isFinished,
  waitsForTool,
} from './admission.ts';
import { execute } from './execute.ts';
import { decide, type ReconcileSettings } from './reconcile.ts';

export type ToolRunControllerSettings = ReconcileSettings &
  Pick<OperatorSettings, 'maxAsyncRuns' | 'maxAsyncRunsPerNamespace' | 'resyncMs'> &
  Partial<Pick<OperatorSettings, 'reconcileWorkers'>>;

export interface ToolRunControllerOptions {
  toolRuns: ResourceClient<ToolRunResource>;
  store: Pick<Store, 'getRun' | 'getStepResults' | 'batch' | 'transaction' | 'retryRun' | 'runSlots'>;
  launcher: Launcher;
  events: EventRecorder;
  settings: ToolRunControllerSettings;
  log?: (line: string) => void;
  /** Counts the ToolRuns that finish while this process watches. */
  metrics?: Pick<OperatorMetrics, 'toolRunFinished'>;
  /** The clock (tests). */
  now?: () => Date;
}

const waitsForToolByName = (toolRun: ToolRunResource | undefined) =>
  toolRun !== undefined && waitsForTool(toolRun);

/** setTimeout's ceiling: longer waits are cut to it (the resync comes sooner anyway). */
const MAX_DELAY_MS = 2 ** 31 - 1;
/** The one key of the admission lock: every waiting run competes for the same slots. */
const ADMISSION = 'admission';

export class ToolRunController {
  readonly #opts: ToolRunControllerOptions;
  readonly #informer: Informer<ToolRunResource>;
  readonly #queue: WorkQueue;
  /** Admission state per ToolRun as last seen, to notice freed slots. */
  readonly #states = new Map<string, AdmissionEntry['state']>();
  /** Order of first sight: admission's tie-break within one creation second. */
  readonly #seq = new Map<string, number>();
  #nextSeq = 0;
  #stopped = false;
  /** Waiting runs are reconciled one at a time (see #reconcile). */
  readonly #admitting = new KeyedLock();

  constructor(opts: ToolRunControllerOptions) {
    this.#opts = opts;
    this.#informer = new Informer(opts.toolRuns, {
      kind: 'ToolRun',
      resyncMs: opts.settings.resyncMs,
      ...(opts.log ? { log: opts.log } : {}),
    });
    this.#queue = reconcileQueue('toolrun', (name) => this.#reconcile(name), opts.log, {
      baseDelayMs: 500,
      maxDelayMs: 60_000,
      workers: opts.settings.reconcileWorkers ?? 1,
    });
  }

  async start(): Promise<void> {
    this.#informer.onEvent((type, object) => this.#onToolRun(type, object));
    // Every change, and every cached ToolRun at each resync (timers are a safety net too).
    this.#informer.on('change', (name) => this.#queue.add(name));
    await this.#opts.launcher.open((name) => this.#queue.add(name));
    await this.#informer.start();
  }

  /**
   * Stops the launcher (the pool's runs still executing are interrupted: handed back or failed, see
   * runs/interrupted.ts), then the loops.
   */
  async stop(): Promise<void> {
    await this.#opts.launcher.close();
    await this.#queue.idle();
    this.#stopped = true;
    await this.#queue.shutdown();
    await this.#informer.stop();
  }

  /** Resolves when no reconcile is queued or running (tests). */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Informers and queue for the operator's metrics. */
  health(): ControllerHealth {
    return { informers: [this.#informer], queues: { toolrun: this.#queue } };
  }

  /** The cached ToolRun (tests). */
  get(name: string): ToolRunResource | undefined {
    return this.#informer.get(name);
  }

  #onToolRun(type: string, toolRun: ToolRunResource): void {
    const name = toolRun.metadata.name;
    if (!this.#seq.has(name)) this.#seq.set(name, this.#nextSeq++);
    const previous = this.#states.get(name);
    const state = type === 'DELETED' ? undefined : admissionState(toolRun);
    if (state) this.#states.set(name, state);
    else {
      this.#states.delete(name);
      this.#seq.delete(name);
    }
    // A slot freed (or a queued run left the queue): the waiting runs move up.
    if (previous && previous !== 'done' && state !== previous && state !== 'active') this.#wakeWaiting();
    // Seen to finish, not found finished (a new leader's first list): each end is counted once.
    if (previous && previous !== 'done' && state === 'done' && isFinished(toolRun)) {
      this.#opts.metrics?.toolRunFinished(toolRun.status?.status ?? '', toolRun.status?.reason);
    }
  }

  /** ToolRuns by admission state, as this controller knows them (the operator's metrics). */
  states(): ToolRunStates {
    const counts: ToolRunStates = { waiting: 0, active: 0, done: 0 };
    for (const state of this.#states.values()) counts[state]++;
    return counts;
  }

  /** Queues the waiting ToolRuns whose verdict or position may have changed. */
  #wakeWaiting(): void {
    const waiting = this.#entries()
      .filter((e) => e.state === 'waiting')
      .sort((a, b) => (a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? -1 : 1) : a.seq - b.seq));
    for (const entry of waiting.slice(0, EXACT_POSITIONS + this.#opts.settings.maxAsyncRuns)) {
      this.#queue.add(entry.name);
    }
  }

  #entries(): AdmissionEntry[] {
    return this.#informer.values().map((toolRun) => ({
      namespace: toolRun.metadata.namespace ?? '',
      name: toolRun.metadata.name,
      createdAt: toolRun.metadata.creationTimestamp ?? '',
      seq: this.#seq.get(toolRun.metadata.name) ?? 0,
      state: admissionState(toolRun),
    }));
  }

  #verdict(toolRun: ToolRunResource): AdmissionVerdict | undefined {
    if (admissionState(toolRun) !== 'waiting') return undefined;
    // Runs waiting for their tool's slot do not hold back the runs of other tools behind them.
    const entries = this.#entries().filter(
      (entry) =>
        entry.name === toolRun.metadata.name ||
        entry.state !== 'waiting' ||
        !waitsForToolByName(this.#informer.get(entry.name)),
    );
    const verdicts = admissionQueue(entries, {
      global: this.#opts.settings.maxAsyncRuns,
      perNamespace: this.#opts.settings.maxAsyncRunsPerNamespace,
    });
    return verdicts.get(
      admissionKey({ namespace: toolRun.metadata.namespace ?? '', name: toolRun.metadata.name }),
    );
  }

  /**
   * A run past the global and namespace limits whose tool has maxConcurrentRuns: one of the tool's slots,
   * from the store (counted with the sync runs of every replica), or its place in the tool's queue.
   */
  async #toolSlot(toolRun: ToolRunResource, now: Date): Promise<AdmissionVerdict> {
    const { tool, runId, options } = toolRun.spec;
    if (tool.maxConcurrentRuns === undefined) return { admit: true };
    const timeoutMs = options?.timeout ?? DEFAULT_RUN_TIMEOUT_MS;
    const claim = await this.#opts.store.runSlots.claim({
      runId,
      // Accepted already: an async run waits in the queue even when its tool refuses new runs (a refusing
      // tool's run took its slot when it was accepted, and holds it here).
      tool: { toolId: tool.id, limit: tool.maxConcurrentRuns, whenAtCapacity: 'queue' },
      expiresAt: new Date(now.getTime() + timeoutMs).toISOString(),
      now,
    });
    const slot = claim.tool;
    if (!slot || slot.state === 'held') return { admit: true };
    return {
      admit: false,
      scope: 'tool',
      toolId: tool.id,
      position: slot.state === 'waiting' ? slot.position : 1,
      inUse: slot.inUse,
      limit: slot.limit,
    };
  }

  async #reconcile(name: string): Promise<void> {
    if (this.#stopped) return;
    const toolRun = this.#informer.get(name);
    if (!toolRun) return;
    // Admission counts the runs admitted so far: two workers deciding at once could both take the
    // last slot, so a waiting run is reconciled under one lock (the others run in parallel).
    if (admissionState(toolRun) === 'waiting') {
      await this.#admitting.run(ADMISSION, () => this.#reconcileNow(name));
      return;
    }
    await this.#reconcileNow(name);
  }

  async #reconcileNow(name: string): Promise<void> {
    if (this.#stopped) return;
    const toolRun = this.#informer.get(name);
    if (!toolRun) return;
    const { store, launcher } = this.#opts;
    const now = this.#opts.now?.() ?? new Date();
    const attempt = toolRun.status?.attempt ?? 1;
    // The execution before the store: an execution seen ended has its outcome stored already.
    const execution = await launcher.observe(toolRun, attempt);
    const run = await store.getRun(toolRun.spec.runId);
    const mirrorSteps =
      run !== undefined && run.status !== 'running' && toolRun.status?.status !== run.status;
    const steps = mirrorSteps
      ? (await store.getStepResults(run.runId)).map((s) => ({
          id: s.stepId,
          success: s.success,
          ...(s.error ? { error: s.error } : {}),
        }))
      : undefined;
    const verdict = run?.status === 'running' ? this.#verdict(toolRun) : undefined;
    const admission = verdict?.admit ? await this.#toolSlot(toolRun, now) : verdict;
    const decision = decide({
      now,
      toolRun,
      run,
      ...(steps ? { steps } : {}),
      execution,
      ...(admission ? { admission } : {}),
      settings: this.#opts.settings,
    });
    const result = await execute(toolRun, run, decision.actions, {
      toolRuns: this.#opts.toolRuns,
      store,
      launcher,
      events: this.#opts.events,
      wrote: (type, updated) => this.#informer.observe(type, updated),
      ...(this.#opts.now ? { now: this.#opts.now } : {}),
    });
    if (result.gone) return;
    if (result.storeChanged) this.#queue.add(name);
    // Nothing was launched (the run ended meanwhile, or another executor holds it): look again shortly.
    if (result.interrupted) this.#queue.addAfter(name, 1_000);
    if (decision.requeueAfterMs !== undefined) {
      this.#queue.addAfter(name, Math.min(MAX_DELAY_MS, decision.requeueAfterMs));
    }
  }
}
