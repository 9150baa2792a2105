/**
 * The stored step results a resumed run (runs/resume.ts) reuses: read where the run's results are kept, the
 * same for the resume's checks and for every order of the resumed run (order.ts), whichever process
 * builds it.
 */
import type { StepResult } from '../../contract/api/run.ts';
import type { StoreQueries } from '../../store/index.ts';

/** Where stored step results are read. */
export type StepResultsStore = Pick<StoreQueries, 'getRunResult' | 'getStepResults'>;

/**
 * A run's stored step results in step order: those of its result (every field, reusedFrom included) or,
 * for a run that ended without one (a cancel that won over its runner), those stored as its steps finished.
 * undefined: none are stored (retention removed them, or the run stored none).
 */
export async function storedStepResults(
  store: StepResultsStore,
  runId: string,
): Promise<StepResult[] | undefined> {
  const result = await store.getRunResult(runId);
  if (result) return result.stepResults;
  const steps = await store.getStepResults(runId);
  // Stored one by one, a step's null data reads as absent: those results are never cut (see order.ts).
  return steps.length > 0 ? steps.map((step) => ({ ...step, data: step.data ?? null })) : undefined;
}

/**
 * The first `count` of them as a resumed run reuses them: without the original's timing (they did not run
 * in this run), each naming the run where it executed.
 */
export function asReused(results: readonly StepResult[], count: number, origin: string) {
  return results.slice(0, count).map(({ startedAt: _at, durationMs: _ms, ...result }) => ({
    ...result,
    reusedFrom: result.reusedFrom ?? origin,
  }));
}
