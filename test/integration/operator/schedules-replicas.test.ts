/**
 * Two processes on one Postgres store, each running the schedule reconciler with its own clock, race for
 * every tick of the same schedules: the tick claim in the store lets exactly one of them start each
 * tick's run, however the race goes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import { startTestApi, type TestApi } from '../../support/embedded.ts';
import { ManualClock } from '../../support/manual-clock.ts';
import {
  at,
  clockStart,
  createEchoTool,
  createSchedule,
  getSchedule,
  runsOf,
  until,
  untilTick,
} from '../../support/schedules.ts';

const database = useTestDatabase();
const base = clockStart();
const clocks = [new ManualClock(at(base, 0, 30)), new ManualClock(at(base, 0, 30))];
const replicas: TestApi[] = [];

beforeAll(async () => {
  // One after the other: the first one migrates the store and stores the admin key.
  for (const clock of clocks) {
    replicas.push(await startTestApi({ KUBEGLUE_DATABASE_URL: database.url }, { scheduleClock: clock }));
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
});

describe('two replicas racing for the ticks of one schedule', () => {
  it('a tick claimed from both at once has exactly one winner', async () => {
    const claim = (replica: TestApi, by: string) =>
      replica.embedded.store.scheduleTicks.claim({
        scheduleUid: 'uid-race',
        tickAt: at(base, 0).toISOString(),
        namespace: 'default',
        scheduleId: 'race',
        outcome: 'started',
        runId: 'run-race',
        claimedBy: by,
        claimedAt: new Date().toISOString(),
      });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => claim(replicas[i % 2] as TestApi, `replica-${i % 2}-${i}`)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const latest = await (replicas[1] as TestApi).embedded.store.scheduleTicks.latest('uid-race');
    expect(latest).toMatchObject({ outcome: 'started', runId: 'run-race', attempt: 1 });
    expect(await (replicas[0] as TestApi).embedded.store.scheduleTicks.forget('uid-race')).toBe(1);
  });

  it('start exactly one run per tick', async () => {
    const [first, second] = replicas as [TestApi, TestApi];
    await createEchoTool(first, 'race');
    const schedules = await Promise.all(
      ['Allow', 'Forbid', 'Replace'].map((concurrencyPolicy) =>
        createSchedule(first, 'race', { cronExpression: '* * * * *', concurrencyPolicy }),
      ),
    );
    // Both have looked at every schedule before the first tick.
    for (const replica of replicas) {
      for (const schedule of schedules) {
        await until(
          'both replicas to see the schedule',
          () => getSchedule(replica, 'race', schedule.id),
          (s) => s.statusReason === 'Scheduled',
        );
      }
    }
    const ticks = 5;
    for (let minute = 1; minute <= ticks; minute++) {
      // Both clocks reach the tick at once: both reconcilers act on it concurrently.
      for (const clock of clocks) clock.set(at(base, minute, 1));
      for (const schedule of schedules) await untilTick(second, 'race', schedule.id, at(base, minute));
    }
    // Let any late starter finish what it would do.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const schedule of schedules) {
      const runs = await runsOf(first, 'race', schedule.id);
      const byTick = new Map<string, Run[]>();
      for (const run of runs) {
        const tick = /^sched-(\d{8}T\d{6}Z)-/.exec(run.runId)?.[1] as string;
        byTick.set(tick, [...(byTick.get(tick) ?? []), run]);
      }
      expect([...byTick.values()].every((list) => list.length === 1)).toBe(true);
      // Allow and Replace start every tick (the runs are quick); Forbid may skip a tick whose previous run
      // was still running, never start two.
      if (schedule.concurrencyPolicy !== 'Forbid') expect(runs).toHaveLength(ticks);
      else expect(runs.length).toBeGreaterThan(0);
    }
    // One claim per tick and schedule in total, whichever replica won it.
    const { rows } = await database.client.query<{ claimed_by: string; n: string }>(
      `SELECT claimed_by, count(*) AS n FROM schedule_ticks GROUP BY claimed_by`,
    );
    expect(rows.reduce((sum, row) => sum + Number(row.n), 0)).toBe(ticks * schedules.length);
  });
});
