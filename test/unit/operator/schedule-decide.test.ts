/**
 * The ToolSchedule reconciler's decisions, without a server: which tick it acts on and how (the missed-tick
 * rule with and without a deadline, the concurrency policies, suspend, a paused tool, retries, a run a
 * crash lost), the status it writes and when it looks again.
 */
import { describe, expect, it } from 'vitest';
import { ScheduleReason, TickReason } from '../../../contract/reasons.ts';
import type { ToolScheduleResource, ToolScheduleSpec } from '../../../contract/resources/kinds.ts';
import { decideSchedule, type ScheduleObservation } from '../../../operator/schedule/reconcile.ts';
import { toolHold } from '../../../schedules/holds.ts';
import { scheduledRunId } from '../../../schedules/ticks.ts';
import type { TickClaim } from '../../../store/index.ts';

const UID = 'uid-1';
const CREATED = '2025-06-01T08:00:00Z';

/** A schedule the reconciler has looked at under its current spec (Ready=True Scheduled), unless fresh. */
function schedule(
  spec: Partial<ToolScheduleSpec> = {},
  opts: { fresh?: boolean; generation?: number; readyReason?: string } = {},
): ToolScheduleResource {
  const generation = opts.generation ?? 1;
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolSchedule',
    metadata: { name: 'nightly', namespace: 'ns', uid: UID, generation, creationTimestamp: CREATED },
    spec: {
      toolId: 'sync',
      schedule: '*/5 * * * *',
      timeZone: 'UTC',
      suspend: false,
      concurrencyPolicy: 'Allow',
      ...spec,
    },
    ...(opts.fresh
      ? {}
      : {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: opts.readyReason && opts.readyReason !== ScheduleReason.Scheduled ? 'False' : 'True',
                reason: opts.readyReason ?? ScheduleReason.Scheduled,
                message: '',
                lastTransitionTime: CREATED,
                observedGeneration: generation,
              },
            ],
            observedGeneration: generation,
          },
        }),
  };
}

function claim(tickAt: string, extra: Partial<TickClaim> = {}): TickClaim {
  return {
    scheduleUid: UID,
    tickAt,
    namespace: 'ns',
    scheduleId: 'nightly',
    outcome: 'started',
    runId: scheduledRunId(UID, new Date(tickAt)),
    attempt: 1,
    claimedBy: 'other',
    claimedAt: tickAt,
    ...extra,
  };
}

function observe(o: Partial<Omit<ScheduleObservation, 'now'>> & { now: string }): ScheduleObservation {
  return {
    schedule: schedule(),
    hold: undefined,
    lastClaim: undefined,
    lastRunStatus: undefined,
    running: [],
    ...o,
    now: new Date(o.now),
  };
}

describe('the ToolSchedule reconciler', () => {
  it('waits for the first tick of a new schedule, and says when it comes', () => {
    const decision = decideSchedule(
      observe({ schedule: schedule({}, { fresh: true }), now: '2025-06-01T08:01:00Z' }),
    );
    expect(decision.tick).toBeUndefined();
    expect(decision.status).toMatchObject({
      nextScheduleTime: '2025-06-01T08:05:00Z',
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Scheduled' }],
    });
    expect(decision.requeueAt?.toISOString()).toBe('2025-06-01T08:05:00.005Z');
  });

  it('starts the run of a tick that came, once, with a run id made of the schedule and the tick', () => {
    const decision = decideSchedule(
      observe({
        lastClaim: claim('2025-06-01T08:00:00Z'),
        lastRunStatus: 'success',
        now: '2025-06-01T08:05:00.010Z',
      }),
    );
    const runId = scheduledRunId(UID, new Date('2025-06-01T08:05:00Z'));
    expect(runId).toMatch(/^sched-20250601T080500Z-[0-9a-f]{16}$/);
    expect(decision.tick).toEqual({
      kind: 'start',
      tick: new Date('2025-06-01T08:05:00Z'),
      runId,
      cancel: [],
    });
    expect(decision.status).toMatchObject({
      lastScheduleTime: '2025-06-01T08:05:00Z',
      lastRunId: runId,
      nextScheduleTime: '2025-06-01T08:10:00Z',
      active: [runId],
    });
    expect(decision.events.map((e) => e.reason)).toEqual(['RunStarted']);
    // While the run runs, the schedule is looked at again soon (active list, retries).
    expect(decision.requeueAt?.toISOString()).toBe('2025-06-01T08:05:10.010Z');
  });

  it('after downtime without a deadline: only the latest missed tick runs, however late', () => {
    const observed = observe({
      lastClaim: claim('2025-06-01T09:00:00Z'),
      lastRunStatus: 'success',
      now: '2025-06-01T10:34:00Z',
    });
    const decision = decideSchedule(observed);
    expect(decision.tick).toMatchObject({ kind: 'start', tick: new Date('2025-06-01T10:30:00Z') });
    // Once it is claimed, nothing else of the outage is due: one catch-up run, never a burst.
    const after = decideSchedule({
      ...observed,
      lastClaim: claim('2025-06-01T10:30:00Z'),
      lastRunStatus: 'running',
    });
    expect(after.tick).toBeUndefined();
    expect(after.status?.nextScheduleTime).toBe('2025-06-01T10:35:00Z');
  });

  it('after downtime with a deadline: the latest missed tick runs only within it, else it is recorded as missed', () => {
    const spec = { startingDeadlineSeconds: 120 };
    const within = decideSchedule(
      observe({
        schedule: schedule(spec),
        lastClaim: claim('2025-06-01T09:00:00Z'),
        now: '2025-06-01T10:31:30Z',
      }),
    );
    expect(within.tick).toMatchObject({ kind: 'start', tick: new Date('2025-06-01T10:30:00Z') });
    const late = decideSchedule(
      observe({
        schedule: schedule(spec),
        lastClaim: claim('2025-06-01T09:00:00Z'),
        now: '2025-06-01T10:34:00Z',
      }),
    );
    expect(late.tick).toEqual({
      kind: 'skip',
      tick: new Date('2025-06-01T10:30:00Z'),
      outcome: 'missed',
      reason: TickReason.DeadlineExceeded,
    });
    expect(late.events).toEqual([
      expect.objectContaining({
        reason: 'MissedSchedule',
        message: expect.stringContaining('240 s late'),
      }),
    ]);
    expect(late.status?.lastScheduleTime).toBeUndefined();
  });

  it('Forbid skips a tick while a run of the schedule runs; Replace cancels that run; Allow starts beside it', () => {
    const at = { lastClaim: claim('2025-06-01T08:00:00Z'), running: ['run-a'], now: '2025-06-01T08:05:00Z' };
    const forbid = decideSchedule(observe({ ...at, schedule: schedule({ concurrencyPolicy: 'Forbid' }) }));
    expect(forbid.tick).toMatchObject({
      kind: 'skip',
      outcome: 'skipped',
      reason: TickReason.ConcurrencyForbid,
    });
    expect(forbid.events[0]?.message).toContain('run run-a is still running');
    expect(forbid.status?.active).toEqual(['run-a']);
    // Runs started under Allow before the policy changed: each is named.
    const two = decideSchedule(
      observe({ ...at, running: ['run-a', 'run-b'], schedule: schedule({ concurrencyPolicy: 'Forbid' }) }),
    );
    expect(two.events[0]?.message).toContain('runs run-a, run-b are still running');

    const replace = decideSchedule(observe({ ...at, schedule: schedule({ concurrencyPolicy: 'Replace' }) }));
    expect(replace.tick).toMatchObject({ kind: 'start', cancel: ['run-a'] });
    expect(replace.status?.active).toEqual([scheduledRunId(UID, new Date('2025-06-01T08:05:00Z'))]);
    expect(replace.events.map((e) => e.reason)).toEqual(['RunReplaced', 'RunStarted']);

    const allow = decideSchedule(observe({ ...at, schedule: schedule({ concurrencyPolicy: 'Allow' }) }));
    expect(allow.tick).toMatchObject({ kind: 'start', cancel: [] });
    expect(allow.status?.active).toEqual(['run-a', scheduledRunId(UID, new Date('2025-06-01T08:05:00Z'))]);
  });

  it('a suspended schedule starts nothing, and a tick passed while suspended is not made up on resume', () => {
    const suspended = decideSchedule(
      observe({
        schedule: schedule({ suspend: true }),
        lastClaim: claim('2025-06-01T08:00:00Z'),
        now: '2025-06-01T09:00:00Z',
      }),
    );
    expect(suspended.tick).toBeUndefined();
    expect(suspended.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(suspended.requeueAt).toBeUndefined();

    // Resumed (generation 2, the status still says Suspended): the 10:30 tick passed while suspended.
    const resumed = decideSchedule(
      observe({
        schedule: schedule({}, { generation: 2, readyReason: ScheduleReason.Suspended }),
        lastClaim: claim('2025-06-01T08:00:00Z'),
        now: '2025-06-01T10:31:00Z',
      }),
    );
    expect(resumed.tick).toMatchObject({
      kind: 'skip',
      tick: new Date('2025-06-01T10:30:00Z'),
      reason: TickReason.Resumed,
    });
    expect(resumed.status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'Scheduled' });
    expect(resumed.events.map((e) => e.reason)).toEqual(['Resumed']);
  });

  it('pauses while its tool is archived or missing, with a reason, and resumes when it is back', () => {
    for (const [tool, reason] of [
      ['archived', 'ToolArchived'],
      ['missing', 'ToolNotFound'],
    ] as const) {
      const hold = toolHold(tool);
      const paused = decideSchedule(
        observe({ hold, lastClaim: claim('2025-06-01T08:00:00Z'), now: '2025-06-01T08:05:00Z' }),
      );
      expect(paused.tick).toBeUndefined();
      expect(paused.status?.conditions?.[0]).toMatchObject({ status: 'False', reason });
      expect(paused.status?.nextScheduleTime).toBeUndefined();
      expect(paused.events).toEqual([expect.objectContaining({ reason: 'Paused' })]);
      // Once paused (its status says so), ticks do not wake it: only the tool's return does.
      const again = decideSchedule(
        observe({ hold, schedule: schedule({}, { readyReason: reason }), now: '2025-06-01T08:10:00Z' }),
      );
      expect(again.events).toEqual([]);
      expect(again.requeueAt).toBeUndefined();
    }
    const back = decideSchedule(
      observe({
        schedule: schedule({}, { readyReason: ScheduleReason.ToolArchived }),
        lastClaim: claim('2025-06-01T08:00:00Z'),
        now: '2025-06-01T08:20:30Z',
      }),
    );
    expect(back.tick).toMatchObject({ kind: 'skip', reason: TickReason.Resumed });
    expect(back.status?.nextScheduleTime).toBe('2025-06-01T08:25:00Z');
  });

  it('a changed schedule starts from its next tick', () => {
    const decision = decideSchedule(
      observe({
        schedule: {
          ...schedule({ schedule: '15 * * * *' }),
          metadata: { ...schedule().metadata, generation: 2 },
        },
        lastClaim: claim('2025-06-01T08:00:00Z'),
        now: '2025-06-01T08:16:00Z',
      }),
    );
    expect(decision.tick).toMatchObject({ kind: 'skip', reason: TickReason.ScheduleChanged });
    expect(decision.status?.nextScheduleTime).toBe('2025-06-01T09:15:00Z');
  });

  it('retries a failed run of the latest tick as often as options.retries says', () => {
    const spec = { options: { retries: 2 } };
    const failed = claim('2025-06-01T08:00:00Z');
    const first = decideSchedule(
      observe({
        schedule: schedule(spec),
        lastClaim: failed,
        lastRunStatus: 'failed',
        now: '2025-06-01T08:01:00Z',
      }),
    );
    expect(first.tick).toEqual({
      kind: 'retry',
      tick: new Date('2025-06-01T08:00:00Z'),
      fromAttempt: 1,
      runId: `${scheduledRunId(UID, new Date('2025-06-01T08:00:00Z'))}-r2`,
    });
    const last = decideSchedule(
      observe({
        schedule: schedule(spec),
        lastClaim: { ...failed, attempt: 3 },
        lastRunStatus: 'failed',
        now: '2025-06-01T08:02:00Z',
      }),
    );
    expect(last.tick).toBeUndefined();
    const cancelled = decideSchedule(
      observe({
        schedule: schedule(spec),
        lastClaim: failed,
        lastRunStatus: 'aborted',
        now: '2025-06-01T08:01:00Z',
      }),
    );
    expect(cancelled.tick).toBeUndefined();
  });

  it('starts again a claimed run the store lacks (its starter died), but not an old one retention removed', () => {
    const lost = claim('2025-06-01T08:00:00Z', { claimedAt: '2025-06-01T08:00:00Z' });
    expect(
      decideSchedule(observe({ lastClaim: lost, lastRunStatus: null, now: '2025-06-01T08:01:00Z' })).tick,
    ).toEqual({
      kind: 'restart',
      tick: new Date('2025-06-01T08:00:00Z'),
      runId: lost.runId,
    });
    expect(
      decideSchedule(
        observe({
          schedule: schedule({ schedule: '@daily' }),
          lastClaim: lost,
          lastRunStatus: null,
          now: '2025-06-01T09:00:00Z',
        }),
      ).tick,
    ).toBeUndefined();
  });

  it('reports an expression it cannot evaluate (applied with kubectl) and does nothing else', () => {
    const decision = decideSchedule(
      observe({
        schedule: schedule({ schedule: '61 * * * *' }, { fresh: true }),
        now: '2025-06-01T08:00:00Z',
      }),
    );
    expect(decision.tick).toBeUndefined();
    expect(decision.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'InvalidSchedule',
      message: expect.stringContaining('minute'),
    });
    expect(decision.events).toEqual([expect.objectContaining({ reason: 'InvalidSchedule' })]);
  });
});
