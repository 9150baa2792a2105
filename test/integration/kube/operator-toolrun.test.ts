/**
 * The ToolRun controller with the PodLauncher on a real API server: runner Pods run by the process
 * kubelet as a tiny script standing in for the runner (it talks to the real internal API, with the
 * per-run token it gets from its Secret), outcomes decided from the store and the Pod.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defaultOperatorSettings, type OperatorSettings } from '../../../config/config.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { RunReason, ToolRunConditionType, ToolRunEventReason } from '../../../contract/reasons.ts';
import type { ToolRunResource } from '../../../contract/resources/kinds.ts';
import { RECORDED_FINALIZER, RUN_ID_KEY } from '../../../contract/resources/labels.ts';
import type { KubeglueKinds } from '../../../kube/resources/index.ts';
import {
  createClusterResources,
  EVENT_KIND,
  KUBEGLUE_KIND_SPECS,
  POD_KIND,
  type ResourceClients,
  ResourceError,
  SECRET_KIND,
} from '../../../kube/resources/index.ts';
import type { Event, Pod, Secret } from '../../../kube/types.ts';
import { createPodLauncher } from '../../../operator/app.ts';
import { createEventRecorder } from '../../../operator/events.ts';
import { runnerPodName, runTokenSecretName } from '../../../operator/launchers/launcher.ts';
import { ToolRunController } from '../../../operator/toolrun/controller.ts';
import { hashRunToken } from '../../../runs/run-token.ts';
import { runStats } from '../../../runs/stats.ts';
import { toolRunFor, toolRunName } from '../../../runs/toolrun.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { waitFor } from '../../support/kube/kubeglue.ts';
import { type ProcessKubelet, startProcessKubelet } from '../../support/kube/process-kubelet/kubelet.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { runningRun, useTestStore } from '../../support/store.ts';

const IMAGE = 'kubeglue-test/fake-runner:1';
const exec = promisify(execFile);

/** Stands in for `kubeglue runner`: the run id's first word picks what it does. */
const SCRIPT = (protocolModule: string) => `
import { writeFileSync } from 'node:fs';
import { encodeSummary } from ${JSON.stringify(protocolModule)};
const env = process.env;
const runId = env.KUBEGLUE_RUN_ID;
const attempt = Number(env.KUBEGLUE_RUN_ATTEMPT);
const base = env.KUBEGLUE_INTERNAL_URL + '/internal/v1/runs/' + encodeURIComponent(runId);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const call = async (method, path, body) => {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: 'Bearer ' + env.KUBEGLUE_RUN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(method + ' ' + path + ': HTTP ' + response.status + ' ' + (await response.text()));
  return response.json();
};
const summary = (status, extra = {}) =>
  writeFileSync(env.KUBEGLUE_TERMINATION_MESSAGE_PATH, encodeSummary({ v: 1, runId, status, resultStored: false, ...extra }));
/** Heartbeats for ms; true when the answer says cancel. */
async function beat(ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if ((await call('POST', '/heartbeat', { attempt })).cancel) return true;
    await sleep(200);
  }
  return false;
}
async function succeed() {
  const ack = await call('PUT', '/result', {
    attempt,
    result: { status: 'success', data: { ok: true }, stepResults: [{ stepId: 'a', success: true }], files: [] },
  });
  summary('success', { resultStored: ack.recorded });
  process.exit(0);
}
switch (runId.split('-')[0]) {
  case 'succeed': await beat(1200); await succeed(); break;
  case 'slow': await beat(4000); await succeed(); break;
  case 'summary': summary('failed', { error: 'step a: boom' }); process.exit(2);
  case 'crash': console.error('TypeError: boom in the runner'); process.exit(1);
  case 'cancel':
    if (await beat(60000)) { summary('aborted', { error: 'Run was cancelled' }); process.exit(0); }
    process.exit(3);
  case 'stubborn':
    process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
    setInterval(() => {}, 1000);
    break;
  case 'hold': await beat(600000); break;
  // Its first attempt runs until its Pod goes; a second one succeeds.
  case 'lost': if (attempt === 1) await beat(600000); else { await beat(300); await succeed(); } break;
  case 'silent': setInterval(() => {}, 1000); break;
}
`;

type Kinds = KubeglueKinds & { pods: Pod; secrets: Secret; events: Event };

const TOOL = { id: 't', steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }] };
/** The same with a step that changes data on its system: never executed twice. */
const MODIFYING_TOOL: JsonObject = {
  id: 't',
  steps: [{ id: 'a', modify: true, config: { type: 'transform', transformCode: '(s) => s' } }],
};

interface Operator {
  namespace: string;
  resources: ResourceClients<Kinds>;
  controller: ToolRunController;
  settings: OperatorSettings;
}

describeKube('the ToolRun controller on Kubernetes', () => {
  const bed = useKubeTestBed('operator-toolrun', { crds: true, namespace: false });
  const { store } = useTestStore('sqlite');
  let internal: InternalApiHarness;
  let kubelet: ProcessKubelet;
  const operators: Operator[] = [];
  let main: Operator;
  /** Namespaces of the scenarios that need their own operator (the kubelet serves a fixed list). */
  const spare: Record<'limit' | 'restart' | 'retention', string> = { limit: '', restart: '', retention: '' };

  async function startOperator(
    namespace: string,
    overrides: Partial<OperatorSettings> = {},
  ): Promise<Operator> {
    const resources = createClusterResources<Kinds>(bed.transport, {
      namespace,
      kinds: { ...KUBEGLUE_KIND_SPECS, pods: POD_KIND, secrets: SECRET_KIND, events: EVENT_KIND },
    });
    const settings = defaultOperatorSettings({
      runnerImage: IMAGE,
      internalUrl: internal.url,
      runnerTerminationGraceSeconds: 1,
      pendingTimeoutMs: 4_000,
      // Counted from the container's start until the first heartbeat: on a loaded 2-core machine the Pod's
      // node process can take more than 4 s to send it, and a read-only run was then started over twice.
      heartbeatStaleMs: 10_000,
      cancelGraceMs: 2_000,
      deadlineMarginSeconds: 1,
      resyncMs: 60_000,
      ...overrides,
    });
    const launcher = createPodLauncher({ pods: resources.pods, secrets: resources.secrets, store, settings });
    const controller = new ToolRunController({
      toolRuns: resources.toolRuns,
      store,
      launcher,
      events: createEventRecorder({ sink: resources.events }),
      settings,
      log: (line) => console.log(line),
    });
    await controller.start();
    const operator = { namespace, resources, controller, settings };
    operators.push(operator);
    return operator;
  }

  async function newNamespace(prefix: string): Promise<string> {
    return (await bed.createNamespace(prefix)).name;
  }

  /** A running run in the store and its ToolRun, as the outbox's start handler creates it. */
  async function startRun(
    op: Operator,
    runId: string,
    options: Record<string, unknown> = {},
    tool: JsonObject = TOOL,
  ): Promise<ToolRunResource> {
    // Started now, as accepted runs are: the ToolRun's duration is measured from it.
    const run = runningRun(runId, {
      toolId: 't',
      tool,
      options: { async: true, ...options },
      metadata: { startedAt: new Date().toISOString() },
    });
    await store.insertRun(run);
    return op.resources.toolRuns.create(toolRunFor(run, op.namespace));
  }

  const toolRunOf = (op: Operator, runId: string) => op.resources.toolRuns.get(toolRunName(runId));

  /** Sets spec.cancel as `kubectl edit` would: read, change, write; again when the operator wrote between. */
  async function requestCancel(op: Operator, runId: string): Promise<void> {
    for (;;) {
      const current = (await toolRunOf(op, runId)) as ToolRunResource;
      try {
        await op.resources.toolRuns.update({ ...current, spec: { ...current.spec, cancel: true } });
        return;
      } catch (error) {
        if (!(error instanceof ResourceError && error.reason === 'Conflict')) throw error;
      }
    }
  }

  /** The ToolRun once its status mirrors a terminal state and its finalizer is gone. */
  const finished = (op: Operator, runId: string, timeoutMs?: number) =>
    waitFor(
      `ToolRun of ${runId} to finish`,
      () => toolRunOf(op, runId),
      (toolRun) =>
        ['success', 'failed', 'aborted'].includes(toolRun?.status?.status ?? '') &&
        !toolRun?.metadata.finalizers?.includes(RECORDED_FINALIZER),
      timeoutMs,
    ) as Promise<ToolRunResource>;

  const running = (op: Operator, runId: string) =>
    waitFor(
      `ToolRun of ${runId} to run`,
      () => toolRunOf(op, runId),
      (toolRun) => toolRun?.status?.executionPhase === 'Running',
    );

  async function eventsOf(op: Operator, runId: string): Promise<Event[]> {
    const { items } = await op.resources.events.list();
    return items
      .filter((e) => e.involvedObject.name === toolRunName(runId))
      .sort((a, b) => (a.firstTimestamp ?? '').localeCompare(b.firstTimestamp ?? ''));
  }
  const reasons = (events: Event[]) => events.map((e) => e.reason);
  const condition = (toolRun: ToolRunResource | undefined, type: string) =>
    toolRun?.status?.conditions?.find((c) => c.type === type);
  /** Waits for the run to end, then checks how its ToolRun, its Succeeded condition and the store say it ended. */
  async function endsAs(runId: string, status: string, reason: string, error: string): Promise<void> {
    const toolRun = await finished(main, runId);
    expect(toolRun.status).toMatchObject({ status, reason, error });
    expect(condition(toolRun, ToolRunConditionType.Succeeded)).toMatchObject({ status: 'False', reason });
    expect(await store.getRun(runId)).toMatchObject({ status, error });
  }

  beforeAll(async () => {
    const script = join(bed.dir, 'fake-runner.mjs');
    await writeFile(
      script,
      SCRIPT(pathToFileURL(join(import.meta.dirname, '../../../contract/wire/runner.ts')).href),
    );
    internal = createInternalApi(store);
    await internal.listen();
    const mainNs = await newNamespace('operator-toolrun');
    for (const key of Object.keys(spare) as (keyof typeof spare)[]) {
      spare[key] = await newNamespace(`operator-${key}`);
    }
    kubelet = await startProcessKubelet({
      url: bed.kube.url,
      caPem: bed.kube.caPem,
      token: bed.kube.adminToken,
      nodeName: `operator-kubelet-${randomBytes(3).toString('hex')}`,
      namespaces: [mainNs, ...Object.values(spare)],
      images: { [IMAGE]: [process.execPath, script] },
      heartbeatMs: 1_000,
      stopGraceSeconds: 1,
    });
    main = await startOperator(mainNs);
  });

  afterAll(async () => {
    for (const op of operators) await op.controller.stop().catch(() => {});
    await kubelet?.stop();
    if (kubelet) await bed.kube.request(`/api/v1/nodes/${kubelet.nodeName}`, { method: 'DELETE' });
    await internal?.close();
  });

  it('runs a run to success: token Secret and Pod, status and conditions, events, cleanup', async () => {
    await startRun(main, 'succeed-1');
    const podName = runnerPodName(toolRunName('succeed-1'), 1);
    const pod = await waitFor(
      'the runner Pod',
      () => main.resources.pods.get(podName),
      (p) => p !== undefined,
    );
    expect(pod?.metadata.labels).toMatchObject({
      [RUN_ID_KEY]: 'succeed-1',
      'app.kubernetes.io/component': 'runner',
    });
    expect(pod?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ToolRun', controller: true });
    // The token: plain in a Secret the ToolRun owns, only its hash in the store.
    const secret = await main.resources.secrets.get(runTokenSecretName(toolRunName('succeed-1')));
    const token = Buffer.from(secret?.data?.token ?? '', 'base64').toString();
    expect(token.length).toBeGreaterThan(30);
    expect(await store.findRunnerAttemptByToken(hashRunToken(token))).toEqual({
      runId: 'succeed-1',
      attempt: 1,
    });

    const toolRun = await finished(main, 'succeed-1');
    expect(toolRun.status).toMatchObject({
      status: 'success',
      reason: RunReason.Succeeded,
      attempt: 1,
      podName,
      steps: [{ id: 'a', success: true }],
    });
    expect(toolRun.status?.error).toBeUndefined();
    // The runner beats for 1.2 s before it succeeds: seconds with a tenth, as the Duration column shows.
    expect(toolRun.status?.duration).toMatch(/^\d+(\.\d)?s$/);
    expect(toolRun.status?.durationMs).toBeGreaterThanOrEqual(1_200);
    const listed = await exec('kubectl', [
      ...['--kubeconfig', bed.kube.kubeconfigPath, '-n', main.namespace],
      ...['get', 'toolrun', toolRunName('succeed-1')],
    ]);
    const [header, row] = listed.stdout.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'TOOL', 'STATUS', 'SOURCE', 'DURATION', 'AGE']);
    expect(row?.split(/\s+/).slice(1, 5)).toEqual(['t', 'success', 'api', toolRun.status?.duration]);
    expect(condition(toolRun, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
    });
    expect(condition(toolRun, ToolRunConditionType.Admitted)).toMatchObject({
      status: 'True',
      reason: 'Admitted',
    });
    expect((await store.getRun('succeed-1'))?.status).toBe('success');
    // A succeeded runner Pod goes at once; the token Secret when the run ends.
    await waitFor(
      'the Pod to go',
      () => main.resources.pods.get(podName),
      (p) => p === undefined,
    );
    await waitFor(
      'the token Secret to go',
      () => main.resources.secrets.get(runTokenSecretName(toolRunName('succeed-1'))),
      (s) => s === undefined,
    );
    const events = await waitFor(
      'the events',
      () => eventsOf(main, 'succeed-1'),
      (e) => reasons(e).includes(ToolRunEventReason.PodDeleted),
    );
    expect(reasons(events)).toEqual(
      expect.arrayContaining(['Admitted', 'PodCreated', 'Running', 'Succeeded', 'Retained', 'PodDeleted']),
    );
    expect(events.every((e) => e.source?.component === 'kubeglue-operator')).toBe(true);
    expect(events.find((e) => e.reason === 'Succeeded')?.type).toBe('Normal');
  });

  it('fails a run from the runner’s termination summary and keeps the failed Pod', async () => {
    await startRun(main, 'summary-1');
    await endsAs('summary-1', 'failed', RunReason.RunnerFailed, 'step a: boom');
    const events = await waitFor(
      'events',
      () => eventsOf(main, 'summary-1'),
      (e) => reasons(e).includes('PodRetained'),
    );
    expect(events.find((e) => e.reason === ToolRunEventReason.PodFailed)).toMatchObject({
      type: 'Warning',
      message: 'step a: boom',
    });
    expect(await main.resources.pods.get(runnerPodName(toolRunName('summary-1'), 1))).toBeDefined();
  });

  it('fails a crashed runner with its exit code and the log tail', async () => {
    await startRun(main, 'crash-1');
    const toolRun = await finished(main, 'crash-1');
    expect(toolRun.status?.reason).toBe(RunReason.RunnerFailed);
    expect(toolRun.status?.error).toMatch(/^The runner exited with code 1: .*TypeError: boom in the runner/s);
  });

  it('fails an OOMKilled runner naming its memory limit', async () => {
    await startRun(main, 'hold-oom');
    await running(main, 'hold-oom');
    await kubelet.oomKill(main.namespace, runnerPodName(toolRunName('hold-oom'), 1));
    const toolRun = await finished(main, 'hold-oom');
    expect(toolRun.status).toMatchObject({
      status: 'failed',
      reason: RunReason.OOMKilled,
      error: 'The runner Pod was OOMKilled (memory limit 512Mi)',
    });
    expect(condition(toolRun, ToolRunConditionType.Succeeded)?.reason).toBe('OOMKilled');
  });

  it('gives a read-only run whose runner Pod is deleted before it reported a second Pod, which succeeds', async () => {
    await startRun(main, 'lost-deleted');
    await running(main, 'lost-deleted');
    await main.resources.pods.delete(runnerPodName(toolRunName('lost-deleted'), 1));
    const toolRun = await finished(main, 'lost-deleted');
    expect(toolRun.status).toMatchObject({
      status: 'success',
      attempt: 2,
      podName: runnerPodName(toolRunName('lost-deleted'), 2),
    });
    expect(await store.getRun('lost-deleted')).toMatchObject({ status: 'success', attempt: 2 });
    const events = await eventsOf(main, 'lost-deleted');
    expect(events.find((e) => e.reason === ToolRunEventReason.Retrying)?.message).toMatch(
      /runner Pod .*-a1 .*; the run is read-only, so it starts over: attempt 2 of at most 3/,
    );
  });

  it('fails a modifying run whose runner Pod is deleted before it reported, naming the cause', async () => {
    await startRun(main, 'lost-modifying', {}, MODIFYING_TOOL);
    await running(main, 'lost-modifying');
    await main.resources.pods.delete(runnerPodName(toolRunName('lost-modifying'), 1));
    const toolRun = await finished(main, 'lost-modifying');
    expect(toolRun.status).toMatchObject({ status: 'failed', reason: RunReason.PodLost, attempt: 1 });
    expect(toolRun.status?.error).toMatch(
      /^The runner Pod \S+-a1 (was deleted before the run finished|disappeared while the run was running .*) \(it modifies data, so it was not retried\)$/,
    );
    const run = await store.getRun('lost-modifying');
    expect(run?.status).toBe('failed');
    expect(run?.attempt ?? 1).toBe(1);
    expect(await main.resources.pods.get(runnerPodName(toolRunName('lost-modifying'), 2))).toBeUndefined();
  });

  it('starts a read-only run over in a new Pod when its Pod is evicted', async () => {
    await startRun(main, 'lost-evicted');
    await running(main, 'lost-evicted');
    await kubelet.evict(main.namespace, runnerPodName(toolRunName('lost-evicted'), 1));
    const toolRun = await finished(main, 'lost-evicted');
    expect(toolRun.status).toMatchObject({ status: 'success', attempt: 2 });
    expect(
      (await eventsOf(main, 'lost-evicted')).find((e) => e.reason === ToolRunEventReason.Retrying)?.message,
    ).toMatch(/^The runner Pod was evicted: The node was low on resource: memory\.; the run is read-only/);
  });

  it('fails a run whose Pod never starts after the pending timeout, and deletes the Pod', async () => {
    kubelet.neverStart((pod) => pod.metadata.labels?.[RUN_ID_KEY] === 'hold-pending');
    try {
      await startRun(main, 'hold-pending');
      const toolRun = await finished(main, 'hold-pending');
      expect(toolRun.status?.reason).toBe(RunReason.ImagePullFailed);
      expect(toolRun.status?.error).toMatch(
        /was pending for \d+ s: its image could not be pulled: ImagePullBackOff/,
      );
      await waitFor(
        'the Pod to go',
        () => main.resources.pods.get(runnerPodName(toolRunName('hold-pending'), 1)),
        (p) => p === undefined,
      );
    } finally {
      kubelet.neverStart(null);
    }
  });

  it('fails a run past its deadline (activeDeadlineSeconds = timeout + margin)', async () => {
    await startRun(main, 'hold-deadline', { timeout: 1_000 });
    const pod = await waitFor(
      'the Pod',
      () => main.resources.pods.get(runnerPodName(toolRunName('hold-deadline'), 1)),
      (p) => p !== undefined,
    );
    expect(pod?.spec.activeDeadlineSeconds).toBe(2);
    const toolRun = await finished(main, 'hold-deadline');
    expect(toolRun.status?.reason).toBe(RunReason.DeadlineExceeded);
    expect(toolRun.status?.error).toContain('exceeded its deadline');
  });

  it('fails a modifying run whose runner stops sending heartbeats while its Pod is Running', async () => {
    await startRun(main, 'silent-1', {}, MODIFYING_TOOL);
    const toolRun = await finished(main, 'silent-1', 60_000);
    expect(toolRun.status?.reason).toBe(RunReason.HeartbeatStale);
    await waitFor(
      'the Pod to go',
      () => main.resources.pods.get(runnerPodName(toolRunName('silent-1'), 1)),
      (p) => p === undefined,
    );
  }, 90_000);

  it('cancels through spec.cancel: aborted in the store, the runner stops by itself', async () => {
    await startRun(main, 'cancel-1');
    await running(main, 'cancel-1');
    await requestCancel(main, 'cancel-1');
    await endsAs('cancel-1', 'aborted', RunReason.Cancelled, 'Run was cancelled');
    // Cooperative: the runner learnt it from its heartbeat answer and exited 0 within the grace period.
    const pod = await kubelet.waitFor(
      main.namespace,
      runnerPodName(toolRunName('cancel-1'), 1),
      (p) => p === undefined || p.status?.phase === 'Succeeded',
    );
    if (pod) expect(pod.status?.containerStatuses?.[0]?.state.terminated?.exitCode).toBe(0);
    expect(reasons(await eventsOf(main, 'cancel-1'))).toContain('Cancelled');
  });

  it('deletes the Pod of a runner that ignores the cancel once the grace period is over', async () => {
    await startRun(main, 'stubborn-1');
    const podName = runnerPodName(toolRunName('stubborn-1'), 1);
    await waitFor(
      'the Pod to run',
      async () => kubelet.pod(main.namespace, podName),
      (p) => p?.status?.phase === 'Running',
    );
    await requestCancel(main, 'stubborn-1');
    await finished(main, 'stubborn-1');
    await waitFor(
      'the Pod to go',
      () => main.resources.pods.get(podName),
      (p) => p === undefined,
      15_000,
    );
    const events = await eventsOf(main, 'stubborn-1');
    expect(reasons(events)).toContain(ToolRunEventReason.Stopping);
  });

  it('treats `kubectl delete toolrun` of a live run as a cancel; the finalizer holds until the store is terminal', async () => {
    await startRun(main, 'cancel-delete');
    await running(main, 'cancel-delete');
    await main.resources.toolRuns.delete(toolRunName('cancel-delete'));
    await waitFor(
      'the ToolRun to go',
      () => toolRunOf(main, 'cancel-delete'),
      (t) => t === undefined,
    );
    expect(await store.getRun('cancel-delete')).toMatchObject({
      status: 'aborted',
      error: 'Run was cancelled',
    });
  });

  it('admits runs up to the limit, in creation order; the others wait with their position', async () => {
    const op = await startOperator(spare.limit, { maxAsyncRuns: 1 });
    await startRun(op, 'slow-a');
    await running(op, 'slow-a');
    await startRun(op, 'succeed-b');
    const queued = await waitFor(
      'b to be queued',
      () => toolRunOf(op, 'succeed-b'),
      (t) => condition(t, ToolRunConditionType.Admitted)?.reason === 'AdmissionLimit',
    );
    expect(condition(queued, ToolRunConditionType.Admitted)).toMatchObject({ status: 'False' });
    expect(condition(queued, ToolRunConditionType.Admitted)?.message).toContain(
      'position 1 in the queue; 1 of 1 runs executing',
    );
    expect(await op.resources.pods.get(runnerPodName(toolRunName('succeed-b'), 1))).toBeUndefined();
    // The API's queue (GET /v1/stats/runs) reads the same: b waits with its ToolRun's message, a (its runner
    // Pod holding the attempt) does not.
    const now = new Date();
    const { queue } = await runStats(
      { store, toolRuns: op.resources.toolRuns },
      { from: new Date(now.getTime() - 60_000).toISOString(), to: now.toISOString(), bucketSeconds: 60 },
      { toolIds: null },
    );
    expect(queue.runs.find((run) => run.runId === 'succeed-b')?.admission).toBe(
      condition(queued, ToolRunConditionType.Admitted)?.message,
    );
    expect(queue.runs.map((run) => run.runId)).not.toContain('slow-a');
    const a = await finished(op, 'slow-a');
    const b = await finished(op, 'succeed-b');
    expect(b.status?.status).toBe('success');
    expect(Date.parse(b.status?.startedAt ?? '')).toBeGreaterThanOrEqual(
      Date.parse(a.status?.completedAt ?? '') - 1000,
    );
    expect(reasons(await eventsOf(op, 'succeed-b'))).toEqual(expect.arrayContaining(['Queued', 'Admitted']));
  });

  it('a restarted operator picks up the runs the old one left: Pods found, or created when missing', async () => {
    const op = await startOperator(spare.restart);
    await startRun(op, 'slow-restart');
    await running(op, 'slow-restart');
    await op.controller.stop();
    // Admitted by the old operator, which stopped before it created the Pod.
    const orphan = await startRun(op, 'succeed-orphan');
    await op.resources.toolRuns.patchStatus(orphan.metadata.name, {
      status: 'running',
      conditions: [
        {
          type: ToolRunConditionType.Admitted,
          status: 'True',
          reason: 'Admitted',
          message: 'The run holds an execution slot',
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
    });
    const restarted = await startOperator(op.namespace);
    // The running Pod is adopted, not created again (its name is fixed per attempt).
    const pods = await restarted.resources.pods.list({ labelSelector: { [RUN_ID_KEY]: 'slow-restart' } });
    expect(pods.items.map((p) => p.metadata.name)).toEqual([runnerPodName(toolRunName('slow-restart'), 1)]);
    expect((await finished(restarted, 'slow-restart')).status?.status).toBe('success');
    expect((await finished(restarted, 'succeed-orphan')).status).toMatchObject({
      status: 'success',
      attempt: 1,
    });
  });

  it('deletes finished ToolRuns after the retention', async () => {
    const op = await startOperator(spare.retention, { toolRunRetentionMs: 2_000 });
    await startRun(op, 'succeed-ttl');
    await finished(op, 'succeed-ttl');
    await waitFor(
      'the ToolRun to go',
      () => toolRunOf(op, 'succeed-ttl'),
      (t) => t === undefined,
      15_000,
    );
    expect((await store.getRun('succeed-ttl'))?.status).toBe('success');
    // The event is recorded once the delete is done: it may come a moment after the ToolRun went.
    await waitFor(
      'the Deleted event',
      async () => reasons(await eventsOf(op, 'succeed-ttl')),
      (seen) => seen.includes(ToolRunEventReason.Deleted),
    );
  });
});
