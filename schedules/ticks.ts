/**
 * Which tick of a schedule is due, pure: the missed-tick rule (at most one catch-up, only within
 * startingDeadlineSeconds), the concurrency policy's verdict, and the id of a tick's run.
 */
import { createHash } from 'node:crypto';
import type { ConcurrencyPolicy } from '../contract/api/schedule.ts';
import { TickReason } from '../contract/reasons.ts';
import type { CronSchedule } from './cron.ts';

export type DueTick =
  /** No tick after `since` has come yet. */
  | { kind: 'none' }
  /** The latest tick since `since`: start its run (lateMs: how long ago it was). */
  | { kind: 'due'; tick: Date; lateMs: number }
  /** The latest tick since `since` is older than the starting deadline: record it as missed. */
  | { kind: 'missed'; tick: Date; lateMs: number };

/**
 * The tick to act on now. Only the latest tick after `since` counts: ticks before it that passed without a
 * run (kubeglue was down) are never made up, so a long outage costs at most one catch-up run, never a
 * burst. With a deadline, that one runs only if it is at most startingDeadlineSeconds late; without one
 * it runs however late.
 */
export function dueTick(input: {
  schedule: CronSchedule;
  /** The newest tick already acted on, or when the schedule (or its current spec) started to count. */
  since: Date;
  now: Date;
  startingDeadlineSeconds?: number | undefined;
}): DueTick {
  const tick = input.schedule.latestAtOrBefore(input.now);
  if (!tick || tick.getTime() <= input.since.getTime()) return { kind: 'none' };
  const lateMs = input.now.getTime() - tick.getTime();
  const deadline = input.startingDeadlineSeconds;
  if (deadline !== undefined && lateMs > deadline * 1000) return { kind: 'missed', tick, lateMs };
  return { kind: 'due', tick, lateMs };
}

export type ConcurrencyVerdict =
  | { start: true; cancel: string[] }
  | { start: false; reason: typeof TickReason.ConcurrencyForbid };

/** What a due tick does while runs of the schedule still run (CronJob's concurrencyPolicy). */
export function concurrencyVerdict(
  policy: ConcurrencyPolicy,
  running: readonly string[],
): ConcurrencyVerdict {
  if (running.length === 0 || policy === 'Allow') return { start: true, cancel: [] };
  if (policy === 'Forbid') return { start: false, reason: TickReason.ConcurrencyForbid };
  return { start: true, cancel: [...running] };
}

/**
 * The run id of a tick's attempt: derived from the schedule's uid and the tick, so whoever starts it (a
 * replica that lost the race, a process restarted after claiming) starts the same run, and acceptance's
 * idempotency keeps it one run. Readable: `sched-20251026T003000Z-<hash>` (`-r2` for a retry).
 */
export function scheduledRunId(scheduleUid: string, tick: Date, attempt = 1): string {
  const stamp = tick
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
  const hash = createHash('sha256')
    .update(`${scheduleUid}\0${tick.toISOString()}`)
    .digest('hex')
    .slice(0, 16);
  return `sched-${stamp}-${hash}${attempt > 1 ? `-r${attempt}` : ''}`;
}
