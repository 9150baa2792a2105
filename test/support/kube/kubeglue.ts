import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CRD_DIR } from '../../../contract/generate.ts';
import { RBAC, type RbacRole } from '../../../contract/rbac.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import {
  ClusterTransport,
  createClusterResources,
  EVENT_KIND,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type ResourceClients,
  SECRET_KIND,
} from '../../../kube/resources/index.ts';
import type { Event, Secret } from '../../../kube/types.ts';
import { type OwnedProcess, ownProcess } from '../child-process.ts';
import { KUBEGLUE_BIN } from '../cli.ts';
import { TEST_ADMIN_KEY, TEST_MASTER_KEY } from '../embedded.ts';
import { useStarted } from '../fixture.ts';
import { freeLoopbackPort } from '../os.ts';
import type { KubeHandle } from './client.ts';
import { type ProcessKubelet, startProcessKubelet } from './process-kubelet/kubelet.ts';
import type { KubeTestBed } from './provided.ts';

const REPO = join(import.meta.dirname, '../../..');
/** The image runner Pods name in the tests; the process kubelet maps it to the local CLI. */
export const TEST_RUNNER_IMAGE = 'kubeglue/kubeglue:test';
export const RUNNER_ENTRYPOINT = [process.execPath, '--no-node-snapshot', KUBEGLUE_BIN];

/** A process kubelet serving the namespace that runs kubeglue's image from this checkout, as user kubeglue-kubelet. */
export function startKubegluePodRunner(kube: KubeHandle, namespace: string): Promise<ProcessKubelet> {
  return startProcessKubelet({
    url: kube.url,
    caPem: kube.caPem,
    token: kube.tokens['kubeglue-kubelet'] as string,
    nodeName: `node-${namespace}`,
    namespaces: [namespace],
    images: { [TEST_RUNNER_IMAGE]: RUNNER_ENTRYPOINT },
  });
}

interface CrdMetadata {
  name: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Creates or replaces kubeglue's CRDs (charts/kubeglue/files/crds/*.yaml) and waits until the API server serves them. */
export async function installCrds(kube: KubeHandle): Promise<void> {
  const dir = join(REPO, CRD_DIR);
  const files = (await readdir(dir)).filter((name) => name.endsWith('.yaml'));
  for (const file of files) {
    for (const document of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      const crd = document.toJS() as { metadata: CrdMetadata };
      const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions`;
      const created = await kube.request(path, { method: 'POST', body: crd });
      if (created.status === 409) {
        const current = (await kube.request(`${path}/${crd.metadata.name}`)).body as {
          metadata: CrdMetadata;
        };
        // The labels and annotations it has stay: a Helm release (the chart test) may own it.
        const metadata = {
          ...crd.metadata,
          labels: { ...current.metadata.labels, ...crd.metadata.labels },
          annotations: { ...current.metadata.annotations, ...crd.metadata.annotations },
          resourceVersion: current.metadata.resourceVersion,
        };
        const replaced = await kube.request(`${path}/${crd.metadata.name}`, {
          method: 'PUT',
          body: { ...crd, metadata },
        });
        // Another test file replaced it at the same moment: its copy is the same file.
        if (replaced.status >= 300 && replaced.status !== 409)
          throw new Error(`CRD ${file}: ${replaced.status}`);
      } else if (created.status >= 300) {
        throw new Error(`CRD ${file}: ${created.status} ${JSON.stringify(created.body)}`);
      }
      await waitUntil(async () => {
        const got = await kube.request(`${path}/${crd.metadata.name}`);
        const conditions = (got.body as { status?: { conditions?: { type: string; status: string }[] } })
          .status?.conditions;
        return conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
      }, 20_000);
    }
  }
  // Established can precede the first successful list by a moment.
  await waitUntil(
    async () => (await kube.request('/apis/kubeglue.dev/v1alpha1/toolruns')).status === 200,
    30_000,
  );
}

/** Binds the Roles of contract/rbac.ts in namespace to the harness users kubeglue-api and kubeglue-operator. */
export async function grantKubeglueRoles(kube: KubeHandle, namespace: string): Promise<void> {
  for (const role of Object.keys(RBAC) as RbacRole[]) {
    const name = `kubeglue-${role}`;
    const base = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
    const roleObject = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: RBAC[role],
    };
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name }],
    };
    for (const [path, body] of [
      [`${base}/roles`, roleObject],
      [`${base}/rolebindings`, binding],
    ] as const) {
      const response = await kube.request(path, { method: 'POST', body });
      if (response.status >= 300 && response.status !== 409) {
        throw new Error(`RBAC ${path}: ${response.status} ${JSON.stringify(response.body)}`);
      }
    }
  }
}

/**
 * The settings every `kubeglue api` or `kubeglue operator` process of a Kubernetes test starts with: the
 * bed's namespace, the test database and keys, its ports, the role's RBAC-limited kubeconfig (after
 * grantKubeglueRoles), one engine worker and no metrics port. Tests add what they are about.
 */
export async function kubeglueEnv(
  bed: KubeTestBed,
  role: 'api' | 'operator',
  opts: { databaseUrl: string; port: number; internalPort: number },
): Promise<Record<string, string>> {
  return {
    KUBEGLUE_NAMESPACE: bed.namespace.name,
    KUBEGLUE_DATABASE_URL: opts.databaseUrl,
    KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
    KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
    KUBEGLUE_PORT: String(opts.port),
    KUBEGLUE_INTERNAL_PORT: String(opts.internalPort),
    KUBEGLUE_WORKERS: '1',
    KUBEGLUE_METRICS_PORT: '0',
    KUBEGLUE_KUBECONFIG: await roleKubeconfig(bed, role),
  };
}

/** A `kubeglue api` process of a Kubernetes test, and where it listens. */
export interface ApiProcess extends KubeglueProcess {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** The internal API's port (the runner Pods report there) and the gateway relay's. */
  internalPort: number;
  relayPort: number;
  /** The environment it was started with, to start it again. */
  env: Record<string, string>;
}

/**
 * `kubeglue api` on the bed and the test database (kubeglueEnv), on free loopback ports: its own, the
 * internal API's and the gateway relay's; `env` on top. Call grantKubeglueRoles first; wait for
 * `/ready on/` before calling it.
 */
export async function startApi(
  bed: KubeTestBed,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<ApiProcess> {
  const [port, internalPort, relayPort] = [
    await freeLoopbackPort(),
    await freeLoopbackPort(),
    await freeLoopbackPort(),
  ];
  const apiEnv = {
    ...(await kubeglueEnv(bed, 'api', { databaseUrl, port, internalPort })),
    KUBEGLUE_GATEWAY_RELAY_PORT: String(relayPort),
    ...env,
  };
  const url = `http://127.0.0.1:${port}`;
  return { ...startKubeglue('api', apiEnv), url, port, internalPort, relayPort, env: apiEnv };
}

/**
 * The settings of `kubeglue operator` beside `api` (kubeglueEnv, with the api's ports): runner Pods from
 * the test image, which report to the api's internal API and dial its gateway relay.
 */
export async function operatorEnvBeside(
  bed: KubeTestBed,
  databaseUrl: string,
  api: Pick<ApiProcess, 'port' | 'internalPort' | 'relayPort'>,
): Promise<Record<string, string>> {
  return {
    ...(await kubeglueEnv(bed, 'operator', { databaseUrl, port: api.port, internalPort: api.internalPort })),
    KUBEGLUE_RUNNER_IMAGE: TEST_RUNNER_IMAGE,
    KUBEGLUE_INTERNAL_URL: `http://127.0.0.1:${api.internalPort}`,
    KUBEGLUE_RUNNER_GATEWAY_RELAY: `127.0.0.1:${api.relayPort}`,
  };
}

/** The Kubernetes deployment of a test: runner Pods on a process kubelet, `kubeglue api` and `kubeglue operator`. */
export interface KubeglueRoles {
  kubelet: ProcessKubelet;
  /** The api as startApi started it: its URL, ports and environment. */
  started: ApiProcess;
  /** The api running now; a test that starts it again puts the new process here, so that it is stopped. */
  api: KubeglueProcess;
  /** Likewise the operator. */
  operator: KubeglueProcess;
  /** The environment the operator was started with, to start it again. */
  operatorEnv: Record<string, string>;
}

export interface KubeglueRolesOptions {
  /** Settings of both roles, on top of kubeglueEnv. */
  env?: Record<string, string>;
  /** Settings of the operator only, on top of env. */
  operatorEnv?: Record<string, string>;
  /** How long each role may take to say it is ready; a loaded machine wants more than the default. */
  readyTimeoutMs?: number;
}

/**
 * The deployment's roles for the tests of the enclosing block, started before them and stopped after
 * them: the Roles granted, the process kubelet, `kubeglue api` until `ready on`, then `kubeglue operator`
 * beside it until it reconciles Tools. Call it after useKubeTestBed and useTestDatabase.
 */
export function useKubeglueRoles(
  bed: KubeTestBed,
  db: { readonly url: string },
  options: KubeglueRolesOptions = {},
): KubeglueRoles {
  const { env = {}, readyTimeoutMs = 30_000 } = options;
  const stop = async (roles: Partial<KubeglueRoles>) => {
    await roles.operator?.stop();
    await roles.api?.stop();
    await roles.kubelet?.stop();
  };
  return useStarted(
    async () => {
      const roles: Partial<KubeglueRoles> = {};
      try {
        await grantKubeglueRoles(bed.kube, bed.namespace.name);
        roles.kubelet = await startKubegluePodRunner(bed.kube, bed.namespace.name);
        roles.started = roles.api = await startApi(bed, db.url, env);
        await roles.api.waitForOutput(/ready on/, readyTimeoutMs);
        roles.operatorEnv = {
          ...(await operatorEnvBeside(bed, db.url, roles.started)),
          ...env,
          ...options.operatorEnv,
        };
        roles.operator = startKubeglue('operator', roles.operatorEnv);
        await roles.operator.waitForOutput(/reconciling Tools/, readyTimeoutMs);
        return roles as KubeglueRoles;
      } catch (error) {
        await stop(roles);
        throw error;
      }
    },
    stop,
    // Granting, the kubelet and two processes that each may take readyTimeoutMs.
    3 * readyTimeoutMs + 30_000,
  );
}

/** The kubeconfig of a kubeglue role's RBAC-limited identity, written in the bed (grantKubeglueRoles first). */
export function roleKubeconfig(bed: KubeTestBed, role: RbacRole): Promise<string> {
  return bed.kube.writeKubeconfig(join(bed.dir, `${role}.kubeconfig`), `kubeglue-${role}`);
}

/** A transport that speaks to the API server as a kubeglue role: what it does must be within contract/rbac.ts. */
export async function roleTransport(bed: KubeTestBed, role: RbacRole): Promise<ClusterTransport> {
  return new ClusterTransport(loadKubeConfig({ path: await roleKubeconfig(bed, role) }));
}

/** The kinds an operator's controllers touch in these tests: kubeglue's own, Secrets and Events. */
export type OperatorKinds = KubeglueKinds & { secrets: Secret; events: Event };
export const OPERATOR_KINDS = { ...KUBEGLUE_KIND_SPECS, secrets: SECRET_KIND, events: EVENT_KIND };

/**
 * The operator's side of the bed: the Roles granted, a transport with the operator's identity (what the
 * test's controllers do must be within contract/rbac.ts) and its resources in the bed's namespace. Close
 * the transport after the tests.
 */
export async function operatorCluster(
  bed: KubeTestBed,
): Promise<{ transport: ClusterTransport; resources: ResourceClients<OperatorKinds> }> {
  await grantKubeglueRoles(bed.kube, bed.namespace.name);
  const transport = await roleTransport(bed, 'operator');
  const resources = createClusterResources<OperatorKinds>(transport, {
    namespace: bed.namespace.name,
    kinds: OPERATOR_KINDS,
  });
  return { transport, resources };
}

/**
 * Reads until ok(value) or timeoutMs; the value, or an error naming what and the last value read. The
 * default is a ceiling for a loaded CI machine (load 25 on 2 cores), not an expected time.
 */
export async function waitFor<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface KubeglueProcess extends OwnedProcess {
  /** Resolves when a line matching pattern was printed. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

/** Starts `kubeglue <role>` as its own process with exactly the given environment (plus PATH). */
export function startKubeglue(role: string, env: Record<string, string>): KubeglueProcess {
  const owned = ownProcess(
    spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, role], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const { child, output } = owned;
  return {
    ...owned,
    waitForOutput: (pattern, timeoutMs = 30_000) =>
      waitUntil(
        () => {
          if (child.exitCode !== null)
            throw new Error(`kubeglue ${role} exited (${child.exitCode}):\n${output()}`);
          return pattern.test(output());
        },
        timeoutMs,
        `kubeglue ${role} to print ${pattern}:\n${output()}`,
      ),
  };
}
