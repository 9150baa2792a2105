/**
 * Sync execution: the slots that bound the sync runs of this process, and one sync run executed in the
 * worker pool, from the accepted run to its stored outcome and the Run the caller gets.
 */

import { KG_ERR_RUN_LIMIT } from '../contract/api/errors.ts';
import { recordingSummary } from '../contract/api/recording.ts';
import type { RuntimeCredentials, RunUntil, StepResult } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { EngineResult } from '../engine/types.ts';
import type { StoredRun } from '../store/index.ts';
import type { RunContext, StartedRun } from './context.ts';
import {
  buildOrder,
  executeInPool,
  finishRun,
  finishUnrecorded,
  type RecordedFinish,
  RunReport,
  storedOutcome,
} from './execution/index.ts';
import { interruptedSteps, SHUTDOWN_MESSAGE, stoppedByShutdown, syncRunError } from './interrupted.ts';
import { runView, withResult } from './run-view.ts';

/** Sync runs are bounded per process (KUBEGLUE_MAX_SYNC_RUNS); more are refused at once. */
export class SyncSlots {
  readonly #max: number;
  /** Sync runs accepted by this process and not answered yet. */
  #taken = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Starts a run; a sync one only while a slot is free, holding it until the run is answered. */
  async admit<T = StartedRun>(async: boolean, start: () => Promise<T>): Promise<T> {
    if (async) return start();
    if (this.#taken >= this.#max) throw KG_ERR_RUN_LIMIT(this.#max);
    this.#taken++;
    try {
      return await start();
    } finally {
      this.#taken--;
    }
  }
}

/** Step results without data: stepId, success, error, notes, loop, pagination, and their timing (if any). */
export function stepResultsWithoutData(results: readonly StepResult[]): StepResult[] {
  return results.map(({ data: _data, ...rest }) => rest);
}

/** A sync run's result once a shutdown stopped it: failed, with the steps that finished. */
function shutDownSyncResult(result: EngineResult): EngineResult {
  return {
    ...result,
    status: 'failed',
    data: null,
    error: syncRunError(SHUTDOWN_MESSAGE),
    stepResults: interruptedSteps(result.stepResults),
  };
}

export interface SyncOptions {
  record: boolean;
  /**
   * Writes the start record (a run with a new id, stored while it executes): called once the order is
   * queued for its worker, awaited before the terminal write.
   */
  startRecord?: (() => Promise<void>) | undefined;
  withData: boolean;
  signal?: AbortSignal | undefined;
  /** A try: the step after which the run stops (RunOrder.untilStep); its answer carries `until`. */
  untilStep?: string | undefined;
}

/**
 * Executes an accepted sync run in the worker pool and stores its outcome (when recorded): the sync
 * transport over runs/execution/, which builds its order, takes its events and finishes it.
 */
export async function executeSync(
  ctx: RunContext,
  run: StoredRun,
  tool: Tool,
  systems: ResolvedSystem[],
  credentials: RuntimeCredentials | undefined,
  opts: SyncOptions,
): Promise<StartedRun> {
  const { deps } = ctx;
  const pool = deps.pool;
  if (!pool) throw new Error('this process executes no sync runs (no worker pool)');
  const controller = new AbortController();
  const abort = () => controller.abort();
  let startWrite: Promise<void> | undefined;
  const writeStartRecord = () => {
    if (startWrite !== undefined || !opts.startRecord) return;
    startWrite = opts.startRecord();
    // A run whose start record could not be stored stops: its outcome could not be stored either.
    startWrite.catch(abort);
  };
  // Only an unrecorded run stops with its client: a recorded one must reach its stored outcome.
  if (!opts.record) {
    if (opts.signal?.aborted) controller.abort();
    opts.signal?.addEventListener('abort', abort, { once: true });
  }
  const untrack = ctx.running.track(run.runId, controller);
  const report = new RunReport(run, { events: deps.events, traces: deps.traces });
  let result: EngineResult;
  try {
    // The definition was checked and its systems resolved when the run was accepted, a moment ago.
    const order = await buildOrder(
      run,
      {
        tool,
        systems: async () => systems,
        runtimeCredentials: async () => credentials,
        store: deps.store,
        timeoutFrom: 'order',
        untilStep: opts.untilStep,
        traced: report.traced,
      },
      Date.now(),
    );
    const execution = executeInPool(pool, order, report, {
      signal: controller.signal,
      mode: run.executionMode ?? 'prod',
      accessToken: deps.accessToken,
      identityToken: deps.identity?.forRun(run),
      budgets: deps.budgets,
    });
    // After the order, which is queued for the worker now: both wait for the end of this turn of the event
    // loop, and the order crosses first instead of waiting for the batch holding this write to commit (a
    // lone run's step would wait for a commit it does not need). Before the terminal write either way.
    writeStartRecord();
    result = await execution;
  } finally {
    // Stored even when no order could be built, as every accepted run is.
    writeStartRecord();
    untrack();
    opts.signal?.removeEventListener('abort', abort);
  }
  // Stopped because this process shuts down, not by a cancel: the caller is answered now, so the run is
  // not executed again (runs/interrupted.ts); it fails saying why.
  if (result.status === 'aborted' && stoppedByShutdown(controller.signal)) {
    result = shutDownSyncResult(result);
    deps.log?.(`shutdown: run ${run.runId} failed: ${result.error}`);
  }
  // Throws (the request fails) when the start record could not be stored.
  await startWrite;
  const finishDeps = { store: deps.store, stateLimits: deps.stateLimits, metrics: deps.metrics };
  const recorded: RecordedFinish = opts.record
    ? await finishRun(run, result, report, finishDeps)
    : finishUnrecorded(run, result, report, finishDeps);
  const { won, finish } = recorded;
  if (!won) {
    // Cancelled (or failed by recovery) while it ran: the stored outcome stands.
    const stored = await storedOutcome(run.runId, report, deps.store);
    return { statusCode: 200, run: runView(stored ?? run, { urlFor: deps.urlFor }) };
  }
  const finished: StoredRun = {
    ...run,
    status: finish.status,
    ...(finish.error !== undefined ? { error: finish.error } : {}),
    ...(recorded.state ? { state: recorded.state } : {}),
    ...(recorded.warnings.length ? { warnings: recorded.warnings } : {}),
    metadata: { ...run.metadata, completedAt: finish.completedAt, durationMs: finish.durationMs },
    ...(result.files.length
      ? {
          fileArtifacts: result.files.map((f) => ({
            fileKey: f.fileKey,
            filename: f.filename,
            contentType: f.contentType,
            size: f.size,
          })),
        }
      : {}),
    ...(opts.record && result.recording ? { recording: recordingSummary(result.recording) } : {}),
  };
  // Files of an unrecorded run are not kept: no link could serve them.
  const view = runView(finished, opts.record ? { urlFor: deps.urlFor } : {});
  // The stored step results keep their timing (GET …/results, the dashboard's timeline); the answer's
  // carry it only without data, as before.
  const steps = opts.withData ? result.stepResults : stepResultsWithoutData(report.timed(result.stepResults));
  const answered = withResult(view, result.data, steps);
  return {
    statusCode: 200,
    run: result.until ? { ...answered, until: untilView(result.until, opts) } : answered,
  };
}

/** A try's `until`: the keys of the next step's sourceData, and the sourceData itself with step data. */
function untilView(until: NonNullable<EngineResult['until']>, opts: SyncOptions): RunUntil {
  return {
    stepId: until.stepId,
    ...(until.nextStepId !== undefined ? { nextStepId: until.nextStepId } : {}),
    sourceDataKeys: Object.keys(until.sourceData),
    ...(opts.withData ? { sourceData: until.sourceData } : {}),
  };
}
