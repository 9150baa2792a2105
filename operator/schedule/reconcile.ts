/**
 * The ToolSchedule reconciler's decision: `decideSchedule(observed) → decision`, pure. From the schedule,
 * what holds it back (its tool, its payload, its key), the newest claimed tick (the store's, shared by every replica) and the schedule's
 * running runs, it says which tick to act on and how (start its run, cancel what Replace replaces,
 * record it as skipped or missed, retry a failed run, start again a claimed run a crash lost), the status
 * and Events that follow, and when to look again. execute.ts carries it out; a claim lost to another
 * process discards the rest of the decision and the schedule is looked at again.
 */
import {
  ScheduleConditionType,
  ScheduleEventReason,
  ScheduleReason,
  TickReason,
} from '../../contract/reasons.ts';
import type { ToolScheduleResource } from '../../contract/resources/kinds.ts';
import type { StatusPatch } from '../../kube/resources/index.ts';
import { type CronSchedule, compileSchedule } from '../../schedules/cron.ts';
import type { ScheduleHold } from '../../schedules/holds.ts';
import { scheduleState } from '../../schedules/service.ts';
import { concurrencyVerdict, dueTick, scheduledRunId } from '../../schedules/ticks.ts';
import type { RunStatus, TickClaim } from '../../store/index.ts';
import { conditionIs, kubeTime, setCondition } from '../conditions.ts';

export interface ScheduleObservation {
  now: Date;
  schedule: ToolScheduleResource;
  /** What holds it back now (its tool, its payload, the key it runs as: schedules/holds.ts), if anything. */
  hold: ScheduleHold | undefined;
  /** The schedule's newest claimed tick. */
  lastClaim: TickClaim | undefined;
  /** The status of lastClaim's run; null: the claim started a run the store does not have. */
  lastRunStatus: RunStatus | null | undefined;
  /** Runs of the schedule still running, oldest first. */
  running: readonly string[];
}

export type TickAction =
  /** Claim the tick, cancel the runs named (Replace), start its run. */
  | { kind: 'start'; tick: Date; runId: string; cancel: string[] }
  /** Claim the tick without a run, saying why. */
  | { kind: 'skip'; tick: Date; outcome: 'skipped' | 'missed'; reason: TickReason }
  /** Start the run of an attempt claimed already whose run the store lacks (its starter died). */
  | { kind: 'restart'; tick: Date; runId: string }
  /** Claim the next attempt of a tick whose run failed, and start it. */
  | { kind: 'retry'; tick: Date; fromAttempt: number; runId: string };

/** An Event on the schedule; Normal or Warning as its reason is declared. */
export interface ScheduleEvent {
  reason: ScheduleEventReason;
  message: string;
}

export interface ScheduleDecision {
  tick?: TickAction;
  /** Written through /status once the tick action held; undefined: the status is current. */
  status?: StatusPatch<ToolScheduleResource>;
  events: ScheduleEvent[];
  /** Look again then (the next tick, or sooner while runs run); undefined: on the next change. */
  requeueAt?: Date;
}

/** While a run of the schedule runs, it is looked at this often: `active` stays true, failures retried. */
export const ACTIVE_POLL_MS = 10_000;
/** A claimed run the store lacks is started again only this long after the claim (not a pruned old run). */
export const RESTART_WINDOW_MS = 10 * 60 * 1000;
/** Wake a little after a tick, so the clock has surely passed it. */
const TICK_MARGIN_MS = 5;

function later(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() >= b.getTime() ? a : b;
}

function parsed(time: string | undefined): Date | undefined {
  if (!time) return undefined;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

const at = (date: Date) => kubeTime(date);

export function decideSchedule(o: ScheduleObservation): ScheduleDecision {
  const { schedule, now } = o;
  const { spec, metadata } = schedule;
  const status = schedule.status ?? {};
  const generation = metadata.generation ?? 1;
  const state = scheduleState(spec, o.hold, now);
  const events: ScheduleEvent[] = [];
  const ready = status.conditions?.find((c) => c.type === ScheduleConditionType.Ready);
  const compiled = compileSchedule(spec.schedule, spec.timeZone ?? 'UTC', now);

  let tick: TickAction | undefined;
  let cron: CronSchedule | undefined;
  if (state.state === 'active' && compiled.ok) {
    cron = compiled.schedule;
    tick = decideTick(o, cron, ready?.reason, ready?.observedGeneration, generation, events);
  } else if (ready?.reason !== state.reason) {
    events.push(inactiveEvent(state.reason, state.message));
  }
  if (state.state === 'active' && ready && ready.reason !== ScheduleReason.Scheduled) {
    events.push({ reason: ScheduleEventReason.Resumed, message: 'Ticks start runs again' });
  }

  // What the status says once the tick action held.
  const started = tick?.kind === 'start' || tick?.kind === 'retry' || tick?.kind === 'restart';
  const cancelled = new Set(tick?.kind === 'start' ? tick.cancel : []);
  const active = o.running.filter((id) => !cancelled.has(id));
  if (started && tick && 'runId' in tick && !active.includes(tick.runId)) active.push(tick.runId);
  const actedOn = tick?.tick;
  const next = cron?.next(later(now, actedOn) ?? now);

  const patch: StatusPatch<ToolScheduleResource> = {};
  const desired = {
    type: ScheduleConditionType.Ready,
    reason: state.reason,
    message: state.message,
    observedGeneration: generation,
  };
  if (!conditionIs(status.conditions, desired))
    patch.conditions = setCondition(status.conditions, desired, now);
  if (status.observedGeneration !== generation) patch.observedGeneration = generation;
  // The latest tick as the store has it once this decision held: the status converges on the claims,
  // whichever replica made them and whether or not its own status write went through.
  const latest = latestTick(tick, o.lastClaim);
  if (latest) {
    const shown = status.lastTick;
    if (shown?.time !== latest.time || shown.outcome !== latest.outcome || shown.reason !== latest.reason) {
      patch.lastTick = {
        time: latest.time,
        outcome: latest.outcome,
        ...(latest.reason ? { reason: latest.reason } : {}),
      };
    }
    if (latest.runId && (status.lastScheduleTime !== latest.time || status.lastRunId !== latest.runId)) {
      patch.lastScheduleTime = latest.time;
      patch.lastRunId = latest.runId;
    }
  }
  const nextTime = next ? at(next) : undefined;
  if (status.nextScheduleTime !== nextTime) patch.nextScheduleTime = nextTime ?? null;
  if (!sameList(status.active ?? [], active)) patch.active = active;

  const wakeAt = next ? new Date(next.getTime() + TICK_MARGIN_MS) : undefined;
  const poll = active.length > 0 ? new Date(now.getTime() + ACTIVE_POLL_MS) : undefined;
  const requeueAt = [wakeAt, poll]
    .filter((d): d is Date => d !== undefined)
    .sort((a, b) => a.getTime() - b.getTime())[0];
  return {
    ...(tick ? { tick } : {}),
    ...(Object.keys(patch).length > 0 ? { status: patch } : {}),
    events,
    ...(requeueAt ? { requeueAt } : {}),
  };
}

/** The tick action of an active schedule, if any, and its Events. */
function decideTick(
  o: ScheduleObservation,
  cron: CronSchedule,
  readyReason: string | undefined,
  readyGeneration: number | undefined,
  generation: number,
  events: ScheduleEvent[],
): TickAction | undefined {
  const { schedule, now, lastClaim } = o;
  const { spec, metadata } = schedule;
  const uid = metadata.uid ?? metadata.name;
  const since =
    later(
      later(parsed(lastClaim?.tickAt), parsed(schedule.status?.lastScheduleTime)),
      parsed(metadata.creationTimestamp),
    ) ?? new Date(0);
  const due = dueTick({ schedule: cron, since, now, startingDeadlineSeconds: spec.startingDeadlineSeconds });

  if (due.kind === 'none') return followUp(o, now, events);

  // A tick that passed while the schedule did not run on this spec is not made up: a schedule never looked
  // at (the first spec) counts from its creation, one suspended, paused or changed from now on.
  const firstLook = readyReason === undefined && generation === 1;
  const activeOnThisSpec = readyReason === ScheduleReason.Scheduled && readyGeneration === generation;
  if (!firstLook && !activeOnThisSpec) {
    const reason = readyReason === ScheduleReason.Scheduled ? TickReason.ScheduleChanged : TickReason.Resumed;
    return { kind: 'skip', tick: due.tick, outcome: 'skipped', reason };
  }
  if (due.kind === 'missed') {
    events.push({
      reason: ScheduleEventReason.MissedSchedule,
      message:
        `Missed the tick at ${at(due.tick)}: it could start only ${Math.round(due.lateMs / 1000)} s late, ` +
        `after startingDeadlineSeconds (${spec.startingDeadlineSeconds})`,
    });
    return { kind: 'skip', tick: due.tick, outcome: 'missed', reason: TickReason.DeadlineExceeded };
  }
  const verdict = concurrencyVerdict(spec.concurrencyPolicy ?? 'Allow', o.running);
  if (!verdict.start) {
    events.push({
      reason: ScheduleEventReason.ConcurrencyForbid,
      message: `Skipped the tick at ${at(due.tick)}: ${o.running.length === 1 ? 'run' : 'runs'} ${o.running.join(', ')} ${o.running.length === 1 ? 'is' : 'are'} still running (concurrencyPolicy Forbid)`,
    });
    return { kind: 'skip', tick: due.tick, outcome: 'skipped', reason: verdict.reason };
  }
  const runId = scheduledRunId(uid, due.tick);
  for (const replaced of verdict.cancel) {
    events.push({
      reason: ScheduleEventReason.RunReplaced,
      message: `Cancelled run ${replaced}: the tick at ${at(due.tick)} replaces it (concurrencyPolicy Replace)`,
    });
  }
  events.push({
    reason: ScheduleEventReason.RunStarted,
    message: `Started run ${runId} for the tick at ${at(due.tick)}`,
  });
  return { kind: 'start', tick: due.tick, runId, cancel: verdict.cancel };
}

/** With no new tick: the run of the newest tick, if a crash lost it or it failed with retries left. */
function followUp(o: ScheduleObservation, now: Date, events: ScheduleEvent[]): TickAction | undefined {
  const claim = o.lastClaim;
  if (claim?.outcome !== 'started' || !claim.runId) return undefined;
  const tick = new Date(claim.tickAt);
  if (o.lastRunStatus === null && now.getTime() - Date.parse(claim.claimedAt) < RESTART_WINDOW_MS) {
    return { kind: 'restart', tick, runId: claim.runId };
  }
  const retries = o.schedule.spec.options?.retries ?? 0;
  if (o.lastRunStatus === 'failed' && claim.attempt <= retries) {
    const attempt = claim.attempt + 1;
    const runId = scheduledRunId(o.schedule.metadata.uid ?? o.schedule.metadata.name, tick, attempt);
    events.push({
      reason: ScheduleEventReason.RunRetried,
      message: `Run ${claim.runId} of the tick at ${at(tick)} failed: started ${runId} (retry ${claim.attempt} of ${retries})`,
    });
    return { kind: 'retry', tick, fromAttempt: claim.attempt, runId };
  }
  return undefined;
}

interface LatestTick {
  time: string;
  outcome: 'Started' | 'Skipped' | 'Missed';
  reason?: string;
  runId?: string;
}

/** The tick this decision acts on, else the newest claimed one. */
function latestTick(action: TickAction | undefined, claim: TickClaim | undefined): LatestTick | undefined {
  if (action?.kind === 'skip') {
    return {
      time: at(action.tick),
      outcome: action.outcome === 'missed' ? 'Missed' : 'Skipped',
      reason: action.reason,
    };
  }
  if (action) return { time: at(action.tick), outcome: 'Started', runId: action.runId };
  if (!claim) return undefined;
  const time = at(new Date(claim.tickAt));
  if (claim.outcome === 'started' && claim.runId) return { time, outcome: 'Started', runId: claim.runId };
  return {
    time,
    outcome: claim.outcome === 'missed' ? 'Missed' : 'Skipped',
    ...(claim.reason ? { reason: claim.reason } : {}),
  };
}

function inactiveEvent(reason: ScheduleReason, message: string): ScheduleEvent {
  if (reason === ScheduleReason.InvalidSchedule)
    return { reason: ScheduleEventReason.InvalidSchedule, message };
  if (reason === ScheduleReason.Suspended) return { reason: ScheduleEventReason.Suspended, message };
  return { reason: ScheduleEventReason.Paused, message };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}
