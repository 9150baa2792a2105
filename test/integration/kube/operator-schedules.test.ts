/**
 * ToolSchedules on a real kube-apiserver: created as kubectl creates them (the manifest POSTed as is, the
 * API server applying the CRD's defaults and schema), reconciled by the operator's schedule controller
 * running with the operator's RBAC identity: status, conditions and Events, a tick starting a run in
 * the store with requestSource scheduler and the schedule id, and what the API server and the
 * reconciler refuse.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ToolResource, ToolScheduleResource } from '../../../contract/resources/kinds.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import {
  type ClusterTransport,
  createClusterResources,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type ResourceClients,
} from '../../../kube/resources/index.ts';
import { ClusterSecretStore } from '../../../kube/secrets/cluster.ts';
import type { Event } from '../../../kube/types.ts';
import { createClusterRunStarters } from '../../../operator/cluster-runs.ts';
import { createEventRecorder } from '../../../operator/events.ts';
import { ScheduleController } from '../../../operator/schedule/controller.ts';
import { scheduledRunId } from '../../../schedules/ticks.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { type OperatorKinds, operatorCluster, waitFor } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { ManualClock } from '../../support/manual-clock.ts';

const REPO = join(import.meta.dirname, '../../..');

describeKube('the ToolSchedule controller on Kubernetes', () => {
  const bed = useKubeTestBed('operator-schedules', { crds: true });
  let resources: ResourceClients<OperatorKinds>;
  let operatorTransport: ClusterTransport;
  let store: Store;
  let controller: ScheduleController;
  let starters: Awaited<ReturnType<typeof createClusterRunStarters>>;
  // The clock starts at the real time: the API server stamps creations with it.
  const clock = new ManualClock(new Date());
  const collection = () => `/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/toolschedules`;

  beforeAll(async () => {
    ({ transport: operatorTransport, resources } = await operatorCluster(bed));
    store = await openStore({ driver: 'sqlite', path: ':memory:' });
    starters = await createClusterRunStarters({
      store,
      resources,
      secrets: new ClusterSecretStore({ secrets: resources.secrets, namespace: bed.namespace.name }),
      masterKey: Buffer.alloc(32, 7),
      urlFor: (runId, fileKey) => `http://files/${runId}/${fileKey}`,
      executor: 'operator/test',
    });
    controller = new ScheduleController({
      toolSchedules: resources.toolSchedules,
      tools: resources.tools,
      store,
      runs: starters.scheduled,
      events: createEventRecorder({ sink: resources.events }),
      identity: 'operator/test',
      clock,
    });
    await controller.start();
    const tool: ToolResource = {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'Tool',
      metadata: { name: 'echo' },
      spec: {
        steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => s' } }],
      } as ToolResource['spec'],
    };
    // Tools are the API's to write; the operator only reads them.
    const admin = createClusterResources<KubeglueKinds>(bed.transport, {
      namespace: bed.namespace.name,
      kinds: KUBEGLUE_KIND_SPECS,
    });
    await admin.tools.create(tool);
    await admin.tools.create({
      ...tool,
      metadata: { name: 'typed' },
      spec: {
        ...tool.spec,
        inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await controller?.stop();
    await starters?.close();
    await store?.close();
    await operatorTransport?.close();
  });

  const ready = (schedule: ToolScheduleResource | undefined): Condition | undefined =>
    schedule?.status?.conditions?.find((c) => c.type === 'Ready');
  const scheduleWhen = (name: string, what: string, ok: (s: ToolScheduleResource | undefined) => boolean) =>
    waitFor(what, () => resources.toolSchedules.get(name), ok);
  /** The Events of an object, as `kubectl describe` lists them (read as the admin). */
  const eventsOf = async (name: string) => {
    const { body } = await bed.kube.request(`/api/v1/namespaces/${bed.namespace.name}/events`);
    return (body as { items: Event[] }).items.filter((event) => event.involvedObject?.name === name);
  };

  it('the example manifest is accepted by the API server, with its defaults', async () => {
    const manifest = parse(await readFile(join(REPO, 'examples', 'toolschedule.yaml'), 'utf8'));
    const created = await bed.kube.request(collection(), { method: 'POST', body: manifest });
    expect(created.status).toBe(201);
    expect((created.body as ToolScheduleResource).spec).toMatchObject({
      toolId: 'list-posts',
      timeZone: 'Europe/Berlin',
      suspend: false,
      concurrencyPolicy: 'Forbid',
    });
    // Its tool does not exist here: the schedule pauses with a reason, it does not fail every tick.
    const paused = await scheduleWhen(
      'list-posts-weekdays',
      'Ready=False',
      (s) => ready(s)?.status === 'False',
    );
    expect(ready(paused)).toMatchObject({
      reason: 'ToolNotFound',
      message: expect.stringContaining('does not exist'),
    });
  });

  it('reconciles a schedule created with kubectl and starts a run at its tick', async () => {
    const created = await bed.kube.request(collection(), {
      method: 'POST',
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolSchedule',
        metadata: { name: 'every-minute' },
        spec: { toolId: 'echo', schedule: '* * * * *', inputs: { hello: 'world' } },
      },
    });
    expect(created.status).toBe(201);
    expect((created.body as ToolScheduleResource).spec).toMatchObject({
      timeZone: 'UTC',
      suspend: false,
      concurrencyPolicy: 'Allow',
    });
    const scheduled = await scheduleWhen('every-minute', 'Ready', (s) => ready(s)?.status === 'True');
    expect(ready(scheduled)).toMatchObject({ reason: 'Scheduled', observedGeneration: 1 });
    const next = scheduled?.status?.nextScheduleTime as string;
    expect(Date.parse(next) % 60_000).toBe(0);

    clock.set(new Date(Date.parse(next) + 1_000));
    const ran = await scheduleWhen('every-minute', 'a run', (s) => s?.status?.lastRunId !== undefined);
    expect(ran?.status).toMatchObject({
      lastScheduleTime: next,
      lastTick: { time: next, outcome: 'Started' },
      nextScheduleTime: new Date(Date.parse(next) + 60_000).toISOString().replace('.000Z', 'Z'),
    });
    const run = await store.getRun(ran?.status?.lastRunId as string);
    expect(run).toMatchObject({
      toolId: 'echo',
      status: 'running',
      requestSource: 'scheduler',
      scheduleId: 'every-minute',
      toolPayload: { hello: 'world' },
    });
    const events = await waitFor(
      'the RunStarted Event',
      () => eventsOf('every-minute'),
      (list) => list.some((e) => e.reason === 'RunStarted'),
    );
    expect(events.find((e) => e.reason === 'RunStarted')?.message).toContain(run?.runId);
  });

  it('starts no run at the tick after the key it runs as was revoked: Ready=False KeyRevoked and a Paused Event', async () => {
    await store.insertApiKey({
      id: 'key-revoked-later',
      name: 'revoked later',
      keyHash: 'not-a-real-hash',
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
      toolIds: ['echo'],
      systemIds: null,
      admin: false,
      createdAt: new Date().toISOString(),
    });
    const created = await bed.kube.request(collection(), {
      method: 'POST',
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolSchedule',
        metadata: { name: 'keyed' },
        spec: {
          toolId: 'echo',
          schedule: '* * * * *',
          runAs: { userId: 'key-revoked-later', toolIds: ['echo'] },
        },
      },
    });
    expect(created.status).toBe(201);
    const scheduled = await scheduleWhen('keyed', 'Ready', (s) => ready(s)?.status === 'True');
    const next = scheduled?.status?.nextScheduleTime as string;
    // The shared clock may be past a tick since its creation already: that one ran while the key was valid.
    const before = scheduled?.status?.lastRunId;

    expect(await store.revokeApiKey('key-revoked-later')).toBe(true);
    clock.set(new Date(Date.parse(next) + 1_000));
    const held = await scheduleWhen('keyed', 'Ready=False', (s) => ready(s)?.status === 'False');
    expect(ready(held)).toMatchObject({
      reason: 'KeyRevoked',
      message: expect.stringContaining("the API key 'key-revoked-later' the schedule runs as was revoked"),
    });
    expect(held?.status?.lastRunId).toBe(before);
    const uid = held?.metadata.uid as string;
    expect(await store.getRun(scheduledRunId(uid, new Date(next)))).toBeUndefined();
    const events = await waitFor(
      'the Paused Event',
      () => eventsOf('keyed'),
      (list) => list.some((e) => e.reason === 'Paused'),
    );
    expect(events.find((e) => e.reason === 'Paused')).toMatchObject({
      type: 'Warning',
      message: expect.stringContaining('was revoked'),
    });
  });

  it("reports inputs its tool's inputSchema refuses as Ready=False InputsInvalid, starting no run", async () => {
    const created = await bed.kube.request(collection(), {
      method: 'POST',
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolSchedule',
        metadata: { name: 'typed-without-n' },
        spec: { toolId: 'typed', schedule: '* * * * *', inputs: { n: 'one' } },
      },
    });
    expect(created.status).toBe(201);
    const held = await scheduleWhen('typed-without-n', 'Ready=False', (s) => ready(s)?.status === 'False');
    expect(ready(held)).toMatchObject({
      reason: 'InputsInvalid',
      message: expect.stringContaining("inputSchema of tool 'typed'"),
    });
  });

  it('refuses a malformed expression at the API server, and reports one it cannot evaluate', async () => {
    const sixFields = await bed.kube.request(collection(), {
      method: 'POST',
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolSchedule',
        metadata: { name: 'six-fields' },
        spec: { toolId: 'echo', schedule: '0 * * * * *' },
      },
    });
    expect(sixFields.status).toBe(422);
    const created = await bed.kube.request(collection(), {
      method: 'POST',
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolSchedule',
        metadata: { name: 'minute-61' },
        spec: { toolId: 'echo', schedule: '61 * * * *' },
      },
    });
    expect(created.status).toBe(201);
    const invalid = await scheduleWhen('minute-61', 'Ready=False', (s) => ready(s)?.status === 'False');
    expect(ready(invalid)).toMatchObject({
      reason: 'InvalidSchedule',
      message: expect.stringContaining('minute'),
    });
    const events = await waitFor(
      'the InvalidSchedule Event',
      () => eventsOf('minute-61'),
      (list) => list.length > 0,
    );
    expect(events[0]).toMatchObject({ type: 'Warning', reason: 'InvalidSchedule' });
  });
});
