import { beforeAll, expect, it } from 'vitest';
import { EVERYTHING_VALUES, type K8sObject, renderChart } from '../../support/helm.ts';
import { waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

type Node = Record<string, unknown>;

const CLUSTER_SCOPED = new Set([
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'Namespace',
]);

function plural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  if (lower.endsWith('ss')) return `${lower}es`;
  return `${lower}s`;
}

function collectionPath(object: K8sObject): string {
  const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
  const namespace = CLUSTER_SCOPED.has(object.kind) ? '' : `/namespaces/${object.metadata.namespace}`;
  return `${base}${namespace}/${plural(object.kind)}`;
}

/**
 * Fields we sent that the stored object lacks: v1.20 drops unknown fields silently (strict field
 * validation came in 1.25), so a misspelt or misplaced field shows up only this way. Empty values
 * are skipped (the server omits them).
 */
function droppedFields(sent: unknown, stored: unknown, path: string, out: string[]): void {
  if (Array.isArray(sent)) {
    sent.forEach((item, i) => {
      droppedFields(item, (stored as unknown[] | undefined)?.[i], `${path}[${i}]`, out);
    });
    return;
  }
  if (!sent || typeof sent !== 'object') return;
  for (const [key, value] of Object.entries(sent as Node)) {
    const empty =
      value === '' ||
      value === null ||
      (Array.isArray(value) && value.length === 0) ||
      (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
    const storedNode = stored as Node | undefined;
    if (!empty && (storedNode === undefined || !(key in storedNode))) out.push(`${path}.${key}`);
    else droppedFields(value, storedNode?.[key], `${path}.${key}`, out);
  }
}

/** A minimal structural CRD of the Prometheus Operator's: what it installs, reduced to a shell. */
const monitoringCrd = (kind: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${kind.toLowerCase()}s.monitoring.coreos.com` },
  spec: {
    group: 'monitoring.coreos.com',
    scope: 'Namespaced',
    names: {
      kind,
      listKind: `${kind}List`,
      plural: `${kind.toLowerCase()}s`,
      singular: kind.toLowerCase(),
    },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        },
      },
    ],
  },
});
const MONITORING_CRDS = [monitoringCrd('ServiceMonitor'), monitoringCrd('PrometheusRule')];

/**
 * Every object the chart renders, with default values and with every option on, is accepted by a
 * real API server (server-side dry run: admission and validation run, nothing is stored).
 */
describeKube('the Helm chart against the API server', () => {
  const bed = useKubeTestBed('helm-dry-run', { crds: true });

  beforeAll(async () => {
    const crds = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    for (const definition of MONITORING_CRDS) {
      const created = await bed.kube.request(crds, { body: definition });
      if (created.status >= 300 && created.status !== 409) throw new Error(JSON.stringify(created.body));
      await waitUntil(async () => {
        const crd = await bed.kube.request(`${crds}/${definition.metadata.name}`);
        const conditions = (crd.body as { status?: { conditions?: Node[] } }).status?.conditions ?? [];
        return conditions.some((c) => c.type === 'Established' && c.status === 'True');
      }, 20_000);
    }
  });

  /** Dry-run create, or dry-run replace for what exists already (the CRDs). Returns the problems. */
  async function dryRun(object: K8sObject): Promise<string[]> {
    const what = `${object.kind}/${object.metadata.name}`;
    const path = collectionPath(object);
    let answer = await bed.kube.request(`${path}?dryRun=All`, { body: object });
    if (answer.status === 409) {
      const current = await bed.kube.request(`${path}/${object.metadata.name}`);
      const resourceVersion = (current.body as { metadata: { resourceVersion: string } }).metadata
        .resourceVersion;
      answer = await bed.kube.request(`${path}/${object.metadata.name}?dryRun=All`, {
        method: 'PUT',
        body: { ...object, metadata: { ...object.metadata, resourceVersion } },
      });
    }
    if (answer.status >= 300) return [`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`];
    if (object.kind === 'CustomResourceDefinition') return []; // v1.20 drops the CEL rules by design
    const dropped: string[] = [];
    droppedFields(object, answer.body, what, dropped);
    return dropped.map((field) => `${field}: dropped by the API server (unknown field)`);
  }

  it.each([
    ['default values', [] as string[]],
    ['every option on', [EVERYTHING_VALUES]],
  ])('accepts every object rendered with %s', async (_name, valuesFiles) => {
    const objects = await renderChart({
      namespace: bed.namespace.name,
      valuesFiles,
      extraArgs: ['--include-crds', '--kube-version', bed.kube.serverVersion],
    });
    expect(objects.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const object of objects) problems.push(...(await dryRun(object)));
    expect(problems).toEqual([]);
    const kinds = objects.map((o) => o.kind);
    expect(kinds).toContain('CustomResourceDefinition');
    if (valuesFiles.length > 0) {
      for (const kind of [
        'StatefulSet',
        'ServiceMonitor',
        'PrometheusRule',
        'Ingress',
        'ClusterRole',
        'HorizontalPodAutoscaler',
      ])
        expect(kinds).toContain(kind);
    }
  });

  it('catches a field the API server does not know', async () => {
    const objects = await renderChart({ namespace: bed.namespace.name });
    const service = objects.find((o) => o.kind === 'Service') as K8sObject;
    const typo = { ...service, spec: { ...(service.spec as Node), selectr: { a: 'b' } } };
    expect(await dryRun(typo)).toEqual([
      `Service/${service.metadata.name}.spec.selectr: dropped by the API server (unknown field)`,
    ]);
  });
});
