/**
 * Where an execution's outcome makes its run terminal, for every transport: the terminal write (the first
 * one wins: `… WHERE status = 'running'`) with the step results and their timings, the result, the files,
 * the completion effects in the outbox and, for a run with persistent state, the state commit, in one
 * transaction; then, only for the writer that won, the metrics and the run's end on the streams; then the
 * run's runtime credentials go, won or lost, since nothing will execute with them again. A writer that lost
 * to one that stored no step results (a cancel) keeps its own (report.ts keepLostSteps). What an
 * interrupted execution becomes (handed back, or failed saying why) is its launcher's decision; the
 * outcome it decides is recorded here.
 */
import type { EngineResult } from '../../engine/types.ts';
import type { FinishRun, Store, StoredRun, StoredRunState } from '../../store/index.ts';
import { commitRunState, defaultStateLimits, type StateLimits } from '../../tools/state.ts';
import { completionEffects } from '../completion.ts';
import { keepLostSteps, type RunReport } from './report.ts';

/** The metrics of runs that ended (api/metrics.ts). */
export interface FinishMetrics {
  runFinished(status: string, source: string, durationMs: number): void;
}

/** What finishing a run needs of its process. */
export interface FinishDeps {
  store: Store;
  /** Bounds of persistent tool state (KUBEGLUE_TOOL_STATE_*); the defaults without it. */
  stateLimits?: StateLimits | undefined;
  metrics?: FinishMetrics | undefined;
  /** Removes the run's runtime credentials; absent where none are stored (a sync run's came with its request). */
  dropCredentials?: ((runId: string) => Promise<void>) | undefined;
  log?: ((line: string) => void) | undefined;
  /** Epoch ms: when the run ended. */
  now?: (() => number) | undefined;
}

/** A run's terminal write as recorded. */
export interface RecordedFinish {
  /** The terminal write won: the run was still running (not cancelled or failed by recovery meanwhile). */
  won: boolean;
  finish: FinishRun;
  /** What the run recorded of its tool's state (Run.metadata.state), when it won. */
  state?: StoredRunState;
  /** The run's warnings (Run.metadata.warnings), when it won. */
  warnings: string[];
}

/** The result of an execution that never ran a step: the run fails with `error`. */
export function failedResult(error: string): EngineResult {
  return { status: 'failed', data: null, stepResults: [], error, files: [] };
}

/**
 * Makes the run terminal with the execution's result: recorded with the step timings its report measured,
 * counted and told to the streams when this writer won, its runtime credentials dropped either way.
 */
export async function finishRun(
  run: StoredRun,
  result: EngineResult,
  report: RunReport,
  deps: FinishDeps,
): Promise<RecordedFinish> {
  const now = new Date(deps.now?.() ?? Date.now());
  const recorded = await recordFinish(
    deps.store,
    run,
    { ...result, stepResults: report.timed(result.stepResults) },
    deps.stateLimits ?? defaultStateLimits(),
    now,
  );
  if (recorded.won) ended(run, recorded.finish, report, deps);
  else {
    await keepLostSteps(deps.store, run.runId, recorded.finish.stepResults ?? []).catch((error: unknown) => {
      deps.log?.(`could not keep the step results of run ${run.runId}: ${String(error)}`);
    });
  }
  if (deps.dropCredentials) {
    await deps.dropCredentials(run.runId).catch((error: unknown) => {
      deps.log?.(`could not drop the runtime credentials of run ${run.runId}: ${String(error)}`);
    });
  }
  return recorded;
}

/**
 * A run that is not stored (an unsaved definition run without createRun): what it would record, saving
 * nothing; it still ends on the streams and in the metrics.
 */
export function finishUnrecorded(
  run: StoredRun,
  result: EngineResult,
  report: RunReport,
  deps: Pick<FinishDeps, 'metrics' | 'now'>,
): RecordedFinish {
  const finish = finishFromResult(run, result, new Date(deps.now?.() ?? Date.now()));
  ended(run, finish, report, deps);
  const fixture = run.state?.fixture;
  return {
    won: true,
    finish,
    ...(fixture !== undefined ? { state: { fixture } } : {}),
    warnings: result.state?.warnings ?? [],
  };
}

/**
 * The run as stored once another terminal write won over this execution's (a cancel, recovery): its end is
 * told to this process's streams, where the execution reported its steps.
 */
export async function storedOutcome(
  runId: string,
  report: RunReport,
  store: Pick<Store, 'getRun'>,
): Promise<StoredRun | undefined> {
  const stored = await store.getRun(runId);
  if (stored && stored.status !== 'running') {
    report.ended({
      status: stored.status,
      ...(stored.error !== undefined ? { error: stored.error } : {}),
      ...(stored.metadata.durationMs !== undefined ? { durationMs: stored.metadata.durationMs } : {}),
    });
  }
  return stored;
}

function ended(
  run: StoredRun,
  finish: FinishRun,
  report: RunReport,
  deps: Pick<FinishDeps, 'metrics'>,
): void {
  deps.metrics?.runFinished(finish.status, run.requestSource, finish.durationMs);
  report.ended({
    status: finish.status,
    ...(finish.error !== undefined ? { error: finish.error } : {}),
    durationMs: finish.durationMs,
  });
}

/**
 * The terminal write of a run that fails without an execution's outcome (startup recovery, the operator's
 * verdict on a lost or late runner, a start that never became a ToolRun): the error, the times and the
 * completion effects, as an execution's failure records them.
 */
export function failedFinish(run: StoredRun, error: string, at: Date): FinishRun {
  return { status: 'failed', error, ...endedAt(run, at), outbox: completionEffects(run, 'failed') };
}

/** When a run ended and how long it took from its start. */
function endedAt(run: StoredRun, at: Date): Pick<FinishRun, 'completedAt' | 'durationMs'> {
  return {
    completedAt: at.toISOString(),
    durationMs: Math.max(0, at.getTime() - Date.parse(run.metadata.startedAt)),
  };
}

/** The terminal write of a run from the engine's result, effects included. */
function finishFromResult(run: StoredRun, result: EngineResult, now = new Date()): FinishRun {
  return {
    status: result.status,
    ...(result.error !== undefined ? { error: result.error } : {}),
    ...endedAt(run, now),
    stepResults: result.stepResults,
    result: {
      success: result.status === 'success',
      data: result.data,
      ...(result.error !== undefined ? { error: result.error } : {}),
    },
    files: result.files.map((f) => ({
      fileKey: f.fileKey,
      filename: f.filename,
      contentType: f.contentType,
      content: Buffer.from(f.contentBase64, 'base64'),
    })),
    outbox: completionEffects(run, result.status),
    ...(result.recording ? { recording: result.recording } : {}),
  };
}

/**
 * Records a run's outcome from the engine's result: the terminal write with its completion effects and,
 * for a run with persistent state, the state commit (tools/state.ts) and the run's record of it, in one
 * transaction: the state changes exactly when the run is recorded as succeeded. Runs without state join
 * the group commit of terminal writes.
 */
async function recordFinish(
  store: Store,
  run: StoredRun,
  result: EngineResult,
  limits: StateLimits,
  now = new Date(),
): Promise<RecordedFinish> {
  const finish = finishFromResult(run, result, now);
  if (result.state === undefined && run.state === undefined) {
    return { won: await store.batch.finishRun(run.runId, finish), finish, warnings: [] };
  }
  return store.transaction(async (tx) => {
    const won = await tx.finishRun(run.runId, finish);
    if (!won) return { won, finish, warnings: [] };
    const { record, warnings } = await commitRunState(tx, run, result, limits);
    await tx.toolState.recordRun(run.runId, record, warnings);
    return { won, finish, ...(record ? { state: record } : {}), warnings };
  });
}
