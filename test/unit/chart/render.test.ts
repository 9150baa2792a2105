import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadOperatorSettings, loadSettings } from '../../../config/config.ts';
import { CRD_DIR } from '../../../contract/generate.ts';
import type { Pod } from '../../../kube/types.ts';
import { RUNNER_SELECTOR } from '../../../operator/launchers/launcher.ts';
import { buildRunnerPod } from '../../../operator/toolrun/pod.ts';
import {
  CHART_DIR,
  EVERYTHING_VALUES,
  find,
  helm,
  type K8sObject,
  parseObjects,
  REPO,
  renderChart,
} from '../../support/helm.ts';
import { restrictedViolations } from '../../support/pod-security.ts';

type Node = Record<string, unknown>;
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Node;
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string } };
  livenessProbe?: { httpGet?: { path: string; port: string } };
  resources?: { requests?: Node; limits?: Node };
}

const spec = (object: K8sObject) => object.spec as Node;
const podTemplate = (workload: K8sObject) => (spec(workload).template as { spec: Pod['spec'] }).spec;
const containerOf = (workload: K8sObject) => podTemplate(workload).containers[0] as unknown as Container;
const envOf = (container: Container) => Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));
/** The literal variables of a container, as a process would see them (Secrets and fieldRefs left out). */
const literalEnv = (container: Container) =>
  Object.fromEntries(
    (container.env ?? []).flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : [])),
  ) as Record<string, string>;
const podOf = (workload: K8sObject): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: workload.metadata.name },
  spec: podTemplate(workload),
});

/** The runner Pod the operator would build with the chart's operator settings. */
function runnerPodFrom(operator: K8sObject): Pod {
  const settings = loadOperatorSettings(literalEnv(containerOf(operator)));
  const toolRun = {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolRun',
    metadata: { name: 'run-1', namespace: 'kubeglue', uid: 'uid-1' },
    spec: { runId: 'run-1', tool: { id: 't', steps: [] }, requestSource: 'api', executionMode: 'prod' },
  } as unknown as Parameters<typeof buildRunnerPod>[0];
  return buildRunnerPod(toolRun, 1, { podName: 'run-1-a1', tokenSecretName: 'run-1-token' }, settings);
}

describe('the chart with default values', () => {
  let objects: K8sObject[];
  let api: K8sObject;
  let operator: K8sObject;
  const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Node;

  beforeAll(async () => {
    objects = await renderChart();
    api = find(objects, 'Deployment', 'kubeglue-api');
    operator = find(objects, 'Deployment', 'kubeglue-operator');
  });

  it('passes helm lint, with defaults and with every option on', async () => {
    await expect(helm(['lint', '--strict', CHART_DIR])).resolves.toMatch(/0 chart\(s\) failed/);
    await expect(helm(['lint', '--strict', CHART_DIR, '--values', EVERYTHING_VALUES])).resolves.toMatch(
      /0 chart\(s\) failed/,
    );
  });

  it("renders the CRDs of crds/ (its copy in files/crds) as the release's, kept on uninstall", async () => {
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    const files = (await readdir(join(REPO, CRD_DIR))).filter((name) => name.endsWith('.yaml'));
    expect(crds).toHaveLength(files.length);
    for (const file of files) {
      const generated = parse(readFileSync(join(REPO, CRD_DIR, file), 'utf8')) as K8sObject;
      const rendered = find(crds, 'CustomResourceDefinition', generated.metadata.name);
      expect(rendered.spec).toEqual(generated.spec);
      expect(rendered.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
      expect(rendered.metadata.labels).toMatchObject({
        'app.kubernetes.io/part-of': 'kubeglue',
        'app.kubernetes.io/instance': 'kubeglue',
      });
    }
    const without = await renderChart({ set: { 'crds.install': false } });
    expect(without.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    const unkept = await renderChart({ set: { 'crds.keep': false } });
    expect(unkept.find((o) => o.kind === 'CustomResourceDefinition')?.metadata.annotations).toBeUndefined();
  });

  it('carries the CRDs of crds/ inside its package, as a chart repository serves it (helm package)', async () => {
    const out = await mkdtemp(join(tmpdir(), 'kubeglue-package-'));
    try {
      await helm(['package', CHART_DIR, '--destination', out]);
      const [archive] = (await readdir(out)).filter((name) => name.endsWith('.tgz'));
      const packaged = parseObjects(
        await helm(['template', 'kubeglue', join(out, archive as string), '--namespace', 'kubeglue']),
      ).filter((o) => o.kind === 'CustomResourceDefinition');
      const files = (await readdir(join(REPO, CRD_DIR))).filter((name) => name.endsWith('.yaml'));
      expect(packaged).toHaveLength(files.length);
      for (const file of files) {
        const generated = parse(readFileSync(join(REPO, CRD_DIR, file), 'utf8')) as K8sObject;
        expect(find(packaged, 'CustomResourceDefinition', generated.metadata.name).spec).toEqual(
          generated.spec,
        );
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('renders CRDs without CEL rules for every server version, whose schema Helm checks against', async () => {
    expect(JSON.stringify(objects)).not.toContain('x-kubernetes-validations');
    const old = await renderChart({ extraArgs: ['--kube-version', 'v1.20.2'] });
    expect(JSON.stringify(old)).not.toContain('x-kubernetes-validations');
    expect(old.filter((o) => o.kind === 'CustomResourceDefinition')).toHaveLength(4);
  });

  it('renders the api, operator, Services, NetworkPolicies, RBAC, keys and a PodDisruptionBudget', () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'CustomResourceDefinition/systems.kubeglue.dev',
      'CustomResourceDefinition/toolruns.kubeglue.dev',
      'CustomResourceDefinition/tools.kubeglue.dev',
      'CustomResourceDefinition/toolschedules.kubeglue.dev',
      'Deployment/kubeglue-api',
      'Deployment/kubeglue-operator',
      'NetworkPolicy/kubeglue-api',
      'NetworkPolicy/kubeglue-operator',
      'NetworkPolicy/kubeglue-runner',
      'PodDisruptionBudget/kubeglue-api',
      'PodDisruptionBudget/kubeglue-operator',
      'Role/kubeglue-api',
      'Role/kubeglue-operator',
      'RoleBinding/kubeglue-api',
      'RoleBinding/kubeglue-operator',
      'Service/kubeglue',
      'Service/kubeglue-api-metrics',
      'Service/kubeglue-internal',
      'Service/kubeglue-operator-metrics',
      'ServiceAccount/kubeglue-api',
      'ServiceAccount/kubeglue-operator',
      'ServiceAccount/kubeglue-runner',
    ]);
    for (const object of objects.filter((o) => o.kind !== 'CustomResourceDefinition'))
      expect(object.metadata.namespace, object.kind).toBe('kubeglue');
  });

  it('gives the api and operator Pods, and the runner Pods the operator builds, the restricted profile', () => {
    expect(restrictedViolations(podOf(api))).toEqual([]);
    expect(restrictedViolations(podOf(operator))).toEqual([]);
    const runner = runnerPodFrom(operator);
    expect(restrictedViolations(runner)).toEqual([]);
    for (const pod of [podOf(api), podOf(operator), runner]) {
      expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
      for (const container of pod.spec.containers) {
        expect(container.securityContext?.readOnlyRootFilesystem, pod.metadata.name).toBe(true);
        expect(container.resources?.requests, pod.metadata.name).toBeDefined();
        expect(container.resources?.limits, pod.metadata.name).toBeDefined();
        // /tmp is the only writable path (the image's HOME and data dir are there too).
        expect(container.volumeMounts?.map((m) => m.mountPath)).toContain('/tmp');
      }
    }
  });

  it('runs as the numeric user of the image (the Dockerfile USER)', () => {
    expect((values.image as Node).userId).toBe(65532);
    const dockerfile = join(REPO, 'Dockerfile');
    if (existsSync(dockerfile)) {
      const user = /^USER\s+(\d+)/m.exec(readFileSync(dockerfile, 'utf8'))?.[1];
      expect(Number(user)).toBe(65532);
    }
  });

  it('hands the operator what runner Pods need: image, internal Service, user, ServiceAccount', () => {
    const env = literalEnv(containerOf(operator));
    expect(env.KUBEGLUE_RUNNER_IMAGE).toBe(containerOf(operator).image);
    expect(containerOf(operator).image).toBe('ghcr.io/kubeglue/kubeglue:0.1.0');
    expect(env.KUBEGLUE_RUNNER_USER_ID).toBe('65532');
    const internal = find(objects, 'Service', 'kubeglue-internal');
    const internalPort = (spec(internal).ports as { port: number }[])[0]?.port;
    expect(env.KUBEGLUE_INTERNAL_URL).toBe(`http://kubeglue-internal:${internalPort}`);
    expect(spec(internal).selector).toEqual((spec(api).selector as Node).matchLabels);
    expect(env.KUBEGLUE_RUNNER_SERVICE_ACCOUNT).toBe('kubeglue-runner');
    const runnerAccount = find(objects, 'ServiceAccount', 'kubeglue-runner');
    expect(runnerAccount.automountServiceAccountToken).toBe(false);
    // No binding names the runner's ServiceAccount: it has no RBAC at all.
    for (const binding of objects.filter((o) => o.kind.endsWith('Binding'))) {
      expect(JSON.stringify(binding.subjects)).not.toContain('kubeglue-runner');
    }
    const runner = runnerPodFrom(operator);
    expect(runner.spec.serviceAccountName).toBe('kubeglue-runner');
    expect(runner.spec.automountServiceAccountToken).toBe(false);
    expect(runner.spec.containers[0]?.image).toBe(containerOf(operator).image);
  });

  it('sets no runner placement or security adjustment by default', () => {
    const env = literalEnv(containerOf(operator));
    expect(
      Object.keys(env).filter((name) =>
        /NODE_SELECTOR|TOLERATIONS|AFFINITY|PRIORITY|_LABELS|ANNOTATIONS|SECURITY/.test(name),
      ),
    ).toEqual([]);
  });

  it('keeps clusters clean by default: ToolRuns 1 h, succeeded Pods deleted, failed ones kept 15 minutes', () => {
    const settings = loadOperatorSettings(literalEnv(containerOf(operator)));
    expect(settings).toMatchObject({
      toolRunRetentionMs: 3_600_000,
      deleteSucceededPods: true,
      failedPodRetentionMs: 900_000,
      egress: { privateDefault: 'deny' },
      runnerImagePullPolicy: 'IfNotPresent',
    });
  });

  it('gives api and operator namespace, Pod name, host, database and keys, and their settings load', () => {
    for (const [role, workload] of [
      ['api', api],
      ['operator', operator],
    ] as const) {
      const env = envOf(containerOf(workload));
      expect(env.KUBEGLUE_NAMESPACE?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
      expect(env.KUBEGLUE_POD_NAME?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
      expect(env.KUBEGLUE_HOST?.value).toBe('0.0.0.0');
      expect(env.KUBEGLUE_DATABASE_URL?.valueFrom).toEqual({
        secretKeyRef: { name: 'kubeglue-database', key: 'url' },
      });
      // The keys come from the Secret the api creates at its first start, never from the render.
      expect(env.KUBEGLUE_MASTER_KEY).toBeUndefined();
      const literal = literalEnv(containerOf(workload));
      expect(literal.KUBEGLUE_KEYS_SECRET).toBe('kubeglue-keys');
      expect(() => loadSettings(role, literal)).not.toThrow();
    }
    expect(envOf(containerOf(api)).KUBEGLUE_ADMIN_KEY).toBeUndefined();
    // Unset, Node would start one engine worker per CPU of the node.
    expect(literalEnv(containerOf(api)).KUBEGLUE_WORKERS).toBe('2');
    expect(containerOf(api).args).toEqual(['api']);
    expect(containerOf(operator).args).toEqual(['operator']);
  });

  it('runs 2 api replicas with probes, a PodDisruptionBudget and a topology spread', () => {
    expect(spec(api).replicas).toBe(2);
    const container = containerOf(api);
    expect(container.readinessProbe).toEqual({
      httpGet: { path: '/readyz', port: 'http' },
      periodSeconds: 5,
      failureThreshold: 2,
    });
    expect(container.livenessProbe).toEqual({
      httpGet: { path: '/healthz', port: 'http' },
      initialDelaySeconds: 30,
      periodSeconds: 10,
      failureThreshold: 6,
    });
    expect(container).not.toHaveProperty('startupProbe');
    expect(objects.map((o) => o.kind)).not.toContain('HorizontalPodAutoscaler');
    expect(container.ports).toEqual([
      { name: 'http', containerPort: 8080 },
      { name: 'internal', containerPort: 8081 },
      { name: 'gateway-relay', containerPort: 8082 },
      { name: 'metrics', containerPort: 9091 },
    ]);
    const pdb = find(objects, 'PodDisruptionBudget', 'kubeglue-api');
    expect(spec(pdb)).toMatchObject({ maxUnavailable: 1, selector: spec(api).selector });
    expect((podTemplate(api) as unknown as Node).topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: spec(api).selector as Node,
      },
    ]);
  });

  it('runs 1 operator replica with a leader Lease, metrics and health on the metrics port', () => {
    expect(spec(operator).replicas).toBe(1);
    const container = containerOf(operator);
    expect(literalEnv(container).KUBEGLUE_LEASE_NAME).toBe('kubeglue-operator');
    expect(container.ports).toEqual([{ name: 'metrics', containerPort: 9090 }]);
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    const metrics = find(objects, 'Service', 'kubeglue-operator-metrics');
    expect(spec(metrics).selector).toEqual((spec(operator).selector as Node).matchLabels);
    // A drain takes the operator down one Pod at a time (with 1 replica it does not block the drain).
    const pdb = find(objects, 'PodDisruptionBudget', 'kubeglue-operator');
    expect(spec(pdb)).toMatchObject({ maxUnavailable: 1, selector: spec(operator).selector });
  });

  it('serves the metrics of api and operator on ports and Services of their own, never the public one', () => {
    expect(literalEnv(containerOf(api)).KUBEGLUE_METRICS_PORT).toBe('9091');
    expect(loadSettings('api', literalEnv(containerOf(api))).metricsPort).toBe(9091);
    for (const [role, workload, port] of [
      ['api', api, 9091],
      ['operator', operator, 9090],
    ] as const) {
      const service = find(objects, 'Service', `kubeglue-${role}-metrics`);
      expect(spec(service).selector).toEqual((spec(workload).selector as Node).matchLabels);
      expect(spec(service).ports).toEqual([{ name: 'metrics', port, targetPort: 'metrics' }]);
      expect(service.metadata.labels?.['kubeglue.dev/metrics']).toBe('true');
    }
    const publicService = find(objects, 'Service', 'kubeglue');
    expect(spec(publicService).ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http' }]);
    expect(publicService.metadata.labels?.['kubeglue.dev/metrics']).toBeUndefined();
    // Prometheus reaches the api's metrics port through its NetworkPolicy; the public rule is apart.
    const ingress = spec(find(objects, 'NetworkPolicy', 'kubeglue-api')).ingress as { ports: Node[] }[];
    expect(ingress.map((rule) => rule.ports)).toContainEqual([{ protocol: 'TCP', port: 9091 }]);
  });

  it('lets runner Pods reach only the internal port, the gateway relay, DNS and public addresses, and only them the internal port', () => {
    const runner = spec(find(objects, 'NetworkPolicy', 'kubeglue-runner'));
    expect(runner.podSelector).toEqual({ matchLabels: RUNNER_SELECTOR });
    expect(runner.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(runner.ingress).toEqual([]);
    const egress = runner.egress as { to: Node[]; ports?: Node[] }[];
    expect(egress[0]).toEqual({
      to: [{ podSelector: spec(api).selector }],
      ports: [
        { protocol: 'TCP', port: 8081 },
        { protocol: 'TCP', port: 8082 },
      ],
    });
    expect(egress[1]?.ports).toEqual([
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ]);
    const blocks = egress[2]?.to.map((peer) => peer.ipBlock as { cidr: string; except: string[] });
    expect(blocks?.map((b) => b.cidr)).toEqual(['0.0.0.0/0', '::/0']);
    // The cluster lives in private ranges: none of them is reachable.
    expect(blocks?.[0]?.except).toEqual(
      expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']),
    );
    expect(blocks?.[1]?.except).toEqual(expect.arrayContaining(['fc00::/7', 'fe80::/10']));
    expect(egress).toHaveLength(3);

    const apiPolicy = spec(find(objects, 'NetworkPolicy', 'kubeglue-api'));
    const ingress = apiPolicy.ingress as { ports: Node[]; from?: Node[] }[];
    const internalRule = ingress.find((rule) => rule.ports.some((p) => p.port === 8081));
    expect(internalRule?.from).toEqual([{ podSelector: { matchLabels: RUNNER_SELECTOR } }]);
    expect(ingress.filter((rule) => rule.ports.some((p) => p.port === 8081))).toHaveLength(1);
    // The relay: other api replicas and runner Pods, which reach it through the internal Service.
    const relayRule = ingress.find((rule) => rule.ports.some((p) => p.port === 8082));
    expect(relayRule?.from).toEqual([
      { podSelector: spec(api).selector },
      { podSelector: { matchLabels: RUNNER_SELECTOR } },
    ]);
    const internal = spec(find(objects, 'Service', 'kubeglue-internal'));
    expect(internal.ports).toContainEqual({ name: 'gateway-relay', port: 8082, targetPort: 'gateway-relay' });
    const operatorEnv = envOf(containerOf(find(objects, 'Deployment', 'kubeglue-operator')));
    expect(operatorEnv.KUBEGLUE_RUNNER_GATEWAY_RELAY?.value).toBe('kubeglue-internal:8082');
  });

  it('renders no key: two offline renders (helm template, Argo CD) are the same', async () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const again = await renderChart();
    expect(again).toEqual(objects);
    // Every option on, the dev Postgres aside (its password is for helm install: docs/helm.md).
    const everything = ['--values', EVERYTHING_VALUES, '--set', 'postgres.enabled=false'];
    const first = await helm(['template', 'kubeglue', CHART_DIR, ...everything]);
    expect(await helm(['template', 'kubeglue', CHART_DIR, ...everything])).toBe(first);
    expect(first).not.toMatch(/master-key|kind: Secret/);
  });

  it('reads the keys of an existing Secret when keys.existingSecret names one', async () => {
    const rendered = await renderChart({
      set: { 'keys.existingSecret': 'vault-keys', 'keys.masterKeyKey': 'mk', 'keys.adminKeyKey': 'ak' },
    });
    expect(rendered.filter((o) => o.kind === 'Secret')).toEqual([]);
    for (const name of ['kubeglue-api', 'kubeglue-operator']) {
      const env = envOf(containerOf(find(rendered, 'Deployment', name)));
      expect(env.KUBEGLUE_MASTER_KEY?.valueFrom).toEqual({ secretKeyRef: { name: 'vault-keys', key: 'mk' } });
      expect(env.KUBEGLUE_KEYS_SECRET).toBeUndefined();
    }
    const api = envOf(containerOf(find(rendered, 'Deployment', 'kubeglue-api')));
    expect(api.KUBEGLUE_ADMIN_KEY?.valueFrom).toEqual({
      secretKeyRef: { name: 'vault-keys', key: 'ak', optional: true },
    });
  });
});

describe('the chart with every option on', () => {
  let objects: K8sObject[];
  beforeAll(async () => {
    objects = await renderChart({ namespace: 'integrations', valuesFiles: [EVERYTHING_VALUES] });
  });

  it('points the ServiceMonitor at the metrics Services and the Ingress at the public one only', () => {
    const monitor = spec(find(objects, 'ServiceMonitor', 'kg'));
    expect(monitor.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '15s' }]);
    const selected = objects.filter(
      (o) =>
        o.kind === 'Service' &&
        Object.entries((monitor.selector as { matchLabels: Record<string, string> }).matchLabels).every(
          ([key, value]) => o.metadata.labels?.[key] === value,
        ),
    );
    expect(selected.map((o) => o.metadata.name).sort()).toEqual(['kg-api-metrics', 'kg-operator-metrics']);
    const rules = spec(find(objects, 'Ingress', 'kg')).rules as { http: { paths: Node[] } }[];
    for (const rule of rules) {
      expect(rule.http.paths).toEqual([
        { path: '/', pathType: 'Prefix', backend: { service: { name: 'kg', port: { name: 'http' } } } },
      ]);
    }
    const publicService = find(objects, 'Service', 'kg');
    expect((spec(publicService).ports as Node[]).map((port) => port.targetPort)).toEqual(['http']);
  });

  it('scales the api with an HPA instead of a replica count, and takes the probe timings', () => {
    const api = find(objects, 'Deployment', 'kg-api');
    expect(spec(api)).not.toHaveProperty('replicas');
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'kg-api');
    expect(spec(hpa)).toEqual({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'kg-api' },
      minReplicas: 3,
      maxReplicas: 12,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } },
        },
        {
          type: 'Resource',
          resource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 80 } },
        },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 600 } },
    });
    const container = containerOf(api) as Container & { startupProbe?: Node };
    expect(container.readinessProbe).toEqual({
      httpGet: { path: '/readyz', port: 'http' },
      periodSeconds: 3,
      failureThreshold: 3,
      timeoutSeconds: 2,
    });
    expect(container.startupProbe).toEqual({
      httpGet: { path: '/healthz', port: 'http' },
      periodSeconds: 2,
      failureThreshold: 60,
    });
    const operator = containerOf(find(objects, 'Deployment', 'kg-operator')) as Container & {
      startupProbe?: Node;
    };
    expect(operator.livenessProbe).toEqual({
      httpGet: { path: '/healthz', port: 'metrics' },
      initialDelaySeconds: 60,
      periodSeconds: 30,
      failureThreshold: 4,
    });
    expect(operator.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(spec(find(objects, 'PodDisruptionBudget', 'kg-operator')).maxUnavailable).toBe('50%');
  });

  it('renders extraObjects, objects and strings, as templates of the release', () => {
    expect(find(objects, 'ConfigMap', 'kubeglue-extra').data).toEqual({ 'api-replicas': '3' });
    const fromString = find(objects, 'ConfigMap', 'kg-extra-string');
    expect(fromString.metadata.namespace).toBe('integrations');
    expect(fromString.data).toEqual({ from: 'a string' });
  });

  it('renders the dev Postgres, ServiceMonitor, Ingress and cluster-wide RBAC too', () => {
    const kinds = new Set(objects.map((o) => o.kind));
    for (const kind of ['StatefulSet', 'ServiceMonitor', 'Ingress', 'ClusterRole', 'ClusterRoleBinding']) {
      expect(kinds, kind).toContain(kind);
    }
    expect(kinds).not.toContain('Role');
  });

  it('keeps every Pod restricted, the dev Postgres included', () => {
    for (const workload of objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind))) {
      expect(restrictedViolations(podOf(workload)), workload.metadata.name).toEqual([]);
    }
    const operator = find(objects, 'Deployment', 'kg-operator');
    expect(restrictedViolations(runnerPodFrom(operator))).toEqual([]);
    const runner = runnerPodFrom(operator);
    expect(runner.spec).toMatchObject({
      serviceAccountName: 'kg-runner-sa',
      imagePullSecrets: [{ name: 'registry-credentials' }, { name: 'mirror-credentials' }],
      nodeSelector: { 'node-pool': 'runners' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'runners', effect: 'NoSchedule' }],
      affinity: { podAntiAffinity: expect.any(Object) },
      priorityClassName: 'batch-low',
    });
    expect(runner.metadata.labels).toMatchObject({ team: 'integrations' });
    expect(runner.metadata.annotations).toMatchObject({ 'sidecar.istio.io/inject': 'false' });
    // The platform picks the user (null): the fields are gone, the rest of the profile stays.
    expect(runner.spec.securityContext).toEqual({
      runAsNonRoot: true,
      fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/runner.json' },
    });
    expect(runner.spec.containers[0]?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsGroup: 10001,
      readOnlyRootFilesystem: true,
      seLinuxOptions: { level: 's0:c123,c456' },
    });
  });

  it('points api and operator at the dev Postgres and passes egress and pull secrets on', () => {
    const operator = find(objects, 'Deployment', 'kg-operator');
    const env = envOf(containerOf(operator));
    expect(env.KUBEGLUE_DATABASE_URL?.valueFrom).toEqual({
      secretKeyRef: { name: 'kg-postgres', key: 'url' },
    });
    const settings = loadOperatorSettings(literalEnv(containerOf(operator)));
    expect(settings).toMatchObject({
      egress: { allow: ['10.20.0.0/16', 'db.internal'], deny: ['blocked.example.com'] },
      runnerImagePullSecrets: ['registry-credentials', 'mirror-credentials'],
      maxAsyncRunsPerNamespace: 8,
      internalUrl: 'http://kg-internal.integrations.svc.cluster.local:9081',
      runnerUserId: 10001,
    });
    const api = find(objects, 'Deployment', 'kg-api');
    expect(literalEnv(containerOf(api))).toMatchObject({
      KUBEGLUE_EGRESS_ALLOW: '10.20.0.0/16,db.internal',
      KUBEGLUE_PUBLIC_URL: 'https://kubeglue.example.com',
      KUBEGLUE_PORT: '18080',
    });
  });
});

describe('the HorizontalPodAutoscaler API version', () => {
  const hpaVersion = async (extraArgs: string[]) =>
    find(
      await renderChart({ set: { 'api.autoscaling.enabled': true }, extraArgs }),
      'HorizontalPodAutoscaler',
      'kubeglue-api',
    ).apiVersion;

  it('is autoscaling/v2 from Kubernetes 1.23 and v2beta2 before, as the cluster reports', async () => {
    expect(await hpaVersion([])).toBe('autoscaling/v2');
    expect(await hpaVersion(['--kube-version', 'v1.20.2'])).toBe('autoscaling/v2beta2');
    expect(await hpaVersion(['--api-versions', 'autoscaling/v2beta2/HorizontalPodAutoscaler'])).toBe(
      'autoscaling/v2beta2',
    );
  });
});

describe('the PodDisruptionBudget API version', () => {
  const pdbVersion = async (extraArgs: string[]) =>
    find(await renderChart({ extraArgs }), 'PodDisruptionBudget', 'kubeglue-api').apiVersion;

  it('is policy/v1 from Kubernetes 1.21 and policy/v1beta1 before, as the cluster reports', async () => {
    expect(await pdbVersion([])).toBe('policy/v1');
    expect(await pdbVersion(['--kube-version', 'v1.20.2'])).toBe('policy/v1beta1');
    // What a live v1.20 cluster (or Argo CD, which passes the cluster's kinds) reports.
    expect(await pdbVersion(['--api-versions', 'policy/v1beta1/PodDisruptionBudget'])).toBe('policy/v1beta1');
    expect(
      await pdbVersion(['--kube-version', 'v1.20.2', '--api-versions', 'policy/v1/PodDisruptionBudget']),
    ).toBe('policy/v1');
  });
});
