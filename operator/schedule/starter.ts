import { isApiError, KG_ERR_RUN_NOT_CANCELLABLE } from '../../contract/api/errors.ts';
import type { RunService } from '../../runs/service.ts';
import type { ScheduledRunStarter } from './execute.ts';

/** Cancels as the scheduler: every run of a schedule is its own to replace, whatever key started it. */
const SCHEDULER = { id: 'scheduler', toolIds: null, systemIds: null };

/** The runs of ticks through a process's RunService: the same acceptance as every other run. */
export function scheduledRunsOf(
  runs: Pick<RunService, 'startScheduled' | 'recordRefusedScheduled' | 'cancel'>,
): ScheduledRunStarter {
  return {
    start: async (run) => {
      await runs.startScheduled(run);
    },
    recordRefused: (run) => runs.recordRefusedScheduled(run),
    cancel: async (runId) => {
      try {
        await runs.cancel(runId, SCHEDULER);
      } catch (error) {
        // It ended between the look and the cancel: nothing left to replace.
        if (!isApiError(error, KG_ERR_RUN_NOT_CANCELLABLE)) throw error;
      }
    },
  };
}
