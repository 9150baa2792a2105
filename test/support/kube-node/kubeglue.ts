/**
 * kubeglue against the real node, as test/e2e/ runs it: `kubeglue api` and `kubeglue operator` as
 * processes inside the node's network namespace, from the image's own /app tree and Node binary (the
 * compiled dist/ of the checkout under test), listening on the node's address so runner Pods reach the
 * internal port there. Postgres and the HTTP target stay in the test process's namespace and are
 * exposed on the node's address through the harness's bridges; the API is reached from the test
 * through one too.
 */
import { join } from 'node:path';
import type { Run } from '../../../contract/api/run.ts';
import { CRD_DIR } from '../../../contract/generate.ts';
import { runnerPodName } from '../../../operator/launchers/launcher.ts';
import { toolRunName } from '../../../runs/toolrun.ts';
import { callApi, TEST_ADMIN_KEY, TEST_MASTER_KEY } from '../embedded.ts';
import { waitFor as waitForKube } from '../kube/kubeglue.ts';
import { NODE_GATEWAY, NODE_IMAGE, type NsProcess, type RealNode, sleep } from './node.ts';

const REPO = join(import.meta.dirname, '../../..');

/** The Kubernetes tests' waitFor, with the real node's longer default and a slower poll. */
export function waitFor<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  return waitForKube(what, read, ok, timeoutMs, 250);
}

/** kubeglue's CRDs, applied with kubectl into the node's cluster. */
export async function applyCrds(node: RealNode): Promise<void> {
  // --validate=false: a current kubectl checks fields against the server's OpenAPI, which on 1.20 does
  // not know every schema keyword the CRDs carry.
  await node.kubectl(['apply', '--validate=false', '-f', join(REPO, CRD_DIR)]);
  await node.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
}

export interface PodLike {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { nodeName?: string; containers: { image: string }[] };
  status?: {
    phase?: string;
    containerStatuses?: {
      state?: Record<string, { reason?: string; exitCode?: number }>;
      lastState?: Record<string, { reason?: string; exitCode?: number }>;
    }[];
  };
}

export interface KubeglueOnNode {
  apiUrl: string;
  namespace: string;
  api: NsProcess;
  operator: NsProcess;
  call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Stops the operator (SIGKILL when told) and starts a new one with these settings on top. */
  restartOperator(extra?: Record<string, string>, signal?: NodeJS.Signals): Promise<void>;
  /** Runs body with an operator restarted with these settings on top, then restarts it without them. */
  withOperatorSettings(extra: Record<string, string>, body: () => Promise<void>): Promise<void>;
  /**
   * A second `kubeglue api` on the same database (its own ports and KUBEGLUE_POD_NAME), as a second
   * replica of the Deployment; the operator's runner Pods keep reaching the first one's internal port.
   */
  startApiReplica(): Promise<ApiReplica>;
  finished(runId: string, timeoutMs?: number): Promise<Run>;
  pod(runId: string, attempt?: number): Promise<PodLike | undefined>;
  podRunning(runId: string, timeoutMs?: number): Promise<PodLike>;
  stop(): Promise<void>;
}

export interface ApiReplica {
  process: NsProcess;
  call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

function startRole(node: RealNode, role: string, env: Record<string, string>): NsProcess {
  return node.spawnInside(
    node.paths.imageNode,
    ['--no-node-snapshot', join(node.paths.imageApp, 'dist', 'bin', 'kubeglue.js'), role],
    { HOME: '/tmp', NODE_OPTIONS: '--no-node-snapshot', NODE_ENV: 'production', ...env },
  );
}

async function waitOutput(
  process: NsProcess,
  pattern: RegExp,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(process.output())) {
    if (process.child.exitCode !== null)
      throw new Error(`${what} exited (${process.child.exitCode}):\n${process.output()}`);
    if (Date.now() > deadline) throw new Error(`${what} did not print ${pattern}:\n${process.output()}`);
    await sleep(100);
  }
}

/**
 * api + operator in namespace `namespace` of the node's cluster (admin kubeconfig), on databaseUrl
 * (reachable from the test process; bridged to the node).
 */
export async function startKubeglueOnNode(
  node: RealNode,
  options: { namespace: string; databaseUrl: string; operatorEnv?: Record<string, string> },
): Promise<KubeglueOnNode> {
  const { namespace } = options;
  await node.kubectl(['create', 'namespace', namespace]).catch((error: Error) => {
    if (!/AlreadyExists/.test(error.message)) throw error;
  });
  const db = new URL(options.databaseUrl);
  db.port = String(await node.expose(Number(db.port)));
  db.hostname = NODE_GATEWAY;
  const port = 18_080;
  const internalPort = 18_081;
  const relayPort = 18_082;
  const base = {
    KUBEGLUE_NAMESPACE: namespace,
    KUBEGLUE_KUBECONFIG: node.kubeconfig,
    KUBEGLUE_DATABASE_URL: db.toString(),
    KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
    KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
    KUBEGLUE_LOG_LEVEL: 'warn',
    KUBEGLUE_WORKERS: '1',
    KUBEGLUE_EGRESS_ALLOW: NODE_GATEWAY,
    KUBEGLUE_METRICS_PORT: '0',
  };
  /** The api on these ports (the nth replica: n - 1 added to each). */
  const startApi = async (replica: number) => {
    const shift = (replica - 1) * 10;
    const started = startRole(node, 'api', {
      ...base,
      ...(replica > 1 ? { KUBEGLUE_POD_NAME: `kubeglue-api-${replica}` } : {}),
      KUBEGLUE_HOST: NODE_GATEWAY,
      KUBEGLUE_PORT: String(port + shift),
      KUBEGLUE_INTERNAL_HOST: NODE_GATEWAY,
      KUBEGLUE_INTERNAL_PORT: String(internalPort + shift),
      KUBEGLUE_GATEWAY_RELAY_PORT: String(relayPort + shift),
    });
    await waitOutput(started, /ready on/, `kubeglue api (replica ${replica})`);
    return { started, url: `http://127.0.0.1:${await node.reach(port + shift)}` };
  };
  const { started: api, url: apiUrl } = await startApi(1);
  /** The replicas startApiReplica added, stopped with the rest. */
  const added: NsProcess[] = [];
  const operatorBase = {
    ...base,
    KUBEGLUE_RUNNER_IMAGE: NODE_IMAGE,
    KUBEGLUE_INTERNAL_URL: `http://${NODE_GATEWAY}:${internalPort}`,
    KUBEGLUE_DELETE_SUCCEEDED_PODS: 'false',
    KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS: '20000',
    KUBEGLUE_CANCEL_GRACE_MS: '3000',
    KUBEGLUE_RUNNER_TERMINATION_GRACE_SECONDS: '2',
    KUBEGLUE_LEASE_DURATION_MS: '4000',
    KUBEGLUE_LEASE_RENEW_DEADLINE_MS: '3000',
    KUBEGLUE_LEASE_RETRY_MS: '500',
    ...options.operatorEnv,
  };
  let operator = startRole(node, 'operator', operatorBase);
  await waitOutput(operator, /reconciling Tools/, 'kubeglue operator');

  const call = <T>(method: string, path: string, body?: unknown) =>
    callApi<T>(apiUrl, TEST_ADMIN_KEY, method, path, body);
  const pod = (runId: string, attempt = 1) =>
    node.get<PodLike>(['-n', namespace, 'pod', runnerPodName(toolRunName(runId), attempt)]);
  const restartOperator = async (extra: Record<string, string> = {}, signal: NodeJS.Signals = 'SIGTERM') => {
    await operator.stop(signal);
    operator = startRole(node, 'operator', { ...operatorBase, ...extra });
    await waitOutput(operator, /reconciling Tools/, 'kubeglue operator');
  };
  const handle: KubeglueOnNode = {
    apiUrl,
    namespace,
    api,
    get operator() {
      return operator;
    },
    call,
    restartOperator,
    withOperatorSettings: async (extra, body) => {
      await restartOperator(extra);
      try {
        await body();
      } finally {
        await restartOperator();
      }
    },
    startApiReplica: async () => {
      const { started, url } = await startApi(added.length + 2);
      added.push(started);
      return {
        process: started,
        call: <T>(method: string, path: string, body?: unknown) =>
          callApi<T>(url, TEST_ADMIN_KEY, method, path, body),
        stop: async () => {
          await started.stop();
        },
      };
    },
    finished: async (runId, timeoutMs = 60_000) =>
      (
        await waitFor(
          `run ${runId} to finish`,
          () => call<Run>('GET', `/v1/runs/${runId}`),
          (response) => response.status === 200 && response.body.status !== 'running',
          timeoutMs,
        )
      ).body,
    pod,
    podRunning: async (runId, timeoutMs = 60_000) =>
      (await waitFor(
        `the runner Pod of ${runId} to run`,
        () => pod(runId),
        (found) => found?.status?.phase === 'Running',
        timeoutMs,
      )) as PodLike,
    stop: async () => {
      await operator.stop();
      await Promise.all(added.map((replica) => replica.stop()));
      await api.stop();
    },
  };
  return handle;
}
