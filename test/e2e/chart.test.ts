/**
 * The Helm chart installed for real: `helm install` of charts/kubeglue into the real node's cluster
 * (shared/kube-node, with the harness's kube-proxy and cluster DNS), so the api and operator run as
 * Pods from the image built from this checkout, under the chart's ServiceAccounts and Roles, reaching
 * the API server through the `kubernetes` Service and each other through their Services by DNS name.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Run } from '../../contract/api/run.ts';
import { helmBinary } from '../../contract/generate.ts';
import { allows, type RbacRole } from '../../contract/rbac.ts';
import { runnerPodName } from '../../operator/launchers/launcher.ts';
import { toolRunName } from '../../runs/toolrun.ts';
import { useTestDatabase } from '../support/database.ts';
import { callApi } from '../support/embedded.ts';
import { CHART_DIR, helmEnv } from '../support/helm.ts';
import { useHttpTarget } from '../support/http-target.ts';
import { type PodLike, waitFor } from '../support/kube-node/kubeglue.ts';
import { NODE_GATEWAY, type RealNode, sleep, startRealNode } from '../support/kube-node/node.ts';
import { describeRealNode } from './support.ts';

const exec = promisify(execFile);
const NAMESPACE = 'e2e-chart';
const RELEASE = 'kubeglue';

describeRealNode('the Helm chart on a real node', () => {
  const db = useTestDatabase();
  const target = useHttpTarget({ resetBeforeEach: false });
  let node: RealNode;
  let valuesFile: string;
  let apiUrl: string;
  let adminKey: string;
  let targetUrl: string;
  let installed = false;

  const kubectl = (...args: string[]) => node.kubectl(['-n', NAMESPACE, ...args]);
  /** helm inside the node's namespace (the API server listens there), with its own home. */
  const helm = async (...args: string[]) =>
    (
      await exec(
        'nsenter',
        [`--net=/run/netns/kgnode`, '--', helmBinary(), ...args, '--namespace', NAMESPACE],
        {
          env: { ...process.env, ...helmEnv(node.kubeconfig) },
          timeout: 600_000,
          maxBuffer: 16 * 1024 * 1024,
        },
      )
    ).stdout;
  const call = <T>(method: string, path: string, body?: unknown) =>
    callApi<T>(apiUrl, adminKey, method, path, body);
  const pods = async (component: string) =>
    (
      (await node.get<{ items: (PodLike & { metadata: { deletionTimestamp?: string } })[] }>([
        '-n',
        NAMESPACE,
        'pods',
        '-l',
        `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${component}`,
      ])) ?? { items: [] }
    ).items;
  const finished = async (runId: string, timeoutMs = 90_000) =>
    (
      await waitFor(
        `run ${runId} to finish`,
        () => call<Run>('GET', `/v1/runs/${runId}`),
        (response) => response.status === 200 && response.body.status !== 'running',
        timeoutMs,
      )
    ).body;

  beforeAll(async () => {
    node = await startRealNode();
    try {
      target.route('GET', '/posts', { body: [{ id: 1, title: 'first' }] });
      target.route('GET', '/wait', { delayMs: 3000, body: { waited: true } });
      targetUrl = `http://${NODE_GATEWAY}:${await node.expose(Number(new URL(target.url).port))}`;
      const database = new URL(db.url);
      database.port = String(await node.expose(Number(database.port)));
      database.hostname = NODE_GATEWAY;
      await node.kubectl(['create', 'namespace', NAMESPACE]);
      await kubectl('create', 'secret', 'generic', `${RELEASE}-database`, `--from-literal=url=${database}`);
      valuesFile = join(node.paths.nodeHome, 'harness', 'chart-values.yaml');
      await writeFile(
        valuesFile,
        stringify({
          image: { repository: 'localhost/kubeglue', tag: 'dev', pullPolicy: 'Never' },
          logLevel: 'warn',
          // The HTTP target and Postgres are on the node's address, a private one.
          egress: { allow: [NODE_GATEWAY] },
          api: { replicas: 1, workers: 1 },
          operator: {
            deleteSucceededPods: false,
            extraEnv: [
              { name: 'KUBEGLUE_LEASE_DURATION_MS', value: '4000' },
              { name: 'KUBEGLUE_LEASE_RENEW_DEADLINE_MS', value: '3000' },
              { name: 'KUBEGLUE_LEASE_RETRY_MS', value: '500' },
            ],
          },
        }),
      );
      await helm('install', RELEASE, CHART_DIR, '--values', valuesFile, '--wait', '--timeout', '5m');
      installed = true;
      const service = await node.get<{ spec: { clusterIP: string } }>(['-n', NAMESPACE, 'service', RELEASE]);
      apiUrl = `http://127.0.0.1:${await node.reach(8080, service?.spec.clusterIP)}`;
      adminKey = Buffer.from(
        await kubectl('get', 'secret', `${RELEASE}-keys`, '-o', 'jsonpath={.data.admin-key}'),
        'base64',
      ).toString('utf8');
    } catch (error) {
      const diagnosis = await kubectl('get', 'pods,events', '-o', 'wide').catch(() => '');
      await node.stop();
      throw new Error(`${(error as Error).message}\n${diagnosis}`);
    }
  }, 1_800_000); // the node is one per machine: this may wait for another file to release it

  afterAll(async () => {
    if (installed) await helm('uninstall', RELEASE).catch(() => undefined);
    await node?.stop();
  }, 300_000);

  it('runs api and operator Pods from the image under the chart ServiceAccounts, with passing probes', async () => {
    for (const component of ['api', 'operator']) {
      const [pod] = await pods(component);
      const full = JSON.parse(await kubectl('get', 'pod', pod?.metadata.name ?? '', '-o', 'json')) as {
        spec: { serviceAccountName: string; containers: { image: string }[] };
        status: { phase: string; containerStatuses: { ready: boolean; restartCount: number }[] };
      };
      expect(full.spec.serviceAccountName).toBe(`${RELEASE}-${component}`);
      expect(full.spec.containers[0]?.image).toBe('localhost/kubeglue:dev');
      expect(full.status.phase).toBe('Running');
      expect(full.status.containerStatuses[0]).toMatchObject({ ready: true, restartCount: 0 });
    }
    expect((await fetch(`${apiUrl}/readyz`)).status).toBe(200);
  }, 60_000);

  it('runs a REST run and an async run (in a runner Pod) through the api Service', async () => {
    const created = await call('POST', '/v1/tools', {
      id: 'posts',
      steps: [{ id: 'fetch', config: { url: `${targetUrl}/posts` } }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sync = await call<{ status: string; data: unknown }>('POST', '/v1/tools/posts/run', {});
    expect(sync.body).toMatchObject({ status: 'success', data: [{ id: 1, title: 'first' }] });
    const started = await call<Run>('POST', '/v1/tools/posts/run', { options: { async: true } });
    expect(started.status).toBe(202);
    const run = await finished(started.body.runId);
    expect(run.status, run.error).toBe('success');
    // It ran in a runner Pod on the node, from the same image.
    // (The runner records its result, then exits: the Pod completes a moment after the run.)
    const runner = await waitFor(
      'the runner Pod to complete',
      () => node.get<PodLike>(['-n', NAMESPACE, 'pod', runnerPodName(toolRunName(started.body.runId), 1)]),
      (pod) => pod?.status?.phase === 'Succeeded',
      60_000,
    );
    expect(runner?.spec?.containers[0]?.image).toBe('localhost/kubeglue:dev');
  }, 180_000);

  it('rolls api and operator with helm upgrade without losing an accepted run', async () => {
    const created = await call('POST', '/v1/tools', {
      id: 'waits',
      steps: [{ id: 'fetch', config: { url: `${targetUrl}/wait` } }],
    });
    expect(created.status).toBe(201);
    const before = [...(await pods('api')), ...(await pods('operator'))].map((pod) => pod.metadata.name);
    const accepted: string[] = [];
    let refused = 0;
    let upgrading = true;
    const load = (async () => {
      while (upgrading) {
        const started = await call<Run>('POST', '/v1/tools/waits/run', { options: { async: true } }).catch(
          () => undefined,
        );
        if (started?.status === 202) accepted.push(started.body.runId);
        else refused++;
        // Each run is a runner Pod: a few a minute keep the 2-core node able to start the new Pods.
        await sleep(4000);
      }
    })();
    try {
      await helm(
        'upgrade',
        RELEASE,
        CHART_DIR,
        '--values',
        valuesFile,
        '--set',
        'api.podAnnotations.rollout=two',
        '--set',
        'operator.podAnnotations.rollout=two',
        '--wait',
        '--timeout',
        '5m',
      );
      await waitFor(
        'the old api and operator Pods to go',
        async () => [...(await pods('api')), ...(await pods('operator'))].map((pod) => pod.metadata.name),
        (names) => names.length === 2 && names.every((name) => !before.includes(name)),
        120_000,
      );
    } finally {
      upgrading = false;
      await load;
    }
    expect(accepted.length).toBeGreaterThan(0);
    for (const runId of accepted) expect((await finished(runId, 180_000)).status).toBe('success');
    // Requests the old Pod refused while leaving are not accepted runs; report them for the figure.
    console.log(
      `helm upgrade: ${accepted.length} runs accepted during the roll, ${refused} requests refused`,
    );
  }, 600_000);

  it('makes only the API requests the RBAC module grants the chart ServiceAccounts (audit log)', async () => {
    const used = new Map<string, Set<string>>();
    for (const event of await node.auditEvents()) {
      const match = new RegExp(`^system:serviceaccount:${NAMESPACE}:${RELEASE}-(api|operator)$`).exec(
        event.user.username,
      );
      if (!match || !event.objectRef?.resource) continue;
      const resource = event.objectRef.subresource
        ? `${event.objectRef.resource}/${event.objectRef.subresource}`
        : event.objectRef.resource;
      const key = `${match[1]} ${event.verb} ${event.objectRef.apiGroup ?? ''} ${resource}`;
      used.set(key, new Set([...(used.get(key) ?? []), String(event.responseStatus?.code ?? '')]));
    }
    expect(used.size).toBeGreaterThan(0);
    const outside = [...used.keys()].filter((key) => {
      const [role, verb, apiGroup, resource] = key.split(' ') as [RbacRole, string, string, string];
      return !allows(role, apiGroup, resource, verb);
    });
    expect(outside).toEqual([]);
    // And nothing was refused: the Roles cover what the Pods do.
    const refused = [...used].filter(([, codes]) => codes.has('403')).map(([key]) => key);
    expect(refused).toEqual([]);
  });

  it('leaves only what docs/helm.md says helm uninstall keeps', async () => {
    await kubectl('delete', 'toolruns', '--all', '--timeout=120s');
    await helm('uninstall', RELEASE, '--wait', '--timeout', '3m');
    installed = false;
    const left = await waitFor(
      'the release objects to go',
      async () =>
        (
          await kubectl(
            'get',
            'deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,networkpolicies,poddisruptionbudgets,configmaps,secrets,leases',
            '-o',
            'name',
          )
        )
          .split('\n')
          .filter(Boolean)
          .filter(
            (name) =>
              !/^(serviceaccount\/default|configmap\/kube-root-ca\.crt|secret\/default-token-)/.test(name),
          ),
      (names) => !names.some((name) => name.startsWith('pod/')),
      120_000,
    );
    expect(left.sort()).toEqual(
      [
        `lease.coordination.k8s.io/${RELEASE}-operator`,
        `secret/${RELEASE}-database`,
        `secret/${RELEASE}-keys`,
      ].sort(),
    );
    // The CRDs stay (helm.sh/resource-policy: keep), with the Tools.
    expect(await node.kubectl(['get', 'crd', 'tools.kubeglue.dev', '-o', 'name'])).toContain(
      'tools.kubeglue.dev',
    );
  }, 300_000);
});
