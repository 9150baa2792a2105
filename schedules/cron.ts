/**
 * The ticks of a cron expression in a time zone, through croner (the cron library: zero dependencies,
 * time zones through Intl, DST rules it documents; see docs/schedules.md for why it was chosen).
 *
 * DST, as documented in docs/schedules.md:
 * - a local time that does not exist (spring forward): a fixed-time expression (one value in each of
 *   minute and hour, `30 2 * * *`) runs once, at the first valid time after the gap; an interval
 *   expression (`0,30 * * * *`, `30 * * * *`) has no tick in the gap. That is croner's rule (Vixie cron's).
 * - a local time that occurs twice (fall back): it runs once, at its first occurrence. croner runs interval
 *   expressions on both passes of the repeated hour; the second pass is dropped here.
 */
import { Cron } from 'croner';
import { isTimeZone } from '../contract/api/schedule.ts';

export interface CronSchedule {
  readonly expression: string;
  readonly timeZone: string;
  /** The first tick strictly after `after`; undefined when there is none (February 31st). */
  next(after: Date): Date | undefined;
  /** The latest tick at or before `at`. */
  latestAtOrBefore(at: Date): Date | undefined;
}

export type CompiledSchedule = { ok: true; schedule: CronSchedule } | { ok: false; problem: string };

/** Steps through a run of dropped second-pass ticks (a repeated hour of a per-minute schedule is 60). */
const MAX_DROPPED = 10_000;
/** Repeated local times lie within this much after a transition (the largest DST shift is 1 hour). */
const REPEAT_WINDOW_MS = 3 * 60 * 60 * 1000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

/** The zone's offset from UTC at an instant, in milliseconds (Europe/Berlin in summer: 7 200 000). */
export function utcOffsetMs(at: Date, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(at)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return wall - (at.getTime() - at.getUTCMilliseconds());
}

/**
 * Whether the local time of `at` already occurred earlier (the second pass through a repeated hour): an
 * earlier instant shows the same wall clock exactly when the offset was larger before a transition.
 */
export function isRepeatedLocalTime(at: Date, timeZone: string): boolean {
  const offset = utcOffsetMs(at, timeZone);
  const before = utcOffsetMs(new Date(at.getTime() - REPEAT_WINDOW_MS), timeZone);
  if (before <= offset) return false;
  const first = new Date(at.getTime() + offset - before);
  return utcOffsetMs(first, timeZone) === before;
}

/** Collapses the whitespace the resource's schema allows around and between fields. */
function normalized(expression: string): string {
  return expression.trim().split(/\s+/).join(' ');
}

/**
 * The expression's ticks in the zone, or what is wrong with it: a field out of range, a time zone the
 * runtime does not know, an expression that never matches.
 */
export function compileSchedule(expression: string, timeZone: string, now = new Date()): CompiledSchedule {
  if (!isTimeZone(timeZone)) return { ok: false, problem: `unknown time zone '${timeZone}'` };
  const pattern = normalized(expression);
  let cron: Cron;
  try {
    cron = new Cron(pattern, { timezone: timeZone, mode: '5-part', paused: true });
  } catch (error) {
    return { ok: false, problem: `invalid cron expression '${pattern}': ${cronProblem(error)}` };
  }
  const schedule: CronSchedule = {
    expression: pattern,
    timeZone,
    next(after) {
      let cursor = after;
      for (let dropped = 0; dropped <= MAX_DROPPED; dropped++) {
        const tick = cron.nextRun(cursor);
        if (!tick) return undefined;
        if (!isRepeatedLocalTime(tick, timeZone)) return tick;
        cursor = tick;
      }
      return undefined;
    },
    latestAtOrBefore(at) {
      // previousRuns looks strictly before its reference.
      let cursor = new Date(at.getTime() + 1);
      for (let dropped = 0; dropped <= MAX_DROPPED; dropped++) {
        const [tick] = cron.previousRuns(1, cursor);
        if (!tick) return undefined;
        if (!isRepeatedLocalTime(tick, timeZone)) return tick;
        cursor = tick;
      }
      return undefined;
    },
  };
  if (!schedule.next(now)) return { ok: false, problem: `cron expression '${pattern}' never matches` };
  return { ok: true, schedule };
}

/** croner's message without its class prefix ("CronPattern: Invalid value for minute: 61"). */
function cronProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^Cron\w*:\s*/, '');
}
