/**
 * A schedule whose run cannot be started for a while (the store behind the run service unreachable) is a
 * failed background job, not a crash: the failure is recorded as a ReconcileFailed Event on the
 * schedule, counted in the job status, and retried with backoff, and the tick's run starts once the
 * cause is gone, exactly once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ToolResource, ToolScheduleResource } from '../../../contract/resources/kinds.ts';
import {
  createEmbeddedResources,
  EVENT_KIND,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type ResourceClients,
} from '../../../kube/resources/index.ts';
import type { Event } from '../../../kube/types.ts';
import { createEventRecorder } from '../../../operator/events.ts';
import { ScheduleController } from '../../../operator/schedule/controller.ts';
import type { ScheduledRunStarter } from '../../../operator/schedule/execute.ts';
import { JobSupervisor } from '../../../platform/supervisor.ts';
import type { ScheduledRun } from '../../../runs/service.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { ManualClock } from '../../support/manual-clock.ts';
import { at, clockStart, until } from '../../support/schedules.ts';

const base = clockStart();
const clock = new ManualClock(at(base, 0, 30));
let store: Store;
let resources: ResourceClients<KubeglueKinds & { events: Event }>;
let controller: ScheduleController;
const jobs = new JobSupervisor({ settings: { maxFailures: 5, retryDelayMs: 50 }, log: () => {} });
const started: ScheduledRun[] = [];
let unreachable = 2;

/** Refuses the first starts as an unreachable store would; then stores the run as accepting it does. */
const runs: ScheduledRunStarter = {
  start: async (run) => {
    if (unreachable > 0) {
      unreachable--;
      throw new Error('connect ECONNREFUSED 10.0.0.5:5432 (postgres://kubeglue:s3cret@db/kubeglue)');
    }
    started.push(run);
    await store.insertRun({
      runId: run.runId,
      toolId: run.toolId,
      status: 'running',
      requestSource: 'scheduler',
      systemIds: [],
      scheduleId: run.scheduleId,
      metadata: { startedAt: new Date().toISOString() },
    });
  },
  recordRefused: async () => {},
  cancel: async () => {},
};

beforeAll(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  resources = createEmbeddedResources(store.resources, {
    namespace: 'default',
    kinds: { ...KUBEGLUE_KIND_SPECS, events: EVENT_KIND },
    now: () => clock.now(),
  });
  controller = new ScheduleController({
    toolSchedules: resources.toolSchedules,
    tools: resources.tools,
    store,
    runs,
    events: createEventRecorder({ sink: resources.events }),
    jobs,
    identity: 'test',
    clock,
  });
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await store?.close();
});

it('a run that cannot start yet is retried with backoff, recorded, and started once', async () => {
  await resources.tools.create({
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'Tool',
    metadata: { name: 'echo' },
    spec: { steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }] },
  } as ToolResource);
  await resources.toolSchedules.create({
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolSchedule',
    metadata: { name: 'every-minute' },
    spec: { toolId: 'echo', schedule: '* * * * *' },
  } as ToolScheduleResource);
  await until(
    'the first look',
    () => resources.toolSchedules.get('every-minute'),
    (s) => s?.status?.nextScheduleTime !== undefined,
  );
  clock.set(at(base, 1, 1));
  const done = await until(
    'the run to start',
    () => resources.toolSchedules.get('every-minute'),
    (s) => s?.status?.lastRunId !== undefined,
  );
  expect(started.map((run) => run.runId)).toEqual([done?.status?.lastRunId]);
  const { items } = await resources.events.list();
  const failures = items.filter((event) => event.reason === 'ReconcileFailed');
  expect(failures.length).toBeGreaterThan(0);
  // Redacted: the URL's password never reaches the Event.
  expect(failures[0]?.message).toContain('ECONNREFUSED');
  expect(failures[0]?.message).not.toContain('s3cret');
  expect(jobs.status().find((job) => job.job === 'schedule')).toMatchObject({ failures: 2 });
});
