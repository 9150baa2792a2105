import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import type { Run } from '../../../contract/api/run.ts';
import { RECORDED_FINALIZER } from '../../../contract/resources/labels.ts';
import { callApi } from '../../support/embedded.ts';
import { CHART_DIR, helm, helmEnv, parseObjects, REPO } from '../../support/helm.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import {
  installCrds,
  startKubegluePodRunner,
  TEST_RUNNER_IMAGE,
  waitUntil,
} from '../../support/kube/kubeglue.ts';
import type { Pod, ProcessKubelet } from '../../support/kube/process-kubelet/kubelet.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { freeLoopbackPort } from '../../support/os.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';

const exec = promisify(execFile);

/** The ```sh blocks of a section of docs/helm.md, for namespace `namespace` instead of `kubeglue`. */
function documentedCommands(heading: string, namespace: string): string[] {
  const page = readFileSync(join(REPO, 'docs', 'helm.md'), 'utf8');
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/helm.md has no section ${heading}`);
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) =>
    (match[1] ?? '')
      .replaceAll('-n kubeglue', `-n ${namespace}`)
      .replaceAll('release-namespace=kubeglue', `release-namespace=${namespace}`),
  );
}
const RELEASE = 'kubeglue';
const PRIORITY_CLASS = 'kubeglue-test-runners';
const RUNNER_VALUES = {
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'runners', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 1,
          preference: { matchExpressions: [{ key: 'pool', operator: 'In', values: ['runners'] }] },
        },
      ],
    },
  },
  priorityClassName: PRIORITY_CLASS,
  podLabels: { team: 'integrations' },
  podAnnotations: { 'sidecar.istio.io/inject': 'false' },
  podSecurityContext: { fsGroup: 2000, runAsGroup: null },
  securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
};
type Node = Record<string, unknown>;

/**
 * `helm install` of charts/kubeglue into the test control plane, as a user would: the chart's
 * Deployments become Pods (kube-controller-manager), which the process kubelet runs from this
 * checkout instead of the image (`kubeglue/kubeglue:test` → bin/kubeglue.ts with the Pod's args),
 * with the chart's ServiceAccounts and RBAC against the API server and the test Postgres through a
 * DSN Secret. Without a kubelet there is no Service proxy and no port-forward: the processes share
 * the host network, so the test reaches the api on 127.0.0.1:<port> and tells runner Pods the same
 * (operator.internalUrl), and runs one api replica so that ports do not collide.
 */
describeKube('helm install, upgrade and uninstall of the chart', () => {
  const bed = useKubeTestBed('helm-install');
  let db: TestDatabase;
  let target: HttpTarget;
  let kubelet: ProcessKubelet;
  let valuesFile: string;
  let apiUrl: string;
  let adminKey: string;
  let installNotes: string;
  let installed = false;
  let apiMetricsPort: number;
  let operatorMetricsPort: number;

  const helmCli = (...args: string[]) =>
    helm([...args, '--namespace', bed.namespace.name], {
      kubeconfig: bed.kube.kubeconfigPath,
      timeoutMs: 120_000,
    });
  const call = <T>(method: string, path: string, body?: unknown) =>
    callApi<T>(apiUrl, adminKey, method, path, body);
  const get = async <T = Node>(path: string) => (await bed.kube.request(path)).body as T;
  const ns = () => `/api/v1/namespaces/${bed.namespace.name}`;
  const pods = async (component: string) =>
    (
      await get<{ items: Pod[] }>(
        `${ns()}/pods?labelSelector=app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${component}`,
      )
    ).items;
  const running = async (component: string) =>
    (await pods(component)).filter(
      (pod) => pod.status?.phase === 'Running' && !pod.metadata.deletionTimestamp,
    );
  const secretData = async (name: string) =>
    (await get<{ data?: Record<string, string> }>(`${ns()}/secrets/${name}`)).data;
  const toolRuns = async () =>
    (
      await get<{ items: { spec: { runId: string }; status?: { executionPhase?: string } }[] }>(
        `/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/toolruns`,
      )
    ).items;
  /** The shell blocks of docs/helm.md as a user runs them: helm and kubectl against the test cluster. */
  const runDocumented = async (script: string) =>
    await exec('sh', ['-ec', script], { env: helmEnv(bed.kube.kubeconfigPath), timeout: 300_000 });
  const apiReady = async () => {
    try {
      return (await fetch(`${apiUrl}/readyz`)).status === 200;
    } catch {
      return false;
    }
  };

  /** A kubeconfig for a chart ServiceAccount: the identity, and so the RBAC, the role runs with. */
  const serviceAccountKubeconfig = async (account: string): Promise<string> => {
    const requested = await bed.kube.request(`${ns()}/serviceaccounts/${account}/token`, {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      },
    });
    const token = (requested.body as { status?: { token?: string } }).status?.token;
    if (!token) throw new Error(`no token for ${account}: ${JSON.stringify(requested.body)}`);
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: {
            server: bed.kube.url,
            'certificate-authority-data': Buffer.from(bed.kube.caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: account, user: { token } }],
      contexts: [
        { name: account, context: { cluster: 'test', user: account, namespace: bed.namespace.name } },
      ],
      'current-context': account,
    });
  };

  beforeAll(async () => {
    db = await createTestDatabase(inject('databaseUrl'));
    target = await startHttpTarget();
    target.route('GET', '/posts', {
      body: [
        { id: 1, title: 'first', body: 'x', userId: 7 },
        { id: 2, title: 'second', body: 'y', userId: 7 },
      ],
    });
    const [port, internalPort, metricsPort, gatewayRelayPort] = [
      await freeLoopbackPort(),
      await freeLoopbackPort(),
      await freeLoopbackPort(),
      await freeLoopbackPort(),
    ];
    apiMetricsPort = await freeLoopbackPort();
    operatorMetricsPort = metricsPort;
    apiUrl = `http://127.0.0.1:${port}`;
    kubelet = await startKubegluePodRunner(bed.kube, bed.namespace.name);

    const priorityClasses = '/apis/scheduling.k8s.io/v1/priorityclasses';
    await bed.kube.request(`${priorityClasses}/${PRIORITY_CLASS}`, { method: 'DELETE' });
    await bed.kube.request(priorityClasses, {
      body: {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: PRIORITY_CLASS },
        value: 1000,
      },
    });
    // The database: an existing Secret holding the DSN, as production installs do.
    await bed.kube.request(`${ns()}/secrets`, {
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `${RELEASE}-database` },
        stringData: { url: db.url },
      },
    });
    // The kubeconfig of each role, mounted where KUBEGLUE_KUBECONFIG points: a process cannot read
    // the in-cluster token path, which the process kubelet does not own.
    const kubeconfigMount = (role: string) => ({
      extraEnv: [{ name: 'KUBEGLUE_KUBECONFIG', value: '/etc/kubeglue/kube/config' }],
      extraVolumes: [{ name: 'kube', secret: { secretName: `test-kubeconfig-${role}` } }],
      extraVolumeMounts: [{ name: 'kube', mountPath: '/etc/kubeglue/kube', readOnly: true }],
    });
    const [repository, tag] = TEST_RUNNER_IMAGE.split(':') as [string, string];
    valuesFile = join(bed.dir, 'values.yaml');
    await writeFile(
      valuesFile,
      stringify({
        image: { repository, tag },
        logLevel: 'warn',
        // The HTTP target is on loopback, which the deployment refuses by default.
        egress: { allow: ['127.0.0.1'] },
        api: {
          replicas: 1,
          workers: 1,
          port,
          internalPort,
          gatewayRelayPort,
          metricsPort: apiMetricsPort,
          strategy: { type: 'Recreate' },
          ...kubeconfigMount('api'),
        },
        // Placed, labelled and adjusted as a platform team would; the process kubelet runs it anyway.
        runner: RUNNER_VALUES,
        operator: {
          metricsPort,
          // The runner Pod stays after its run, for the test to read what the operator built.
          deleteSucceededPods: false,
          internalUrl: `http://127.0.0.1:${internalPort}`,
          strategy: { type: 'Recreate' },
          ...kubeconfigMount('operator'),
          extraEnv: [
            ...kubeconfigMount('operator').extraEnv,
            { name: 'KUBEGLUE_LEASE_DURATION_MS', value: '3000' },
            { name: 'KUBEGLUE_LEASE_RENEW_DEADLINE_MS', value: '2000' },
            { name: 'KUBEGLUE_LEASE_RETRY_MS', value: '500' },
          ],
        },
      }),
    );

    // Other test files create the CRDs too, outside any release, as charts before templates/crds.yaml
    // did: hand them to this release as docs/helm.md says (its last line, the upgrade, is not this).
    await installCrds(bed.kube);
    const [adopt] = documentedCommands('Upgrading', bed.namespace.name);
    await runDocumented((adopt as string).split('\nhelm upgrade')[0] as string);
    installNotes = await helmCli('install', RELEASE, CHART_DIR, '--values', valuesFile);
    installed = true;
    for (const role of ['api', 'operator']) {
      await bed.kube.request(`${ns()}/secrets`, {
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `test-kubeconfig-${role}` },
          stringData: { config: await serviceAccountKubeconfig(`${RELEASE}-${role}`) },
        },
      });
    }
    await waitUntil(apiReady, 90_000, 'the api Pod to serve /readyz');
    await waitUntil(
      async () => {
        const lease = await bed.kube.request(
          `/apis/coordination.k8s.io/v1/namespaces/${bed.namespace.name}/leases/${RELEASE}-operator`,
        );
        return lease.status === 200 && Boolean((lease.body as { spec?: Node }).spec?.holderIdentity);
      },
      60_000,
      'the operator to lead',
    );
    // As NOTES.txt says: the admin key from the generated Secret.
    adminKey = Buffer.from(
      await bed.kubectl('get', 'secret', `${RELEASE}-keys`, '-o', 'jsonpath={.data.admin-key}'),
      'base64',
    ).toString('utf8');
  }, 240_000);

  afterAll(async () => {
    if (installed) await helmCli('uninstall', RELEASE).catch(() => undefined);
    await bed.kube
      .request(`/apis/scheduling.k8s.io/v1/priorityclasses/${PRIORITY_CLASS}`, { method: 'DELETE' })
      .catch(() => undefined);
    await kubelet?.stop();
    await target?.stop();
    await db?.drop();
  });

  it('installs CRDs, api and operator Pods of the chart, and prints how to reach them', async () => {
    expect(installNotes).toContain(`kubectl -n ${bed.namespace.name} get secret ${RELEASE}-keys`);
    expect(installNotes).toContain(`port-forward svc/${RELEASE}`);
    expect(installNotes).toContain('tools/list-posts/run');
    for (const crd of ['tools', 'systems', 'toolschedules', 'toolruns']) {
      const got = await bed.kube.request(
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.kubeglue.dev`,
      );
      expect(got.status).toBe(200);
      // The release's own: helm upgrade updates them.
      expect((got.body as { metadata: { annotations?: Node } }).metadata.annotations).toMatchObject({
        'meta.helm.sh/release-name': RELEASE,
        'helm.sh/resource-policy': 'keep',
      });
    }
    const [api] = await running('api');
    const [operator] = await running('operator');
    expect(api?.spec.serviceAccountName).toBe(`${RELEASE}-api`);
    expect(operator?.spec.serviceAccountName).toBe(`${RELEASE}-operator`);
    expect(adminKey).toMatch(/^kg_/);
    expect((await call('GET', '/v1/tools')).status).toBe(200);
  });

  it('holds no key in the release: the api made the keys Secret, which the operator read', async () => {
    const manifest = await helmCli('get', 'manifest', RELEASE);
    expect(manifest).not.toMatch(/kind: Secret|master-key/);
    const keys = await get<{ metadata: { labels?: Record<string, string>; annotations?: Node } }>(
      `${ns()}/secrets/${RELEASE}-keys`,
    );
    expect(keys.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('kubeglue-api');
    expect(keys.metadata.annotations?.['meta.helm.sh/release-name']).toBeUndefined();
    expect(Object.keys((await secretData(`${RELEASE}-keys`)) ?? {}).sort()).toEqual([
      'admin-key',
      'master-key',
      'notify-secret',
    ]);
  });

  it('serves metrics on the metrics ports of api and operator, and nothing at /metrics of the public port', async () => {
    const publicMetrics = await fetch(`${apiUrl}/metrics`);
    expect(publicMetrics.status).toBe(404);
    expect(await publicMetrics.json()).toMatchObject({ error: { code: 'KG_ERR_ROUTE_NOT_FOUND' } });
    const api = await fetch(`http://127.0.0.1:${apiMetricsPort}/metrics`);
    expect(api.status).toBe(200);
    expect(await api.text()).toContain('# TYPE kubeglue_http_requests_total counter');
    const operator = await fetch(`http://127.0.0.1:${operatorMetricsPort}/metrics`);
    expect(await operator.text()).toMatch(/^kubeglue_operator_leader 1$/m);
  });

  it('runs the example Tool applied with kubectl, sync and async, through the public API', async () => {
    await bed.kubectl('apply', '-f', join(REPO, 'examples'));
    // The example's System points at the internet; here it is the local target.
    await bed.kubectl(
      'patch',
      'system',
      'jsonplaceholder-prod',
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { url: target.url } }),
    );
    await bed.kubectl('wait', '--for=condition=Ready', 'tool/list-posts', '--timeout=60s');
    await bed.kubectl('wait', '--for=condition=Ready', 'system/jsonplaceholder-prod', '--timeout=60s');

    const sync = await call<Run>('POST', '/v1/tools/list-posts/run', {});
    expect(sync.status).toBe(200);
    expect(sync.body).toMatchObject({
      status: 'success',
      data: [
        { id: 1, title: 'first' },
        { id: 2, title: 'second' },
      ],
    });

    const started = await call<Run>('POST', '/v1/tools/list-posts/run', { options: { async: true } });
    expect(started.status).toBe(202);
    let run: Run | undefined;
    await waitUntil(
      async () => {
        run = (await call<Run>('GET', `/v1/runs/${started.body.runId}`)).body;
        return run.status !== 'running';
      },
      90_000,
      'the async run to finish',
    );
    expect(run).toMatchObject({ status: 'success' });
    const results = await call<{ data: { data: unknown } }>('GET', `/v1/runs/${started.body.runId}/results`);
    expect(results.body.data.data).toEqual([
      { id: 1, title: 'first' },
      { id: 2, title: 'second' },
    ]);
    // It ran in a runner Pod the operator built from the chart's settings, which the ToolRun names.
    const toolRunsPath = `/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/toolruns`;
    let podName: string | undefined;
    await waitUntil(
      async () => {
        const toolRuns = await get<{ items: { status?: { podName?: string; status?: string } }[] }>(
          toolRunsPath,
        );
        podName = toolRuns.items.find((t) => t.status?.status === 'success')?.status?.podName;
        return podName !== undefined;
      },
      30_000,
      'the ToolRun to mirror the success',
    );
    await expect(kubelet.logs(bed.namespace.name, podName as string)).resolves.toBeTypeOf('string');
    // Placed and labelled from runner.* values; the API server resolved the PriorityClass.
    const pod = await get<Pod>(`${ns()}/pods/${podName}`);
    const { spec } = pod as unknown as { spec: Node & Pod['spec'] };
    expect(spec).toMatchObject({
      nodeSelector: RUNNER_VALUES.nodeSelector,
      // The API server adds its default not-ready and unreachable tolerations.
      tolerations: expect.arrayContaining(RUNNER_VALUES.tolerations),
      affinity: RUNNER_VALUES.affinity,
      priorityClassName: PRIORITY_CLASS,
      priority: 1000,
    });
    expect(pod.metadata.labels).toMatchObject({
      team: 'integrations',
      'app.kubernetes.io/component': 'runner',
    });
    expect(pod.metadata.annotations).toMatchObject({ 'sidecar.istio.io/inject': 'false' });
    // The override changed what it names; every other security default stayed.
    expect(spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      fsGroup: 2000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect((spec.containers[0] as unknown as Node | undefined)?.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // The Pods worked as the chart's ServiceAccounts and used only what the chart's RBAC grants.
    const prefix = `system:serviceaccount:${bed.namespace.name}:`;
    const events = (await bed.kube.auditEvents()).filter((event) => event.user.startsWith(prefix));
    expect(new Set(events.map((event) => event.user.slice(prefix.length)))).toEqual(
      new Set([`${RELEASE}-api`, `${RELEASE}-operator`]),
    );
    expect(events.filter((event) => event.code === 403)).toEqual([]);
  }, 150_000);

  it("serves every metric the chart's alerts and dashboard read, and counted the async run's Pod", async () => {
    const scrape = async (port: number) => await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const [api, operator] = [await scrape(apiMetricsPort), await scrape(operatorMetricsPort)];
    const declared = new Set(
      [...`${api}\n${operator}`.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
        type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name as string],
      ),
    );
    const rendered = parseObjects(
      await helm([
        'template',
        RELEASE,
        CHART_DIR,
        '--set',
        'prometheusRule.enabled=true,grafanaDashboard.enabled=true',
      ]),
    );
    const read = JSON.stringify(
      rendered.filter((object) => ['PrometheusRule', 'ConfigMap'].includes(object.kind)),
    ).match(/kubeglue_[a-z_]+/g);
    expect(read?.length).toBeGreaterThan(10);
    expect([...new Set(read)].filter((name) => !declared.has(name))).toEqual([]);
    const sample = (text: string, series: string) =>
      Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    expect(sample(operator, 'kubeglue_runner_pods_created_total')).toBeGreaterThanOrEqual(1);
    expect(sample(operator, 'kubeglue_runner_pod_start_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(
      sample(operator, 'kubeglue_toolruns_finished_total{status="success",reason="Succeeded"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(operator, 'kubeglue_toolruns{state="done"}')).toBeGreaterThanOrEqual(1);
    expect(sample(operator, 'kubeglue_toolruns{state="waiting"}')).toBe(0);
  });

  it('serves Tools and Systems applied from the GitOps example once they are Ready', async () => {
    const { stdout } = await exec('kubectl', ['kustomize', join(REPO, 'examples', 'gitops')]);
    const objects = parseAllDocuments(stdout).map(
      (document) => document.toJS() as { kind: string; metadata: Node; spec?: Node },
    );
    // Credentials never in Git: Systems only name their Secrets.
    expect(objects.filter((object) => object.kind === 'Secret')).toEqual([]);
    for (const system of objects.filter((object) => object.kind === 'System')) {
      expect(Object.keys(system.spec ?? {})).not.toContain('credentials');
      expect(system.spec?.credentialsSecretRef).toBeDefined();
    }
    for (const object of objects) object.metadata.namespace = bed.namespace.name;
    const file = join(bed.dir, 'gitops.yaml');
    await writeFile(file, objects.map((object) => stringify(object)).join('---\n'));
    await bed.kubectl('apply', '-f', file);
    // What External Secrets Operator would create for crm-prod; crm-dev's Secret stays missing.
    await bed.kubectl(
      'create',
      'secret',
      'generic',
      'crm-prod-credentials',
      '--from-literal=apiKey=test-key-0123',
    );
    await bed.kubectl(
      'wait',
      '--for=condition=Ready',
      'tool/crm-recent-contacts',
      'tool/list-posts',
      '--timeout=60s',
    );
    await bed.kubectl('wait', '--for=condition=Ready', 'system/crm-prod', '--timeout=60s');
    await waitUntil(
      async () =>
        (await bed.kubectl(
          'get',
          'system',
          'crm-dev',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].reason}',
        )) === 'SecretNotFound',
      30_000,
      'crm-dev to report its missing Secret',
    );
    const tool = await call<{ id: string; steps: unknown[] }>('GET', '/v1/tools/crm-recent-contacts');
    expect(tool.status).toBe(200);
    expect(tool.body.id).toBe('crm-recent-contacts');
    const systems = await call<{ data: { id: string }[] }>('GET', '/v1/systems');
    expect(systems.body.data.map((system) => system.id)).toEqual(
      expect.arrayContaining(['crm', 'jsonplaceholder']),
    );
  }, 120_000);

  it('rolls out a changed value with helm upgrade and keeps the generated keys', async () => {
    const keysBefore = await secretData(`${RELEASE}-keys`);
    const [before] = await running('operator');
    await helmCli('upgrade', RELEASE, CHART_DIR, '--values', valuesFile, '--set', 'operator.maxAsyncRuns=8');
    await waitUntil(
      async () => {
        const now = await running('operator');
        const env = now[0]?.spec.containers[0]?.env ?? [];
        return (
          now.length === 1 &&
          now[0]?.metadata.name !== before?.metadata.name &&
          env.some((e) => e.name === 'KUBEGLUE_MAX_ASYNC_RUNS' && e.value === '8')
        );
      },
      90_000,
      'a new operator Pod with the new setting',
    );
    const [after] = await running('operator');
    expect(after?.metadata.labels?.['pod-template-hash']).not.toBe(
      before?.metadata.labels?.['pod-template-hash'],
    );
    // The new Pod leads once the old one released the Lease.
    await waitUntil(
      async () => {
        const lease = await get<{ spec?: { holderIdentity?: string } }>(
          `/apis/coordination.k8s.io/v1/namespaces/${bed.namespace.name}/leases/${RELEASE}-operator`,
        );
        return lease.spec?.holderIdentity?.startsWith(`${after?.metadata.name}_`) ?? false;
      },
      60_000,
      'the new operator to lead',
    );
    expect(await secretData(`${RELEASE}-keys`)).toEqual(keysBefore);
    expect(await apiReady()).toBe(true);
  }, 150_000);

  it('uninstalls as docs/helm.md says: in-flight runs cancelled, then only CRDs, Tools and keys stay', async () => {
    // A run in flight: its target answers only after a minute.
    target.route('GET', '/posts', { delayMs: 60_000, body: [] });
    const started = await call<Run>('POST', '/v1/tools/list-posts/run', { options: { async: true } });
    expect(started.status).toBe(202);
    await waitUntil(
      async () =>
        (await toolRuns()).some(
          (toolRun) =>
            toolRun.spec.runId === started.body.runId && toolRun.status?.executionPhase === 'Running',
        ),
      60_000,
      "the run's runner Pod to run",
    );
    const [drainAndUninstall] = documentedCommands('Uninstalling', bed.namespace.name);
    await runDocumented(drainAndUninstall as string);
    installed = false;
    // Each ToolRun went only once the operator had recorded its run (the finalizer): none is left.
    expect(await toolRuns()).toEqual([]);
    const lease = `/apis/coordination.k8s.io/v1/namespaces/${bed.namespace.name}/leases/${RELEASE}-operator`;
    expect((await bed.kube.request(lease)).status).toBe(404);
    const apps = `/apis/apps/v1/namespaces/${bed.namespace.name}/deployments`;
    expect(((await get<{ items: unknown[] }>(apps)).items ?? []).length).toBe(0);
    await waitUntil(
      async () => (await pods('api')).length + (await pods('operator')).length === 0,
      60_000,
      'the Pods to go',
    );
    expect(await secretData(`${RELEASE}-keys`)).toHaveProperty('master-key');
    const crd = await bed.kube.request(
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tools.kubeglue.dev',
    );
    expect(crd.status).toBe(200);
    // Resources written through kubeglue stay too: the CRDs were not removed.
    expect(
      (
        await bed.kube.request(
          `/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/tools/list-posts`,
        )
      ).status,
    ).toBe(200);
  }, 180_000);

  it('frees a namespace stuck Terminating on ToolRuns whose operator is gone, with the documented command', async () => {
    const orphans = await bed.createNamespace('orphans');
    const path = `/apis/kubeglue.dev/v1alpha1/namespaces/${orphans.name}/toolruns`;
    // What an operator leaves when it goes mid-run: a ToolRun still holding the finalizer.
    const created = await bed.kube.request(path, {
      body: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolRun',
        metadata: { name: 'in-flight', finalizers: [RECORDED_FINALIZER] },
        spec: {
          runId: 'in-flight',
          tool: {
            id: 'list-posts',
            steps: [{ id: 'x', config: { type: 'transform', transformCode: '(s) => s' } }],
          },
          requestSource: 'api',
          executionMode: 'prod',
        },
      },
    });
    expect(created.status).toBe(201);
    await orphans.delete();
    const namespace = async () => await bed.kube.request(`/api/v1/namespaces/${orphans.name}`);
    await waitUntil(
      async () =>
        ((await namespace()).body as { status?: { phase?: string } }).status?.phase === 'Terminating',
      30_000,
      'the namespace to terminate',
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await namespace()).status).toBe(200);
    const [, release] = documentedCommands('Uninstalling', orphans.name);
    await runDocumented(release as string);
    await waitUntil(async () => (await namespace()).status === 404, 60_000, 'the namespace to go');
  }, 120_000);
});
