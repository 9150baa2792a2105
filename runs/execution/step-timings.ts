/**
 * When each step of a run started and how long it took, measured from the engine's events by the process
 * executing the run (report.ts). The stored results keep them (GET /v1/runs/{id}/results: the dashboard
 * draws a run's timeline from them); a synchronous answer without step data carries them too.
 */
import type { StepResult } from '../../contract/api/run.ts';
import type { EngineEvent } from '../../engine/types.ts';

interface Timing {
  startedAt: string;
  started: number;
  durationMs?: number;
}

export class StepTimings {
  readonly #steps = new Map<string, Timing>();

  /** `at`: when the event happened (epoch ms; the engine worker's clock), now when not given. */
  observe(event: EngineEvent, at = Date.now()): void {
    if (event.type === 'step_started') {
      this.#steps.set(event.stepId, { startedAt: new Date(at).toISOString(), started: at });
    } else if (event.type === 'step_finished') {
      const timing = this.#steps.get(event.result.stepId);
      if (timing) timing.durationMs = Math.max(0, at - timing.started);
    }
  }

  /** The results with the timing of each step that reported one. */
  apply(results: readonly StepResult[]): StepResult[] {
    return results.map((result) => {
      const timing = this.#steps.get(result.stepId);
      if (!timing) return result;
      return {
        ...result,
        startedAt: timing.startedAt,
        ...(timing.durationMs !== undefined ? { durationMs: timing.durationMs } : {}),
      };
    });
  }
}
