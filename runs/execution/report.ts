/**
 * What a run reports while it executes, consumed here and nowhere else: the engine's step events become
 * step timings, live events for `GET /v1/logs/stream` (runs/run-events.ts), from a runner Pod stored
 * step results, and for a traced run its spans (trace.ts: a span event carries the engine's own times,
 * whichever transport brings it). Two transports feed it. In process (the sync path, the pool launcher) each event comes
 * with the worker's clock, so a step's start and duration are the engine's. A runner Pod's events come in
 * numbered batches (contract/wire/runner.ts) after the fact, to any replica: each number is applied once
 * (step results stored in the batch's transaction, live events numbered by the runner), and no duration
 * is measured from their arrival.
 */
import type { StepResult } from '../../contract/api/run.ts';
import type { EventBatch } from '../../contract/wire/runner.ts';
import type { EngineEvent } from '../../engine/types.ts';
import type { TraceExport } from '../../platform/traces.ts';
import type { Store, StoredRun } from '../../store/index.ts';
import type { RunEventHub, RunNews, RunRef } from '../run-events.ts';
import { StepTimings } from './step-timings.ts';
import { RunTrace, type TracedRun } from './trace.ts';

/** Where a run's reports go besides the store. */
export interface ReportSinks {
  /** Live progress for `GET /v1/logs/stream` (never data: see runs/run-events.ts). */
  events?: Pick<RunEventHub, 'emit'> | undefined;
  /** Where traced runs' spans go (trace.ts); absent: tracing is off, and orders ask for no spans. */
  traces?: TraceExport | undefined;
}

/** The run's end as it is told to the streams. */
export type RunEnd = Omit<Extract<RunNews, { type: 'run_finished' }>, 'type'>;

/** The report of one run: its live events and the timings of its steps. */
export class RunReport {
  readonly ref: RunRef;
  readonly #events: Pick<RunEventHub, 'emit'> | undefined;
  readonly #timings = new StepTimings();
  /** The run's trace; absent when this process exports none. */
  readonly #trace: RunTrace | undefined;

  constructor(run: TracedRun, sinks: ReportSinks) {
    this.ref = { runId: run.runId, toolId: run.toolId, traceId: run.traceId ?? run.runId };
    this.#events = sinks.events;
    this.#trace = sinks.traces ? new RunTrace(run, sinks.traces) : undefined;
  }

  /** Whether the run's order asks the engine for spans (order.ts): this process exports them. */
  get traced(): boolean {
    return this.#trace !== undefined;
  }

  /** The run's order went out (to a runner Pod: the API that accepted the run may be another replica). */
  started(): void {
    this.#events?.emit(this.ref, { type: 'run_started' });
  }

  /**
   * An engine event of an execution in this process, at `at` (epoch ms, the worker's clock): the step's
   * timing is measured from it, and it streams with that time. A function bound to its report, so the
   * worker pool can take it as its event callback.
   */
  readonly event = (event: EngineEvent, at: number): void => {
    if (event.type === 'span') {
      this.#trace?.engineSpan(event.span);
      return;
    }
    this.#timings.observe(event, at);
    this.#events?.emit(this.ref, event, { at });
  };

  /**
   * Events of a runner's batch that the store took, numbered by the runner from `firstSeq`: the same event
   * reported twice (or to two replicas) is one event. They arrive after the fact: untimed.
   */
  numbered(firstSeq: number, events: readonly EngineEvent[]): void {
    const hub = this.#events;
    events.forEach((event, i) => {
      if (event.type === 'span') this.#trace?.engineSpan(event.span);
      else hub?.emit(this.ref, event, { seq: firstSeq + i, timed: false });
    });
  }

  /** The results with the timing this report measured for each step (none for a runner's events). */
  timed(results: readonly StepResult[]): StepResult[] {
    return this.#timings.apply(results);
  }

  /** The run has ended (finish.ts says so once its terminal write is decided). */
  ended(end: RunEnd): void {
    this.#events?.emit(this.ref, { type: 'run_finished', ...end });
    this.#trace?.runEnded(end.status);
  }
}

/**
 * The step results of an execution whose terminal write lost to one that stored none (a cancel, startup
 * recovery): kept as a runner's reports keep them, so the run shows the steps it finished and can be resumed
 * where it stopped (runs/resume.ts). Never over results stored already (a winner's, a runner's reports).
 */
export async function keepLostSteps(
  store: Pick<Store, 'transaction'>,
  runId: string,
  results: readonly StepResult[],
): Promise<void> {
  if (results.length === 0) return;
  await store.transaction(async (tx) => {
    if ((await tx.getRunResult(runId)) || (await tx.getStepResults(runId)).length > 0) return;
    for (const [seq, result] of results.entries()) await tx.saveStepResult(runId, seq, result);
  });
}

/** Runs whose ids, tool and trace a replica knows (live events need them; one store read per run). */
const KNOWN_RUNS = 10_000;

/** What became of a runner's batch. */
export type BatchVerdict =
  /** Applied: `fresh` of its events were new (0: a resend of numbers applied already). */
  | { applied: true; fresh: number }
  /** The run has ended, or another attempt executes it: the runner must stop. */
  | { applied: false; stop: true }
  /** Its first number does not follow the last one the store holds (`lastSeq`): the runner lost events. */
  | { applied: false; stop: false; lastSeq: number };

/**
 * The reports of the runner Pods that report to this replica (its internal API). Accepting a batch's
 * numbers and storing its step results share one transaction: a batch is recorded with its effects or
 * not at all. A step result gets the seq the terminal write will give the same result, so the terminal
 * write overwrites it rather than duplicating it.
 */
export class RunnerReports {
  readonly #store: Pick<Store, 'transaction' | 'getRun' | 'getRunnerAttempt'>;
  readonly #sinks: ReportSinks;
  readonly #known = new Map<string, RunReport>();
  readonly #max: number;

  constructor(
    deps: ReportSinks & { store: Pick<Store, 'transaction' | 'getRun' | 'getRunnerAttempt'> },
    max = KNOWN_RUNS,
  ) {
    this.#store = deps.store;
    this.#sinks = { events: deps.events, traces: deps.traces };
    this.#max = max;
  }

  /** The report of a run whose row this replica read (kept for its next batches). */
  of(run: StoredRun): RunReport {
    const report = this.#known.get(run.runId) ?? new RunReport(run, this.#sinks);
    this.#known.delete(run.runId);
    this.#known.set(run.runId, report);
    if (this.#known.size > this.#max) this.#known.delete(this.#known.keys().next().value as string);
    return report;
  }

  /** The run has ended here: its report is not needed again. */
  forget(runId: string): void {
    this.#known.delete(runId);
  }

  /** A batch from the runner of `attempt` (the attempt its token was issued for). */
  async batch(
    runId: string,
    attempt: number,
    batch: Pick<EventBatch, 'firstSeq' | 'events'>,
  ): Promise<BatchVerdict> {
    const count = batch.events.length;
    const fresh = await this.#store.transaction(async (tx) => {
      const accepted = await tx.acceptEvents(runId, attempt, batch.firstSeq, count);
      if (accepted === undefined) return undefined;
      const finished = batch.events
        .slice(count - accepted)
        .flatMap((e) => (e.type === 'step_finished' ? [e] : []));
      if (finished.length > 0) {
        let seq = await tx.nextStepSeq(runId);
        for (const event of finished) await tx.saveStepResult(runId, seq++, event.result);
      }
      return accepted;
    });
    if (fresh === undefined) {
      const [run, current] = await Promise.all([
        this.#store.getRun(runId),
        this.#store.getRunnerAttempt(runId),
      ]);
      if (run?.status !== 'running' || current?.attempt !== attempt) return { applied: false, stop: true };
      return { applied: false, stop: false, lastSeq: current.lastSeq };
    }
    if ((this.#sinks.events || this.#sinks.traces) && fresh > 0) {
      const report = await this.#reportOf(runId).catch(() => undefined);
      const first = count - fresh;
      report?.numbered(batch.firstSeq + first, batch.events.slice(first));
    }
    return { applied: true, fresh };
  }

  async #reportOf(runId: string): Promise<RunReport | undefined> {
    const known = this.#known.get(runId);
    if (known) return known;
    const run = await this.#store.getRun(runId);
    return run ? this.of(run) : undefined;
  }
}
