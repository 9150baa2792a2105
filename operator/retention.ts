import type { Store } from '../store/index.ts';

export interface RunRetentionOptions {
  store: Pick<Store, 'pruneRuns' | 'pruneRunOutputs'>;
  /** Ended runs that started longer ago than this are deleted; 0 keeps them forever. */
  runRetentionMs: number;
  /** Results and files stored longer ago than this are deleted before their run; 0: as long as the run. */
  resultRetentionMs: number;
  /** Rows per batch (default 200): each batch is one short transaction. */
  batchSize?: number;
  /** Pause between batches (default 20 ms), so the writes of runs are never queued behind a long sweep. */
  pauseMs?: number;
  /** The clock (tests). */
  now?: () => number;
  /** Stops a sweep between two batches. */
  signal?: AbortSignal;
}

export interface RetentionSweep {
  runs: number;
  outputs: number;
}

const DEFAULT_BATCH_SIZE = 200;
const DEFAULT_PAUSE_MS = 20;

/**
 * One retention sweep: results and files past their retention, then runs past theirs, batch after batch
 * until nothing old is left (or the signal aborts). Returns how many of each were deleted.
 */
export async function sweepRunRetention(opts: RunRetentionOptions): Promise<RetentionSweep> {
  const now = (opts.now ?? Date.now)();
  const limit = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  const pauseMs = opts.pauseMs ?? DEFAULT_PAUSE_MS;
  const resultRetentionMs = effectiveResultRetention(opts.runRetentionMs, opts.resultRetentionMs);
  const inBatches = async (prune: (limit: number) => Promise<number>): Promise<number> => {
    let total = 0;
    for (;;) {
      if (opts.signal?.aborted) return total;
      const deleted = await prune(limit);
      total += deleted;
      if (deleted < limit) return total;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  };
  const sweep: RetentionSweep = { runs: 0, outputs: 0 };
  if (resultRetentionMs > 0) {
    const before = new Date(now - resultRetentionMs).toISOString();
    sweep.outputs = await inBatches((batch) => opts.store.pruneRunOutputs({ before, limit: batch }));
  }
  if (opts.runRetentionMs > 0) {
    const before = new Date(now - opts.runRetentionMs).toISOString();
    sweep.runs = await inBatches((batch) => opts.store.pruneRuns({ before, limit: batch }));
  }
  return sweep;
}

/** Results never outlive their run: a result retention of 0 or above the run's is the run's. */
function effectiveResultRetention(runRetentionMs: number, resultRetentionMs: number): number {
  if (resultRetentionMs <= 0) return 0;
  return runRetentionMs > 0 ? Math.min(resultRetentionMs, runRetentionMs) : resultRetentionMs;
}
