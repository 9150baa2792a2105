/**
 * Figures of the Kubernetes deployment, against a real kube-apiserver from KUBEBUILDER_ASSETS (skipped
 * without it), a throwaway Postgres and the process kubelet:
 * - operator.async_dispatch: async run accepted → runner Pod → success, p50/p99, with the cost of
 *   starting a runner process measured apart (so our part is visible);
 * - operator.reconcile_rate: ToolRuns reconciled per second with 1 000 queued.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultOperatorSettings, loadSettings } from '../config/config.ts';
import type { ToolRunResource } from '../contract/resources/kinds.ts';
import { RUN_ID_KEY } from '../contract/resources/labels.ts';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import {
  ClusterTransport,
  createClusterKubeglueResources,
  createClusterResources,
  KUBEGLUE_KIND_SPECS,
  POD_KIND,
  SECRET_KIND,
} from '../kube/resources/index.ts';
import { createPodLauncher, startOperator } from '../operator/app.ts';
import { toolRunFor } from '../runs/toolrun.ts';
import { openStore, type StoredRun } from '../store/index.ts';
import { KUBEGLUE_BIN } from '../test/support/cli.ts';
import { createTestNamespace } from '../test/support/kube/client.ts';
import { type ControlPlane, startControlPlane } from '../test/support/kube/control-plane.ts';
import {
  grantKubeglueRoles,
  installCrds,
  RUNNER_ENTRYPOINT,
  startKubeglue,
  TEST_RUNNER_IMAGE,
  waitUntil,
} from '../test/support/kube/kubeglue.ts';
import { startProcessKubelet } from '../test/support/kube/process-kubelet/kubelet.ts';
import { freeLoopbackPort } from '../test/support/os.ts';
import { createTestDatabase, startTestPostgres, type TestPostgres } from '../test/support/postgres.ts';
import { emit, percentile, progress, round } from './stats.ts';

const DISPATCH_RUNS = loadSettings('bench').bench.dispatchRuns;
const QUEUED = 1_000;
const ADMIN_KEY = 'kg_bench-admin-key-000000000000000000000000';
const MASTER_KEY = '6b75626567c0e9e0d1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708';

export async function benchOperator(): Promise<void> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (!assets) {
    progress(
      'operator: skipped (set KUBEBUILDER_ASSETS to etcd and kube-apiserver, see docs/developers/testing.md)',
    );
    return;
  }
  progress('operator: starting a control plane and Postgres');
  const [cp, postgres] = await Promise.all([startControlPlane({ assetsDir: assets }), startTestPostgres()]);
  try {
    await installCrds(cp);
    await reconcileRate(cp, postgres);
    await asyncDispatch(cp, postgres);
  } finally {
    await Promise.allSettled([cp.stop(), postgres.stop()]);
  }
}

/** 1 000 ToolRuns whose runs already ended: each reconcile mirrors the outcome and releases the finalizer. */
async function reconcileRate(cp: ControlPlane, postgres: TestPostgres): Promise<void> {
  const namespace = await createTestNamespace(cp, 'bench-reconcile');
  const db = await createTestDatabase(postgres.url);
  const store = await openStore({ driver: 'pg', url: db.url });
  const transport = new ClusterTransport(loadKubeConfig({ path: cp.kubeconfigPath }));
  const resources = createClusterKubeglueResources(transport, namespace.name);
  const core = createClusterResources(transport, {
    namespace: namespace.name,
    kinds: { pods: POD_KIND, secrets: SECRET_KIND },
  });
  try {
    const now = new Date().toISOString();
    const runs: StoredRun[] = Array.from({ length: QUEUED }, (_, i) => ({
      runId: `bench-${i}`,
      toolId: 'bench',
      status: 'failed',
      error: 'ended before the operator saw it',
      requestSource: 'api',
      systemIds: [],
      executionMode: 'prod',
      tool: { id: 'bench', steps: [{ id: 'x', config: { type: 'transform', transformCode: '() => 1' } }] },
      options: { async: true },
      metadata: { startedAt: now, completedAt: now, durationMs: 0 },
    }));
    await store.insertRuns(runs);
    progress(`operator.reconcile_rate: creating ${QUEUED} ToolRuns`);
    for (let i = 0; i < runs.length; i += 50) {
      await Promise.all(
        runs.slice(i, i + 50).map((run) => resources.toolRuns.create(toolRunFor(run, namespace.name))),
      );
    }
    const settled = async () => {
      const { items } = await resources.toolRuns.list();
      return items.filter(
        (t: ToolRunResource) => t.status?.status === 'failed' && !t.metadata.finalizers?.length,
      ).length;
    };
    const started = performance.now();
    const operator = await startOperator({
      store,
      resources,
      namespace: namespace.name,
      // Nothing is launched (every run has ended), but cleanup looks for Pods and token Secrets.
      launcher: createPodLauncher({
        pods: core.pods,
        secrets: core.secrets,
        store,
        settings: defaultOperatorSettings(),
      }),
      chains: { startChained: async () => {}, recordRefused: async () => {} },
      urlFor: () => '',
      masterKey: Buffer.from(MASTER_KEY, 'hex'),
      notifySecret: undefined,
      notifyAllowPrivate: false,
      notifyRetryDelaysMs: [1000],
      maxAsyncRuns: 64,
      toolRunRetentionMs: 3_600_000,
      outboxRetentionMs: 3_600_000,
      log: () => {},
    });
    await waitUntil(async () => (await settled()) === QUEUED, 600_000, 'every ToolRun to settle');
    const seconds = (performance.now() - started) / 1000;
    await operator.close();
    emit({
      bench: 'operator.reconcile_rate',
      queued: QUEUED,
      seconds: round(seconds, 2),
      toolRunsPerSecond: round(QUEUED / seconds, 1),
      note: 'each reconcile: a /status write and the finalizer release, on a real kube-apiserver',
    });
  } finally {
    await store.close();
    await transport.close();
    await db.drop();
    await namespace.delete();
  }
}

async function asyncDispatch(cp: ControlPlane, postgres: TestPostgres): Promise<void> {
  const namespace = await createTestNamespace(cp, 'bench-dispatch');
  await grantKubeglueRoles(cp, namespace.name);
  const db = await createTestDatabase(postgres.url);
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-'));
  const kubelet = await startProcessKubelet({
    url: cp.url,
    caPem: cp.caPem,
    token: cp.tokens['kubeglue-kubelet'] as string,
    nodeName: 'bench-node',
    namespaces: [namespace.name],
    images: { [TEST_RUNNER_IMAGE]: RUNNER_ENTRYPOINT },
  });
  const [port, internalPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const env = {
    KUBEGLUE_NAMESPACE: namespace.name,
    KUBEGLUE_DATABASE_URL: db.url,
    KUBEGLUE_MASTER_KEY: MASTER_KEY,
    KUBEGLUE_ADMIN_KEY: ADMIN_KEY,
    KUBEGLUE_PORT: String(port),
    KUBEGLUE_INTERNAL_PORT: String(internalPort),
    KUBEGLUE_WORKERS: '1',
    KUBEGLUE_LOG_LEVEL: 'warn',
    KUBEGLUE_METRICS_PORT: '0',
  };
  const api = startKubeglue('api', {
    ...env,
    KUBEGLUE_KUBECONFIG: await cp.writeKubeconfig(join(dir, 'api'), 'kubeglue-api'),
  });
  const operator = startKubeglue('operator', {
    ...env,
    KUBEGLUE_KUBECONFIG: await cp.writeKubeconfig(join(dir, 'operator'), 'kubeglue-operator'),
    KUBEGLUE_RUNNER_IMAGE: TEST_RUNNER_IMAGE,
    KUBEGLUE_INTERNAL_URL: `http://127.0.0.1:${internalPort}`,
  });
  try {
    await api.waitForOutput(/ready on/, 60_000);
    await operator.waitForOutput(/reconciling Tools/, 60_000);
    const base = `http://127.0.0.1:${port}/v1`;
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as { runId?: string; status?: string };
    };
    // A transform-only tool: the figure is dispatch, not the speed of some target.
    await call('POST', '/tools', {
      id: 'dispatch',
      steps: [{ id: 'x', config: { type: 'transform', transformCode: '() => ({ ok: true })' } }],
    });
    progress(`operator.async_dispatch: ${DISPATCH_RUNS} runs, one at a time`);
    // When each phase became visible, by run id: watches see the objects as the API server stores them.
    const seen = new Map<string, { toolRun?: number; pod?: number; podRunning?: number }>();
    const mark = (runId: string | undefined, phase: 'toolRun' | 'pod' | 'podRunning') => {
      if (!runId) return;
      const phases = seen.get(runId) ?? {};
      phases[phase] ??= performance.now();
      seen.set(runId, phases);
    };
    const watching = new AbortController();
    const transport = new ClusterTransport(loadKubeConfig({ path: cp.kubeconfigPath }));
    const watched = createClusterResources(transport, {
      namespace: namespace.name,
      kinds: { pods: POD_KIND, toolRuns: KUBEGLUE_KIND_SPECS.toolRuns },
    });
    void (async () => {
      for await (const event of watched.toolRuns.watch({ signal: watching.signal })) {
        if (event.type === 'ADDED') mark(event.object.spec.runId, 'toolRun');
      }
    })().catch(() => {});
    void (async () => {
      for await (const event of watched.pods.watch({ signal: watching.signal })) {
        const runId = event.object.metadata.annotations?.[RUN_ID_KEY];
        mark(runId, 'pod');
        if (event.object.status?.phase === 'Running') mark(runId, 'podRunning');
      }
    })().catch(() => {});

    const phases = {
      toToolRun: [] as number[],
      toPod: [] as number[],
      toProcess: [] as number[],
      toSuccess: [] as number[],
    };
    const latencies: number[] = [];
    for (let i = 0; i < DISPATCH_RUNS; i++) {
      const started = performance.now();
      const { runId } = await call('POST', '/tools/dispatch/run', { options: { async: true } });
      for (;;) {
        const run = await call('GET', `/runs/${runId}`);
        if (run.status !== 'running') break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const done = performance.now();
      latencies.push(done - started);
      const at = seen.get(runId ?? '');
      if (at?.toolRun && at.pod && at.podRunning) {
        phases.toToolRun.push(at.toolRun - started);
        phases.toPod.push(at.pod - at.toolRun);
        phases.toProcess.push(at.podRunning - at.pod);
        phases.toSuccess.push(done - at.podRunning);
      }
    }
    watching.abort();
    await transport.close();
    const processStart = await runnerProcessStart(dir, 20);
    const p50 = (values: number[]) => round(percentile(values, 50), 1);
    emit({
      bench: 'operator.async_dispatch',
      runs: latencies.length,
      p50Ms: p50(latencies),
      p99Ms: round(percentile(latencies, 99), 1),
      phasesP50Ms: {
        acceptedToToolRun: p50(phases.toToolRun),
        toolRunToPod: p50(phases.toPod),
        podToProcessStarted: p50(phases.toProcess),
        processToSuccess: p50(phases.toSuccess),
      },
      runnerProcessStartP50Ms: round(processStart, 1),
      ourPartP50Ms: round(
        p50(phases.toToolRun) + p50(phases.toPod) + Math.max(0, p50(phases.toSuccess) - processStart),
        1,
      ),
      note:
        'one run at a time; our part = outbox to ToolRun + operator to Pod + runner work after its process started ' +
        '(process start measured apart by spawning kubeglue runner on a trivial order); the rest is the process kubelet',
    });
  } finally {
    await Promise.allSettled([operator.stop(), api.stop()]);
    await kubelet.stop();
    await db.drop();
    await namespace.delete();
    await rm(dir, { recursive: true, force: true });
  }
}

/** p50 of starting `kubeglue runner` on a trivial order: Node, our modules, the sandbox, exit. */
async function runnerProcessStart(dir: string, samples: number): Promise<number> {
  const order = join(dir, 'order.json');
  await writeFile(
    order,
    JSON.stringify({
      runId: 'start',
      tool: { id: 't', steps: [{ id: 'x', config: { type: 'transform', transformCode: '() => 1' } }] },
      traceId: 'start',
    }),
  );
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--no-node-snapshot', KUBEGLUE_BIN, 'runner', '--order', order],
        {
          stdio: 'ignore',
        },
      );
      child.once('error', reject);
      child.once('exit', () => resolve());
    });
    times.push(performance.now() - started);
  }
  return percentile(times, 50);
}
