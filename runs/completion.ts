import type { EngineResult } from '../engine/types.ts';
import type { FinishRun, OutboxInput, Store, StoredRun, StoredRunState } from '../store/index.ts';
import { commitRunState, type StateLimits } from '../tools/state.ts';
import { chainTarget } from './webhook-url.ts';

export const CANCELLED_MESSAGE = 'Run was cancelled';

/** Completion effects of a terminal run (DESIGN.md "Completion effects"): chains on success, notifications always. */
export function completionEffects(
  run: Pick<StoredRun, 'runId' | 'options'>,
  status: FinishRun['status'],
): OutboxInput[] {
  const webhookUrl = (run.options as { webhookUrl?: unknown } | undefined)?.webhookUrl;
  if (typeof webhookUrl !== 'string') return [];
  const toolId = chainTarget(webhookUrl);
  if (toolId !== undefined) {
    return status === 'success' ? [{ kind: 'chain', runId: run.runId, payload: { toolId } }] : [];
  }
  return [{ kind: 'notify', runId: run.runId, payload: { url: webhookUrl } }];
}

/** The terminal write of a run from the engine's result, effects included. */
export function finishFromResult(run: StoredRun, result: EngineResult, now = new Date()): FinishRun {
  const durationMs = Math.max(0, now.getTime() - Date.parse(run.metadata.startedAt));
  return {
    status: result.status,
    ...(result.error !== undefined ? { error: result.error } : {}),
    completedAt: now.toISOString(),
    durationMs,
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
  };
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

/**
 * Records a run's outcome from the engine's result: the terminal write with its completion effects and,
 * for a run with persistent state, the state commit (tools/state.ts) and the run's record of it, in one
 * transaction: the state changes exactly when the run is recorded as succeeded. Runs without state join
 * the group commit of terminal writes.
 */
export async function recordFinish(
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
