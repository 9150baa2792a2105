/**
 * Schedules in the embedded deployment (what `npm start` runs), with the schedules' clock moved by hand:
 * a tick starts one async run with requestSource scheduler and the schedule id; Forbid and Replace
 * against a run that is still running; downtime with and without a starting deadline (one catch-up run,
 * never a burst); a schedule whose tool is archived or deleted pauses and resumes when it is back; the
 * run carries the rights of the key that wrote the schedule.
 */

import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import type { ToolSchedule } from '../../../contract/api/schedule.ts';
import type { ToolScheduleResource } from '../../../contract/resources/kinds.ts';
import { createEmbeddedKubeglueResources } from '../../../kube/resources/index.ts';
import { startTestApi, type TestApi, waitForRun } from '../../support/embedded.ts';
import { useTempDir } from '../../support/fixture.ts';
import { useHttpTarget } from '../../support/http-target.ts';
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

const target = useHttpTarget();
/** Requests to /hold wait here until the test lets them go: a run that stays running. */
const held: ServerResponse[] = [];
const base = clockStart();
const clock = new ManualClock(at(base, 0, 30));
let api: TestApi;

beforeAll(async () => {
  target.route('GET', '/hold', (_req, res) => {
    held.push(res);
    return undefined;
  });
  api = await startTestApi({}, { scheduleClock: clock });
  await api.call('POST', '/v1/systems', { body: { id: 'target', url: target.url } });
  await createEchoTool(api, 'echo');
  const slow = await api.call('POST', '/v1/tools', {
    body: { id: 'slow', steps: [{ id: 'wait', config: { systemId: 'target', url: '/hold' } }] },
  });
  expect(slow.status).toBe(201);
}, 60_000);

afterEach(async () => {
  // Every schedule goes, so the next test's ticks start only its own runs; held runs end.
  const { body } = await api.call<{ data: { id: string; toolId: string }[] }>(
    'GET',
    '/v1/schedules?limit=100',
  );
  for (const schedule of body.data) {
    await api.call('DELETE', `/v1/tools/${schedule.toolId}/schedules/${schedule.id}`);
  }
  for (const res of held.splice(0)) res.end('{"done":true}');
});

afterAll(async () => {
  await api?.stop();
});

/** The clock at `minutes` past the base plus 1 s (each test's ticks are later than the last's). */
let minute = 0;
function nextTick(step = 1): Date {
  minute += step;
  clock.set(at(base, minute, 1));
  return at(base, minute);
}

/** A schedule of the slow tool whose first tick's run is running (held at the target). */
async function runThatStaysRunning(concurrencyPolicy: string) {
  const created = await createSchedule(api, 'slow', { cronExpression: '* * * * *', concurrencyPolicy });
  const started = await untilTick(api, 'slow', created.id, nextTick());
  await until(
    'the run to reach the target',
    async () => held.length,
    (n) => n === 1,
  );
  return { created, started };
}

describe('a schedule in the embedded deployment', () => {
  it('starts one async run per tick, with requestSource scheduler and the schedule id', async () => {
    const created = await createSchedule(api, 'echo', {
      cronExpression: '* * * * *',
      timezone: 'Europe/Berlin',
      payload: { n: 7 },
    });
    expect(created).toMatchObject({ toolId: 'echo', enabled: true, status: 'active', payload: { n: 7 } });
    const tick = nextTick();
    const schedule = await untilTick(api, 'echo', created.id, tick);
    expect(schedule).toMatchObject({
      lastRunAt: tick.toISOString(),
      lastTick: { outcome: 'started' },
      statusReason: 'Scheduled',
    });
    const runs = await runsOf(api, 'echo', created.id);
    expect(runs).toHaveLength(1);
    const run = await waitForRun<Run>(api, schedule.lastRunId as string);
    expect(run).toMatchObject({
      runId: schedule.lastRunId,
      toolId: 'echo',
      status: 'success',
      requestSource: 'scheduler',
      scheduleId: created.id,
      toolPayload: { n: 7 },
      options: { async: true },
    });
    const results = await api.call<{ data: { data: unknown } }>('GET', `/v1/runs/${run.runId}/results`);
    expect(results.body.data.data).toEqual({ n: 7 });

    // The next tick, the next run; a disabled schedule starts none.
    const second = nextTick();
    await untilTick(api, 'echo', created.id, second);
    expect(await runsOf(api, 'echo', created.id)).toHaveLength(2);
    const disabled = await api.call('PUT', `/v1/tools/echo/schedules/${created.id}`, {
      body: { enabled: false },
    });
    expect(disabled.body).toMatchObject({ enabled: false, status: 'disabled', statusReason: 'Suspended' });
    nextTick();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await runsOf(api, 'echo', created.id)).toHaveLength(2);
  });

  it('Forbid skips a tick while the previous run still runs', async () => {
    const { created, started } = await runThatStaysRunning('Forbid');
    const second = nextTick();
    const skipped = await untilTick(api, 'slow', created.id, second);
    expect(skipped.lastTick).toEqual({
      at: second.toISOString(),
      outcome: 'skipped',
      reason: 'ConcurrencyForbid',
    });
    expect(skipped.activeRunIds).toEqual([started.lastRunId]);
    expect(skipped.lastRunId).toBe(started.lastRunId);
    expect(await runsOf(api, 'slow', created.id)).toHaveLength(1);
    // Once it ended, the next tick runs again.
    for (const res of held.splice(0)) res.end('{}');
    await waitForRun(api, started.lastRunId as string);
    const third = nextTick();
    const again = await untilTick(api, 'slow', created.id, third);
    expect(again.lastTick?.outcome).toBe('started');
    expect(await runsOf(api, 'slow', created.id)).toHaveLength(2);
  });

  it('Replace cancels the running run and starts the new one', async () => {
    const { created, started } = await runThatStaysRunning('Replace');
    const second = nextTick();
    const replaced = await untilTick(api, 'slow', created.id, second);
    expect(replaced.lastRunId).not.toBe(started.lastRunId);
    const old = await waitForRun<Run>(api, started.lastRunId as string);
    expect(old).toMatchObject({ status: 'aborted', error: 'Run was cancelled' });
    const runs = await runsOf(api, 'slow', created.id);
    expect(runs.map((run) => run.runId)).toEqual([started.lastRunId, replaced.lastRunId]);
    expect(replaced.activeRunIds).toEqual([replaced.lastRunId]);
  });

  it('pauses while its tool is archived or deleted, and resumes from the next tick when it is back', async () => {
    await createEchoTool(api, 'flaky');
    const created = await createSchedule(api, 'flaky', { cronExpression: '* * * * *' });
    const first = nextTick();
    await untilTick(api, 'flaky', created.id, first);

    await api.call('PUT', '/v1/tools/flaky', { body: { archived: true } });
    expect(await getSchedule(api, 'flaky', created.id)).toMatchObject({
      status: 'paused',
      statusReason: 'ToolArchived',
      statusMessage: expect.stringContaining('archived'),
    });
    nextTick();
    nextTick();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await runsOf(api, 'flaky', created.id)).toHaveLength(1);

    // Unarchived: the ticks that passed are not made up; the next one runs.
    await api.call('PUT', '/v1/tools/flaky', { body: { archived: false } });
    const resumed = await until(
      'the schedule to resume',
      () => getSchedule(api, 'flaky', created.id),
      (s) => s.lastTick?.reason === 'Resumed',
    );
    expect(resumed).toMatchObject({ status: 'active', lastTick: { outcome: 'skipped' } });
    expect(await runsOf(api, 'flaky', created.id)).toHaveLength(1);
    const after = nextTick();
    await untilTick(api, 'flaky', created.id, after);
    expect(await runsOf(api, 'flaky', created.id)).toHaveLength(2);

    // Deleted: paused too (no failed run each minute), and back when the tool is created again.
    await api.call('DELETE', '/v1/tools/flaky');
    expect(await getSchedule(api, 'flaky', created.id)).toMatchObject({
      status: 'paused',
      statusReason: 'ToolNotFound',
    });
    const listed = await api.call<{ data: { id: string; status: string }[] }>(
      'GET',
      '/v1/tools/flaky/schedules',
    );
    expect(listed.body.data).toEqual([expect.objectContaining({ id: created.id, status: 'paused' })]);
    nextTick();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { body } = await api.call<{ data: Run[] }>('GET', '/v1/runs?requestSources=scheduler&toolId=flaky');
    expect(body.data.filter((run) => run.status === 'failed')).toEqual([]);
    await createEchoTool(api, 'flaky');
    await until(
      'the schedule to resume',
      () => getSchedule(api, 'flaky', created.id),
      (s) => s.status === 'active' && s.lastTick?.reason === 'Resumed',
    );
    const back = nextTick();
    await untilTick(api, 'flaky', created.id, back);
    expect(await runsOf(api, 'flaky', created.id)).toHaveLength(3);
  });

  it('runs with the rights of the key that wrote it', async () => {
    const key = await api.call<{ id: string; key: string }>('POST', '/v1/api-keys', {
      body: {
        name: 'echo-only',
        scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
        toolIds: ['echo'],
      },
    });
    const created = await createSchedule(api, 'echo', { cronExpression: '* * * * *' }, key.body.key);
    expect(created.createdByUserId).toBe(key.body.id);
    const tick = nextTick();
    const schedule = await untilTick(api, 'echo', created.id, tick);
    const run = await api.call<Run>('GET', `/v1/runs/${schedule.lastRunId}`, { key: key.body.key });
    expect(run.body).toMatchObject({
      userId: key.body.id,
      requestSource: 'scheduler',
      scheduleId: created.id,
    });
    // The key's tool limit travels with the run (as with hooks and chains).
    const stored = await api.embedded.store.getRun(schedule.lastRunId as string);
    expect(stored?.allowedToolIds).toEqual(['echo']);
  });
});

describe('what holds a schedule back, looked at before every tick', () => {
  const readyOf = (resource: ToolScheduleResource | undefined) =>
    resource?.status?.conditions?.find((c) => c.type === 'Ready');
  /** The ToolSchedule as kubectl reads it, once the operator's Ready condition has `reason`. */
  const untilReady = (name: string, reason: string) =>
    until(
      `the Ready condition of ${name} to say ${reason}`,
      () => createEmbeddedKubeglueResources(api.embedded.store.resources, 'default').toolSchedules.get(name),
      (resource) => readyOf(resource)?.reason === reason,
    );

  it('starts no run once the key it runs as is revoked, says why, and runs again when a key takes it over', async () => {
    const key = await api.call<{ id: string; key: string }>('POST', '/v1/api-keys', {
      body: {
        name: 'revoked-later',
        scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
        toolIds: ['echo'],
      },
    });
    const created = await createSchedule(api, 'echo', { cronExpression: '* * * * *' }, key.body.key);
    await untilTick(api, 'echo', created.id, nextTick());
    expect(await runsOf(api, 'echo', created.id)).toHaveLength(1);

    expect((await api.call('DELETE', `/v1/api-keys/${key.body.id}`)).status).toBe(200);
    // REST says so at once; the operator, at the next tick, before it would start a run.
    expect(await getSchedule(api, 'echo', created.id)).toMatchObject({
      enabled: true,
      status: 'paused',
      statusReason: 'KeyRevoked',
      statusMessage: expect.stringContaining(`'${key.body.id}'`),
    });
    nextTick();
    const held = await untilReady(created.id, 'KeyRevoked');
    expect(readyOf(held)).toMatchObject({ status: 'False', message: expect.stringContaining('was revoked') });
    expect(await runsOf(api, 'echo', created.id)).toHaveLength(1);

    // A key that may run the tool takes the schedule over by changing it: its runs carry that key's rights.
    const takenOver = await api.call<ToolSchedule>('PUT', `/v1/tools/echo/schedules/${created.id}`, {
      body: { enabled: true },
    });
    expect(takenOver.body).toMatchObject({ status: 'active', createdByUserId: expect.any(String) });
    expect(takenOver.body.createdByUserId).not.toBe(key.body.id);
    await untilReady(created.id, 'Scheduled');
    const ran = await untilTick(api, 'echo', created.id, nextTick());
    expect(ran.lastTick?.outcome).toBe('started');
    const runs = await runsOf(api, 'echo', created.id);
    expect(runs.map((run) => run.userId)).toEqual([key.body.id, takenOver.body.createdByUserId]);
  });

  it("pauses when its tool's inputSchema comes to refuse its payload, instead of failing at every tick", async () => {
    const tool = (type: string) => ({
      inputSchema: { type: 'object', properties: { n: { type } }, required: ['n'] },
      steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => s.n' } }],
    });
    expect((await api.call('POST', '/v1/tools', { body: { id: 'shaped', ...tool('number') } })).status).toBe(
      201,
    );
    const created = await createSchedule(api, 'shaped', { cronExpression: '* * * * *', payload: { n: 1 } });
    await untilTick(api, 'shaped', created.id, nextTick());

    expect((await api.call('PUT', '/v1/tools/shaped', { body: tool('string') })).status).toBe(200);
    expect(await getSchedule(api, 'shaped', created.id)).toMatchObject({
      status: 'paused',
      statusReason: 'InputsInvalid',
      statusMessage: expect.stringMatching(/inputSchema.*\bn\b/),
    });
    nextTick();
    await untilReady(created.id, 'InputsInvalid');
    const runs = await runsOf(api, 'shaped', created.id);
    expect(runs.map((run) => run.status)).toEqual(['success']);

    // The tool accepts the payload again: the schedule resumes by itself, from its next tick.
    expect((await api.call('PUT', '/v1/tools/shaped', { body: tool('number') })).status).toBe(200);
    await untilReady(created.id, 'Scheduled');
    await untilTick(api, 'shaped', created.id, nextTick());
    expect(await runsOf(api, 'shaped', created.id)).toHaveLength(2);
  });

  it('lists in activeRunIds only the runs that are running', async () => {
    const created = await createSchedule(api, 'echo', { cronExpression: '* * * * *' });
    const schedule = await untilTick(api, 'echo', created.id, nextTick());
    const run = await waitForRun<Run>(api, schedule.lastRunId as string);
    expect(run.status).toBe('success');
    expect((await getSchedule(api, 'echo', created.id)).activeRunIds).toEqual([]);
    const { body } = await api.call<{ data: ToolSchedule[] }>('GET', '/v1/tools/echo/schedules');
    expect(body.data.find((s) => s.id === created.id)?.activeRunIds).toEqual([]);
  });
});

describe('a schedule across downtime', () => {
  const dataDir = useTempDir('kubeglue-schedules-');

  /**
   * Starts, creates `schedule` (every 5 minutes) at the base and stops; starts again 2 h 2 min later, when 24
   * ticks have passed, waits for it to decide on the latest, 2:00, and hands `check` the schedule then and
   * a reader of its runs; stops the server again.
   */
  async function afterDowntime(
    schedule: Record<string, unknown>,
    check: (back: { schedule: ToolSchedule; runs: () => Promise<Run[]> }) => Promise<void>,
  ): Promise<void> {
    const toolId = `tool-${schedule.id}`;
    const before = await startTestApi(
      {},
      { dataDir: dataDir.path, scheduleClock: new ManualClock(at(base, 0, 30)) },
    );
    await createEchoTool(before, toolId).catch(() => {});
    const created = await createSchedule(before, toolId, { cronExpression: '*/5 * * * *', ...schedule });
    await until(
      'the operator to look at it',
      () => getSchedule(before, toolId, created.id),
      (s) => s.statusReason === 'Scheduled',
    );
    await before.embedded.close();
    const after = await startTestApi(
      {},
      { dataDir: dataDir.path, scheduleClock: new ManualClock(at(base, 122)) },
    );
    try {
      const latest = await untilTick(after, toolId, created.id, at(base, 120));
      await check({ schedule: latest, runs: () => runsOf(after, toolId, created.id) });
    } finally {
      await after.embedded.close();
    }
  }

  it('without a deadline: one catch-up run for the latest missed tick, never a burst', async () => {
    await afterDowntime({ id: 'no-deadline' }, async ({ schedule, runs }) => {
      expect(schedule.lastTick).toMatchObject({ at: at(base, 120).toISOString(), outcome: 'started' });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await runs()).toHaveLength(1);
    });
  });

  it('with a deadline: a missed tick later than it is recorded as missed and does not run', async () => {
    await afterDowntime({ id: 'deadline', startingDeadlineSeconds: 60 }, async ({ schedule, runs }) => {
      expect(schedule.lastTick).toEqual({
        at: at(base, 120).toISOString(),
        outcome: 'missed',
        reason: 'DeadlineExceeded',
      });
      expect(await runs()).toHaveLength(0);
    });
  });

  it('with a deadline: a missed tick still within it runs once', async () => {
    await afterDowntime({ id: 'within', startingDeadlineSeconds: 300 }, async ({ schedule, runs }) => {
      expect(schedule.lastTick?.outcome).toBe('started');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await runs()).toHaveLength(1);
    });
  });
});
