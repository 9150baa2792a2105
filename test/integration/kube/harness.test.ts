import { join } from 'node:path';
import { ApiException, CoreV1Api, KubeConfig, type V1ConfigMap, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type FaultProxy, startKubeFaultProxy } from '../../support/kube/fault-proxy.ts';
import {
  createTestNamespace,
  describeKube,
  providedKube,
  useKubeTestBed,
} from '../../support/kube/provided.ts';

const hasControllerManager = providedKube()?.controllerManager ?? false;

interface WatchEnd {
  events: Array<{ type: string; object: { metadata?: { name?: string }; code?: number; reason?: string } }>;
  ended: Promise<unknown>;
  abort(): void;
}

describeKube('the Kubernetes test harness', () => {
  const bed = useKubeTestBed('harness');
  let proxy: FaultProxy;
  let admin: CoreV1Api;
  let adminConfig: KubeConfig;

  beforeAll(async () => {
    proxy = await startKubeFaultProxy(bed.kube);
    adminConfig = await kubeConfig('admin');
    admin = adminConfig.makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await proxy?.stop();
  });

  /** A client-node config for user that talks to the API server through the fault proxy. */
  async function kubeConfig(user: string): Promise<KubeConfig> {
    const config = new KubeConfig();
    config.loadFromFile(await bed.kube.writeKubeconfig(join(bed.dir, `${user}.kubeconfig`), user, proxy.url));
    return config;
  }

  const configMap = (name: string, data: Record<string, string> = {}): V1ConfigMap => ({
    metadata: { name, namespace: bed.namespace.name },
    data,
  });

  function startWatch(config: KubeConfig, path: string, query: Record<string, string> = {}): WatchEnd {
    const events: WatchEnd['events'] = [];
    let controller: AbortController | undefined;
    const ended = new Promise<unknown>((resolve) => {
      void new Watch(config)
        .watch(path, query, (type, object) => events.push({ type, object }), resolve)
        .then((started) => {
          controller = started;
        });
    });
    return { events, ended, abort: () => controller?.abort() };
  }

  async function until<T>(
    probe: () => T | undefined | Promise<T | undefined>,
    timeoutMs = 10_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error('condition not met in time');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('runs an API server that answers /readyz', async () => {
    const ready = await bed.kube.request('/readyz');
    expect(ready).toMatchObject({ status: 200, body: 'ok' });
    expect(bed.kube.serverVersion).toMatch(/^v1\.\d+/);
  });

  it('refuses an RBAC-less user until a Role allows it, and the audit log shows who did what', async () => {
    const api = (await kubeConfig('kubeglue-api')).makeApiClient(CoreV1Api);
    const create = () =>
      api.createNamespacedConfigMap({
        namespace: bed.namespace.name,
        body: configMap('rbac-check', { a: '1' }),
      });
    await expect(create()).rejects.toMatchObject({ code: 403 });

    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${bed.namespace.name}`;
    const role = await bed.kube.request(`${rbac}/roles`, {
      body: {
        metadata: { name: 'configmap-writer' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get', 'list'] }],
      },
    });
    expect(role.status).toBe(201);
    const binding = await bed.kube.request(`${rbac}/rolebindings`, {
      body: {
        metadata: { name: 'configmap-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-writer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'kubeglue-api' }],
      },
    });
    expect(binding.status).toBe(201);

    // The authorizer reads RBAC objects from an informer, so the grant lands a moment later.
    const created = await until(() => create().catch(() => undefined));
    expect(created.metadata?.name).toBe('rbac-check');

    const proxied = proxy.requests.filter((r) => r.user === 'kubeglue-api' && r.resource === 'configmaps');
    expect(proxied[0]).toMatchObject({ verb: 'create', namespace: bed.namespace.name, status: 403 });
    expect(proxied.at(-1)).toMatchObject({ verb: 'create', status: 201 });
    const audited = await bed.kube.waitForAuditEvent(
      (e) =>
        e.user === 'kubeglue-api' &&
        e.verb === 'create' &&
        e.namespace === bed.namespace.name &&
        e.code === 201,
    );
    expect(audited).toMatchObject({ resource: 'configmaps', apiGroup: '', name: 'rbac-check' });
    const refused = (await bed.kube.auditEvents()).filter(
      (e) => e.user === 'kubeglue-api' && e.namespace === bed.namespace.name && e.code === 403,
    );
    expect(refused.length).toBeGreaterThan(0);
  });

  it('answers writes with 409 Conflict while conflictEveryNthWrite is set, without forwarding them', async () => {
    await admin.createNamespacedConfigMap({ namespace: bed.namespace.name, body: configMap('conflicted') });
    const replace = (value: string) =>
      admin.replaceNamespacedConfigMap({
        name: 'conflicted',
        namespace: bed.namespace.name,
        body: configMap('conflicted', { value }),
      });

    proxy.faults.conflictEveryNthWrite = 1;
    const error = await replace('one').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiException);
    const conflict = error as ApiException<string>;
    expect(conflict.code).toBe(409);
    expect(JSON.parse(conflict.body)).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Conflict',
      code: 409,
    });
    expect(proxy.requests.at(-1)).toMatchObject({ verb: 'update', name: 'conflicted', injected: 'conflict' });

    proxy.faults.conflictEveryNthWrite = 0;
    expect((await replace('two')).data).toEqual({ value: 'two' });
    const stored = await admin.readNamespacedConfigMap({ name: 'conflicted', namespace: bed.namespace.name });
    expect(stored.data).toEqual({ value: 'two' });
  });

  it('streams watch events through the proxy until dropWatches cuts the connection', async () => {
    const watch = startWatch(adminConfig, `/api/v1/namespaces/${bed.namespace.name}/configmaps`);
    await until(() => proxy.openWatches() === 1);
    await admin.createNamespacedConfigMap({ namespace: bed.namespace.name, body: configMap('watched') });
    const added = await until(() =>
      watch.events.find((e) => e.type === 'ADDED' && e.object.metadata?.name === 'watched'),
    );
    expect(added).toBeDefined();
    expect(proxy.requests.findLast((r) => r.watch)).toMatchObject({
      verb: 'watch',
      resource: 'configmaps',
      status: 200,
    });

    expect(proxy.dropWatches()).toBe(1);
    const ended = await watch.ended;
    expect(ended).toBeInstanceOf(Error); // a reset, not a clean end of the stream
    expect(proxy.openWatches()).toBe(0);

    const clean = startWatch(adminConfig, `/api/v1/namespaces/${bed.namespace.name}/configmaps`);
    await until(() => proxy.openWatches() === 1);
    proxy.dropWatches('end');
    expect(await clean.ended).toBeNull();
  });

  it('drops watches periodically with dropWatchesEveryMs', async () => {
    proxy.faults.dropWatchesEveryMs = 200;
    try {
      const watch = startWatch(adminConfig, `/api/v1/namespaces/${bed.namespace.name}/configmaps`);
      expect(await watch.ended).toBeInstanceOf(Error);
    } finally {
      proxy.faults.dropWatchesEveryMs = 0;
    }
  });

  it('answers a watch from an old resourceVersion as expired: an ERROR 410 event, or plain HTTP 410', async () => {
    const list = await admin.listNamespacedConfigMap({ namespace: bed.namespace.name });
    const resourceVersion = list.metadata?.resourceVersion ?? '';
    expect(resourceVersion).not.toBe('');
    const path = `/api/v1/namespaces/${bed.namespace.name}/configmaps`;

    proxy.faults.goneOnWatch = 1;
    const expired = startWatch(adminConfig, path, { resourceVersion });
    expect(await expired.ended).toBeNull();
    expect(expired.events).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) },
    ]);
    expect(proxy.faults.goneOnWatch).toBe(0);

    proxy.faults.goneOnWatch = 1;
    proxy.faults.goneMode = 'http';
    const gone = startWatch(adminConfig, path, { resourceVersion });
    expect(await gone.ended).toMatchObject({ statusCode: 410 });
    proxy.faults.goneMode = 'event';

    // Used up: the next watch reaches the real API server again.
    const real = startWatch(adminConfig, path, { resourceVersion });
    await until(() => proxy.openWatches() === 1);
    real.abort();
  });

  it('answers 429 with Retry-After while tooManyRequestsEveryNth is set', async () => {
    proxy.faults.tooManyRequestsEveryNth = 1;
    proxy.faults.retryAfterSeconds = 7;
    try {
      const answer = await bed.kube.request(`/api/v1/namespaces/${bed.namespace.name}/configmaps`, {
        server: proxy.url,
      });
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('7');
      expect(answer.body).toMatchObject({
        reason: 'TooManyRequests',
        code: 429,
        details: { retryAfterSeconds: 7 },
      });
    } finally {
      proxy.faults.tooManyRequestsEveryNth = 0;
    }
    const after = await bed.kube.request(`/api/v1/namespaces/${bed.namespace.name}/configmaps`, {
      server: proxy.url,
    });
    expect(after.status).toBe(200);
  });

  it('adds latencyMs before forwarding', async () => {
    proxy.faults.latencyMs = 300;
    try {
      const started = Date.now();
      expect((await bed.kube.request('/readyz', { server: proxy.url })).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    } finally {
      proxy.faults.latencyMs = 0;
    }
  });

  it('derives verb, resource and names like the API server does (checked against its audit log)', async () => {
    const ns = bed.namespace.name;
    const calls: Array<[string, string, unknown?]> = [
      // The field manager only makes this URI unique in the audit log.
      ['POST', `/api/v1/namespaces/${ns}/configmaps?fieldManager=verbs`, { metadata: { name: 'verbs' } }],
      ['GET', `/api/v1/namespaces/${ns}/configmaps/verbs`],
      ['GET', `/api/v1/namespaces/${ns}/configmaps?limit=1`],
      [
        'GET',
        `/api/v1/namespaces/${ns}/configmaps?fieldSelector=metadata.name%3Dverbs&watch=1&timeoutSeconds=1`,
      ],
      ['PUT', `/api/v1/namespaces/${ns}/configmaps/verbs`, { metadata: { name: 'verbs' }, data: { a: 'b' } }],
      ['PATCH', `/api/v1/namespaces/${ns}/configmaps/verbs`, { data: { c: 'd' } }],
      ['GET', `/api/v1/namespaces/${ns}`],
      ['GET', `/api/v1/namespaces/${ns}/status`],
      ['GET', `/apis/apps/v1/namespaces/${ns}/deployments`],
      ['GET', `/api/v1/namespaces/${ns}/serviceaccounts/default/token`],
      ['DELETE', `/api/v1/namespaces/${ns}/configmaps/verbs`],
      ['DELETE', `/api/v1/namespaces/${ns}/secrets?labelSelector=none%3Dnone`],
      ['GET', '/api/v1/nodes'],
    ];
    const uris = new Set(calls.map(([, path]) => path));
    const ours = async () =>
      (await bed.kube.auditEvents()).filter((e) => e.user === 'admin' && uris.has(e.requestURI));
    const auditedBefore = (await ours()).length;
    const before = proxy.requests.length;
    for (const [method, path, body] of calls) {
      await bed.kube.request(path, {
        method,
        body,
        server: proxy.url,
        contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined,
      });
    }
    const recorded = proxy.requests.slice(before);
    expect(recorded).toHaveLength(calls.length);
    // The calls ran one after another, so their audit events are in the same order.
    const audited = await until(async () => {
      const events = (await ours()).slice(auditedBefore);
      return events.length >= calls.length ? events : undefined;
    });
    recorded.forEach((entry, i) => {
      const event = audited[i];
      expect({
        ...entry,
        requestURI: entry.query ? `${entry.path}?${entry.query}` : entry.path,
      }).toMatchObject({
        requestURI: event?.requestURI,
        user: 'admin',
        verb: event?.verb,
        resource: event?.resource,
        subresource: event?.subresource ?? '',
        apiGroup: event?.apiGroup,
        namespace: event?.namespace ?? '',
        name: event?.name ?? '',
        status: event?.code,
      });
    });
  });

  it('forwards WebSocket upgrades (a watch over WebSocket), which dropWatches also cuts', async () => {
    const url = `${proxy.url.replace(/^http/, 'ws')}/api/v1/namespaces/${bed.namespace.name}/configmaps?watch=true`;
    // The API server's WebSocket handler (golang.org/x/net/websocket) insists on an Origin header.
    const socket = new WebSocket(url, {
      ca: bed.kube.caPem,
      origin: proxy.url,
      headers: { authorization: `Bearer ${bed.kube.adminToken}` },
    });
    const names: string[] = [];
    socket.on('message', (data) => {
      const event = JSON.parse(data.toString()) as { type: string; object: V1ConfigMap };
      if (event.type === 'ADDED') names.push(event.object.metadata?.name ?? '');
    });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    await admin.createNamespacedConfigMap({
      namespace: bed.namespace.name,
      body: configMap('over-websocket'),
    });
    await until(() => names.includes('over-websocket'));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    expect(proxy.dropWatches()).toBe(1);
    await closed;
    expect(proxy.requests.findLast((r) => r.status === 101)).toMatchObject({
      verb: 'watch',
      resource: 'configmaps',
    });
  });

  it.runIf(hasControllerManager)(
    'admits a Pod in a fresh namespace: the default ServiceAccount exists',
    async () => {
      const fresh = await createTestNamespace(bed.kube, 'pods');
      try {
        const account = await bed.kube.request(`/api/v1/namespaces/${fresh.name}/serviceaccounts/default`);
        expect(account.status).toBe(200);
        const pod = await bed.kube.request(`/api/v1/namespaces/${fresh.name}/pods`, {
          body: {
            metadata: { name: 'runner' },
            spec: { containers: [{ name: 'main', image: 'registry.invalid/runner:1' }] },
          },
        });
        expect(pod.status).toBe(201);
        expect(pod.body).toMatchObject({
          spec: { serviceAccountName: 'default' },
          status: { phase: 'Pending' },
        });
      } finally {
        await fresh.delete();
      }
    },
  );

  it.runIf(hasControllerManager)(
    'garbage-collects a ConfigMap whose owner was deleted',
    async () => {
      const base = `/api/v1/namespaces/${bed.namespace.name}/configmaps`;
      const owner = await bed.kube.request(base, { body: { metadata: { name: 'owner' } } });
      expect(owner.status).toBe(201);
      const uid = (owner.body as { metadata: { uid: string } }).metadata.uid;
      const ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid }];
      expect(
        (await bed.kube.request(base, { body: { metadata: { name: 'owned', ownerReferences } } })).status,
      ).toBe(201);
      // Orphan propagation would keep the dependent; Background hands it to the garbage collector.
      const deleted = await bed.kube.request(`${base}/owner`, {
        method: 'DELETE',
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' },
      });
      expect(deleted.status).toBe(200);
      await until(async () => (await bed.kube.request(`${base}/owned`)).status === 404 || undefined, 45_000);
      const collected = await bed.kube.waitForAuditEvent(
        (e) => e.verb === 'delete' && e.namespace === bed.namespace.name && e.name === 'owned',
      );
      expect(collected.user).toBe('system:serviceaccount:kube-system:generic-garbage-collector');
    },
    60_000,
  );
});
