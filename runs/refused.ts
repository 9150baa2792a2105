/**
 * A run refused before it started (a chain the guard refused, a scheduled tick acceptance refused), kept
 * as a failed run with the reason, so users see why it did not run: no systems, no time taken.
 */
import type { Store, StoredRun } from '../store/index.ts';
import { inputHash } from './input-hash.ts';

/** Who asked for the refused run and how, as the run it would have been records it; and why it was refused. */
export type RefusedRun = Pick<
  StoredRun,
  | 'runId'
  | 'toolId'
  | 'requestSource'
  | 'userId'
  | 'allowedToolIds'
  | 'allowedSystemIds'
  | 'executionMode'
  | 'traceId'
  | 'parentRunId'
  | 'scheduleId'
  | 'toolPayload'
> & { reason: string };

export async function recordRefusedRun(store: Pick<Store, 'insertRun'>, refused: RefusedRun): Promise<void> {
  const { reason, ...run } = refused;
  const now = new Date().toISOString();
  await store.insertRun(
    {
      ...run,
      status: 'failed',
      error: reason,
      systemIds: [],
      metadata: { startedAt: now, completedAt: now, durationMs: 0 },
    },
    { inputHash: inputHash(run.toolId, run.toolPayload ?? {}) },
  );
}
