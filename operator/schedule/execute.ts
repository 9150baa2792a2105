/**
 * Carries out a ToolSchedule decision: the tick claim first (the store's row; a claim lost to another
 * process ends here, and the schedule is decided again from what that process did), then what the
 * claim entitles to (cancel what Replace replaces, start the run), then the status and the Events.
 */
import { isApiError, KG_ERR_RUN_ID_CONFLICT } from '../../contract/api/errors.ts';
import type { ScheduleRunAs } from '../../contract/api/schedule.ts';
import { ScheduleEventReason } from '../../contract/reasons.ts';
import { scheduleIdOf } from '../../contract/resources/convert.ts';
import type { ToolScheduleResource } from '../../contract/resources/kinds.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceClient } from '../../kube/resources/index.ts';
import type { ScheduledRun } from '../../runs/service.ts';
import type { Store } from '../../store/index.ts';
import type { EventRecorder } from '../events.ts';
import { writeDecidedStatus } from '../status.ts';
import type { ScheduleDecision, ScheduleEvent, TickAction } from './reconcile.ts';

/** How the operator starts, records and cancels the runs of ticks (the RunService of its process). */
export interface ScheduledRunStarter {
  /** Starts the run asynchronously; throws the API error acceptance refused it with. */
  start(run: ScheduledRun): Promise<void>;
  /** Records a refused tick as a failed run with the reason. */
  recordRefused(run: ScheduledRun & { reason: string }): Promise<void>;
  /** Cancels a run (concurrencyPolicy Replace); a run that ended meanwhile is left as it is. */
  cancel(runId: string): Promise<void>;
}

export interface ScheduleExecuteDeps {
  store: Pick<Store, 'scheduleTicks'>;
  runs: ScheduledRunStarter;
  toolSchedules: Pick<ResourceClient<ToolScheduleResource>, 'patchStatus'>;
  informer: Pick<Informer<ToolScheduleResource>, 'observe'>;
  events: EventRecorder;
  /** Who claims ticks (the claim row's claimed_by). */
  identity: string;
  /** The schedules' clock: when a claim is made. */
  now: () => Date;
  /** The rights the tick's runs carry: spec.runAs narrowed to what its key may do now (runs/run-as.ts). */
  runAs: ScheduleRunAs | undefined;
  log?: (line: string) => void;
}

/** lost: another process had claimed the tick; nothing else was done. */
export async function executeSchedule(
  schedule: ToolScheduleResource,
  decision: ScheduleDecision,
  deps: ScheduleExecuteDeps,
): Promise<{ lost: boolean }> {
  let events = decision.events;
  if (decision.tick) {
    const outcome = await actOnTick(schedule, decision.tick, deps);
    if (outcome === 'lost') return { lost: true };
    if (typeof outcome === 'object') {
      events = [...events.filter((e) => e.reason !== ScheduleEventReason.RunStarted), outcome];
    }
  }
  if (decision.status) await writeDecidedStatus(deps.toolSchedules, deps.informer, schedule, decision.status);
  for (const event of events) {
    await deps.events.record(schedule, event.reason, event.message);
  }
  return { lost: false };
}

/** 'lost', 'done', or the Event that replaces RunStarted when acceptance refused the run. */
async function actOnTick(
  schedule: ToolScheduleResource,
  action: TickAction,
  deps: ScheduleExecuteDeps,
): Promise<'lost' | 'done' | ScheduleEvent> {
  const { metadata } = schedule;
  const claim = {
    scheduleUid: metadata.uid ?? metadata.name,
    tickAt: action.tick.toISOString(),
    namespace: metadata.namespace ?? '',
    scheduleId: metadata.name,
    claimedBy: deps.identity,
    claimedAt: deps.now().toISOString(),
  };
  switch (action.kind) {
    case 'skip':
      return (await deps.store.scheduleTicks.claim({
        ...claim,
        outcome: action.outcome,
        reason: action.reason,
      }))
        ? 'done'
        : 'lost';
    case 'start': {
      const claimed = await deps.store.scheduleTicks.claim({
        ...claim,
        outcome: 'started',
        runId: action.runId,
      });
      if (!claimed) return 'lost';
      for (const runId of action.cancel) {
        await deps.runs.cancel(runId).catch((error: unknown) => {
          deps.log?.(
            `schedule ${metadata.name}: cancelling run ${runId} failed: ${(error as Error).message}`,
          );
        });
      }
      return startRun(schedule, action.runId, deps);
    }
    case 'retry': {
      const claimed = await deps.store.scheduleTicks.claimRetry(
        claim.scheduleUid,
        claim.tickAt,
        action.fromAttempt,
        action.runId,
      );
      if (!claimed) return 'lost';
      return startRun(schedule, action.runId, deps);
    }
    case 'restart':
      return startRun(schedule, action.runId, deps);
  }
}

async function startRun(
  schedule: ToolScheduleResource,
  runId: string,
  deps: ScheduleExecuteDeps,
): Promise<'done' | ScheduleEvent> {
  const { spec } = schedule;
  const run: ScheduledRun = {
    runId,
    scheduleId: scheduleIdOf(schedule),
    toolId: spec.toolId,
    inputs: spec.inputs ?? {},
    options: spec.options ?? {},
    runAs: deps.runAs,
  };
  try {
    await deps.runs.start(run);
    return 'done';
  } catch (error) {
    // The same run id taken: another process started this very tick (a race, or a restart after a crash).
    if (isApiError(error, KG_ERR_RUN_ID_CONFLICT)) return 'done';
    // A refusal the run itself causes does not go away: keep it as a failed run users can see. Anything
    // else (the store is down, too many requests) fails the reconcile, which is retried with backoff; the
    // claim is held, so the retry starts this same run.
    if (!isApiError(error) || error.statusCode >= 500 || error.statusCode === 429) throw error;
    await deps.runs.recordRefused({ ...run, reason: `Scheduled run refused: ${error.message}` });
    return {
      reason: ScheduleEventReason.RunRefused,
      message: `Run ${runId} was refused: ${error.message}`,
    };
  }
}
