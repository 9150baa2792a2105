/**
 * The ticks of a schedule as docs/schedules.md promises them: cron fields and shorthands in a time zone,
 * DST in Europe/Berlin and America/New_York (a skipped local time runs once at the end of the gap for a
 * fixed-time expression and not at all for an interval one; a repeated local time runs once), and the
 * expressions that are refused.
 */
import { describe, expect, it } from 'vitest';
import { type CronSchedule, compileSchedule } from '../../../schedules/cron.ts';

function schedule(expression: string, timeZone: string): CronSchedule {
  const compiled = compileSchedule(expression, timeZone, new Date('2025-01-01T00:00:00Z'));
  if (!compiled.ok) throw new Error(compiled.problem);
  return compiled.schedule;
}

/** The next n ticks after `from`, as ISO instants. */
function ticks(expression: string, timeZone: string, from: string, n: number): string[] {
  const cron = schedule(expression, timeZone);
  const out: string[] = [];
  let cursor = new Date(from);
  for (let i = 0; i < n; i++) {
    const next = cron.next(cursor);
    if (!next) break;
    out.push(next.toISOString());
    cursor = next;
  }
  return out;
}

/** The same instants as local wall-clock times of the zone, `2025-03-30 03:00`. */
function local(instants: string[], timeZone: string): string[] {
  const format = new Intl.DateTimeFormat('sv-SE', {
    timeZone,
    dateStyle: 'short',
    timeStyle: 'short',
  });
  return instants.map((instant) => format.format(new Date(instant)));
}

describe('schedule ticks in a time zone', () => {
  it('reads five fields and the shorthands in the zone', () => {
    expect(
      local(ticks('0 9 * * MON-FRI', 'Europe/Berlin', '2025-01-03T12:00:00Z', 2), 'Europe/Berlin'),
    ).toEqual(['2025-01-06 09:00', '2025-01-07 09:00']);
    expect(ticks('0 9 * * *', 'America/New_York', '2025-01-01T00:00:00Z', 1)).toEqual([
      '2025-01-01T14:00:00.000Z',
    ]);
    expect(ticks('@hourly', 'UTC', '2025-01-01T00:30:00Z', 1)).toEqual(['2025-01-01T01:00:00.000Z']);
    expect(ticks('@daily', 'Europe/Berlin', '2025-01-01T12:00:00Z', 1)).toEqual(['2025-01-01T23:00:00.000Z']);
    expect(ticks('@midnight', 'UTC', '2025-01-01T12:00:00Z', 1)).toEqual(['2025-01-02T00:00:00.000Z']);
    expect(ticks('@weekly', 'UTC', '2025-01-01T12:00:00Z', 1)).toEqual(['2025-01-05T00:00:00.000Z']);
    expect(ticks('@monthly', 'UTC', '2025-01-01T12:00:00Z', 1)).toEqual(['2025-02-01T00:00:00.000Z']);
    expect(ticks('@yearly', 'UTC', '2025-01-01T12:00:00Z', 1)).toEqual(['2026-01-01T00:00:00.000Z']);
    expect(ticks('@annually', 'UTC', '2025-01-01T12:00:00Z', 1)).toEqual(['2026-01-01T00:00:00.000Z']);
    // Extra whitespace, as a YAML manifest may carry it.
    expect(ticks('  */15   *  * * * ', 'UTC', '2025-01-01T00:00:00Z', 2)).toEqual([
      '2025-01-01T00:15:00.000Z',
      '2025-01-01T00:30:00.000Z',
    ]);
  });

  it('finds the latest tick at or before a time', () => {
    const cron = schedule('*/5 * * * *', 'UTC');
    expect(cron.latestAtOrBefore(new Date('2025-01-01T10:07:00Z'))?.toISOString()).toBe(
      '2025-01-01T10:05:00.000Z',
    );
    expect(cron.latestAtOrBefore(new Date('2025-01-01T10:05:00Z'))?.toISOString()).toBe(
      '2025-01-01T10:05:00.000Z',
    );
  });

  it('refuses what it cannot evaluate, saying why', () => {
    const problem = (expression: string, timeZone = 'UTC') => {
      const compiled = compileSchedule(expression, timeZone);
      return compiled.ok ? 'ok' : compiled.problem;
    };
    expect(problem('61 * * * *')).toMatch(/minute/);
    expect(problem('* * * * * *')).toMatch(/5 parts/);
    expect(problem('0 0 31 2 *')).toBe("cron expression '0 0 31 2 *' never matches");
    expect(problem('@reboot')).toMatch(/reboot/);
    expect(problem('* * * * *', 'Mars/Olympus_Mons')).toBe("unknown time zone 'Mars/Olympus_Mons'");
    expect(problem('* * * * *', '+01:00')).toBe("unknown time zone '+01:00'");
  });
});

describe.each([
  {
    zone: 'Europe/Berlin',
    // 2025-03-30 02:00 → 03:00, 2025-10-26 03:00 → 02:00
    springDay: '2025-03-30',
    fallDay: '2025-10-26',
    gapTime: '02:30',
    gapEnd: '03:00',
    repeated: '02',
  },
  {
    zone: 'America/New_York',
    // 2025-03-09 02:00 → 03:00, 2025-11-02 02:00 → 01:00
    springDay: '2025-03-09',
    fallDay: '2025-11-02',
    gapTime: '02:30',
    gapEnd: '03:00',
    repeated: '01',
  },
])('DST in $zone', ({ zone, springDay, fallDay, gapTime, gapEnd, repeated }) => {
  const dayBefore = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) - 36 * 3600_000).toISOString();
  const [gapHour, gapMinute] = gapTime.split(':');

  it('a fixed time in the skipped hour runs once, at the end of the gap', () => {
    const runs = local(ticks(`${gapMinute} ${gapHour} * * *`, zone, dayBefore(springDay), 3), zone);
    const onTheDay = runs.filter((run) => run.startsWith(springDay));
    expect(onTheDay).toEqual([`${springDay} ${gapEnd}`]);
    expect(runs.every((run) => run.endsWith(gapTime) || run === `${springDay} ${gapEnd}`)).toBe(true);
  });

  it('an interval schedule has no tick in the skipped hour, and keeps its pace around it', () => {
    const runs = local(ticks('*/30 * * * *', zone, `${springDay}T00:00:00Z`, 48), zone).filter((run) =>
      run.startsWith(springDay),
    );
    expect(runs.some((run) => run.startsWith(`${springDay} 02:`))).toBe(false);
    expect(runs).toContain(`${springDay} 01:30`);
    expect(runs).toContain(`${springDay} 03:00`);
  });

  it('a fixed time in the repeated hour runs once', () => {
    const runs = local(ticks(`30 ${repeated} * * *`, zone, dayBefore(fallDay), 3), zone);
    expect(runs.filter((run) => run === `${fallDay} ${repeated}:30`)).toHaveLength(1);
    expect(new Set(runs).size).toBe(runs.length);
  });

  it('each local time of the repeated hour runs once for an interval schedule', () => {
    const instants = ticks('*/15 * * * *', zone, dayBefore(fallDay), 36 * 4 + 24 * 4);
    const runs = local(instants, zone).filter((run) => run.startsWith(fallDay));
    // Every quarter of the repeated hour once, none twice.
    for (const minute of ['00', '15', '30', '45']) {
      expect(runs.filter((run) => run === `${fallDay} ${repeated}:${minute}`)).toHaveLength(1);
    }
    expect(new Set(runs).size).toBe(runs.length);
    // The first pass is the one that runs: the instant before the clocks go back.
    const cron = schedule('*/15 * * * *', zone);
    const first = instants.find((instant) => local([instant], zone)[0] === `${fallDay} ${repeated}:00`);
    const after = cron.next(new Date(first as string));
    expect(Date.parse(after?.toISOString() ?? '') - Date.parse(first as string)).toBe(15 * 60_000);
  });

  it('looking back skips the second pass too', () => {
    const cron = schedule('0 * * * *', zone);
    const instants = ticks('0 * * * *', zone, dayBefore(fallDay), 36 + 24);
    const repeatedFirst = instants.find(
      (instant) => local([instant], zone)[0] === `${fallDay} ${repeated}:00`,
    );
    // An hour after the first pass the clock shows the same hour again: the latest tick is still the first.
    const secondPass = new Date(Date.parse(repeatedFirst as string) + 3600_000 + 60_000);
    expect(cron.latestAtOrBefore(secondPass)?.toISOString()).toBe(repeatedFirst);
  });
});
