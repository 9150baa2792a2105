/**
 * Sync execution: the slots that bound the sync runs of this process, and one sync run executed in the
 * worker pool, from the accepted run to its stored outcome and the Run the caller gets.
 */
import { KG_ERR_RUN_LIMIT } from '../contract/api/errors.ts';
import type { RunOptions, RuntimeCredentials, StepResult } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { EngineEvent, EngineResult } from '../engine/types.ts';
import type { StoredRun } from '../store/index.ts';
import { defaultStateLimits, stateForRun } from '../tools/state.ts';
import { finishFromResult, type RecordedFinish, recordFinish } from './completion.ts';
import { type RunContext, refOf, type StartedRun } from './context.ts';
import { interruptedSteps, SHUTDOWN_MESSAGE, stoppedByShutdown, syncRunError } from './interrupted.ts';
import { runView, withResult } from './run-view.ts';
import { StepTimings } from './step-timings.ts';

/** Sync runs are bounded per process (KUBEGLUE_MAX_SYNC_RUNS); more are refused at once. */
export class SyncSlots {
  readonly #max: number;
  /** Sync runs accepted by this process and not answered yet. */
  #taken = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Starts a run; a sync one only while a slot is free, holding it until the run is answered. */
  async admit(async: boolean, start: () => Promise<StartedRun>): Promise<StartedRun> {
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

/** Step results without data: stepId, success, error, notes, loop, pagination, and the timing measured here (if any). */
export function stepResultsWithoutData(results: readonly StepResult[], timings?: StepTimings): StepResult[] {
  const withoutData = results.map(({ data: _data, ...rest }) => rest);
  return timings ? timings.apply(withoutData) : withoutData;
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
  /** The start record, still being written: awaited before the terminal write. */
  startWrite?: Promise<void> | undefined;
  withData: boolean;
  signal?: AbortSignal | undefined;
}

/** Executes an accepted sync run in the worker pool and stores its outcome (when recorded). */
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
  // A run whose start record could not be stored stops: its outcome could not be stored either.
  opts.startWrite?.catch(abort);
  // Only an unrecorded run stops with its client: a recorded one must reach its stored outcome.
  if (!opts.record) {
    if (opts.signal?.aborted) controller.abort();
    opts.signal?.addEventListener('abort', abort, { once: true });
  }
  const untrack = ctx.running.track(run.runId, controller);
  const ref = refOf(run);
  const events = deps.events;
  const timings = new StepTimings();
  const onEvent = (event: EngineEvent, at: number) => {
    timings.observe(event, at);
    events?.emit(ref, event, { at });
  };
  let result: EngineResult;
  try {
    result = await pool.run(
      {
        runId: run.runId,
        keyId: run.userId,
        tool,
        inputs: run.toolPayload ?? {},
        systems,
        runtimeCredentials: credentials,
        timeoutMs: (run.options as RunOptions | undefined)?.timeout,
        traceId: run.traceId ?? run.runId,
        ...(await stateForRun(deps.store, run, tool)),
      },
      {
        signal: controller.signal,
        onEvent,
        progressOnly: true,
        ...(deps.accessToken ? { accessToken: tokenSource(ctx, run) } : {}),
      },
    );
  } finally {
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
  await opts.startWrite;
  // The stored step results keep their timing (GET …/results, the dashboard's timeline); the answer's
  // carry it only without data, as before.
  const toStore = { ...result, stepResults: timings.apply(result.stepResults) };
  const recorded: RecordedFinish = opts.record
    ? await recordFinish(deps.store, run, toStore, deps.stateLimits ?? defaultStateLimits())
    : unrecorded(run, result);
  const { won, finish } = recorded;
  if (!won) {
    // Cancelled (or failed by recovery) while it ran: the stored outcome stands.
    const stored = await deps.store.getRun(run.runId);
    if (stored && stored.status !== 'running') {
      events?.emit(ref, {
        type: 'run_finished',
        status: stored.status,
        ...(stored.error !== undefined ? { error: stored.error } : {}),
        ...(stored.metadata.durationMs !== undefined ? { durationMs: stored.metadata.durationMs } : {}),
      });
    }
    return { statusCode: 200, run: runView(stored ?? run, { urlFor: deps.urlFor }) };
  }
  deps.metrics?.runFinished(finish.status, run.requestSource, finish.durationMs);
  events?.emit(ref, {
    type: 'run_finished',
    status: finish.status,
    ...(finish.error !== undefined ? { error: finish.error } : {}),
    durationMs: finish.durationMs,
  });
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
  };
  // Files of an unrecorded run are not kept: no link could serve them.
  const view = runView(finished, opts.record ? { urlFor: deps.urlFor } : {});
  const steps = opts.withData ? result.stepResults : stepResultsWithoutData(result.stepResults, timings);
  return { statusCode: 200, run: withResult(view, result.data, steps) };
}

/** A run that is not stored (an unsaved definition without createRun): what it would record, saving nothing. */
function unrecorded(run: StoredRun, result: EngineResult): RecordedFinish {
  const fixture = run.state?.fixture;
  return {
    won: true,
    finish: finishFromResult(run, result),
    ...(fixture !== undefined ? { state: { fixture } } : {}),
    warnings: result.state?.warnings ?? [],
  };
}

/** The OAuth access tokens of the run's tokenManaged systems, for the run's mode. */
function tokenSource(ctx: RunContext, run: StoredRun) {
  const source = ctx.deps.accessToken;
  const mode = run.executionMode ?? 'prod';
  return (systemId: string, rejected?: string) => {
    if (!source) return Promise.reject(new Error('no OAuth token source'));
    return source(systemId, mode, rejected);
  };
}
