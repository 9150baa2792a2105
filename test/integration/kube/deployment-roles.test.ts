import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { allows, type RbacRole } from '../../../contract/rbac.ts';
import { runnerPodName, runTokenSecretName } from '../../../operator/launchers/launcher.ts';
import { toolRunName } from '../../../runs/toolrun.ts';
import { useTestDatabase } from '../../support/database.ts';
import { callApi, TEST_ADMIN_KEY, TEST_MASTER_KEY } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { startKubeFaultProxy } from '../../support/kube/fault-proxy.ts';
import { startKubeglue, useKubeglueRoles, waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { CC_CLIENT, startOAuthProvider, type TestOAuthProvider } from '../../support/oauth-provider.ts';
import { findSecrets, summarise } from '../../support/secret-scan.ts';

const exec = promisify(execFile);

/** One handshake with the gateway relay as a runner Pod makes it; the relay's answer line. */
async function relayAnswer(port: number, request: Record<string, unknown>): Promise<unknown> {
  const socket = connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  socket.write(`${JSON.stringify(request)}\n`);
  let text = '';
  for await (const chunk of socket) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  socket.destroy();
  return JSON.parse(text.slice(0, text.indexOf('\n')));
}

/**
 * The Kubernetes deployment's roles as users run them: `kubeglue api` and `kubeglue operator` as processes
 * with RBAC-limited identities against a real kube-apiserver, runner Pods run by the process kubelet (not a
 * real node: test/e2e/ runs on one), a real Postgres, and a local HTTP target.
 */
describeKube('the Kubernetes deployment: api, operator and runner Pods on the process kubelet', () => {
  const bed = useKubeTestBed('roles', { crds: true });
  const db = useTestDatabase();
  const target = useHttpTarget();
  const roles = useKubeglueRoles(bed, db, {
    // The HTTP target is on loopback; the deployment's default would refuse it.
    env: { KUBEGLUE_EGRESS_PRIVATE: 'allow', KUBEGLUE_LOG_LEVEL: 'warn' },
    operatorEnv: {
      KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS: '4000',
      KUBEGLUE_CANCEL_GRACE_MS: '3000',
      KUBEGLUE_LEASE_DURATION_MS: '3000',
      KUBEGLUE_LEASE_RENEW_DEADLINE_MS: '2000',
      KUBEGLUE_LEASE_RETRY_MS: '500',
    },
  });

  const call = <T>(method: string, path: string, body?: unknown) =>
    callApi<T>(roles.started.url, TEST_ADMIN_KEY, method, path, body);
  const finished = async (runId: string, timeoutMs = 60_000): Promise<Run> => {
    let run: Run | undefined;
    await waitUntil(
      async () => {
        run = (await call<Run>('GET', `/v1/runs/${runId}`)).body;
        return run.status !== 'running';
      },
      timeoutMs,
      `run ${runId} to finish`,
    );
    return run as Run;
  };
  const toolRun = (runId: string) =>
    bed.kube.request(
      `/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/toolruns/${toolRunName(runId)}`,
    );
  const podRunning = (runId: string) =>
    roles.kubelet.waitFor(
      bed.namespace.name,
      runnerPodName(toolRunName(runId), 1),
      (pod) => pod?.status?.phase === 'Running',
      30_000,
    );
  const createTool = async (id: string, url: string, extra: Record<string, unknown> = {}) => {
    const created = await call('POST', '/v1/tools', {
      id,
      steps: [{ id: 'fetch', config: { url } }],
      ...extra,
    });
    expect(created.status).toBe(201);
  };
  const startAsync = async (toolId: string, options: Record<string, unknown> = {}) => {
    const started = await call<Run>('POST', `/v1/tools/${toolId}/run`, {
      options: { async: true, ...options },
    });
    expect(started.status).toBe(202);
    return started.body.runId;
  };

  beforeAll(() => {
    target.route('GET', '/items', { body: [{ id: 1 }, { id: 2 }] });
    target.route('GET', '/broken', { status: 500, body: { message: 'the target is down' } });
    target.route('GET', '/slow', { delayMs: 60_000, body: { late: true } });
  });

  it('runs an async run in a runner Pod and kubectl wait sees it succeed', async () => {
    await createTool('items', `${target.url}/items`);
    const runId = await startAsync('items');
    await exec('kubectl', [
      '--kubeconfig',
      bed.kube.kubeconfigPath,
      '-n',
      bed.namespace.name,
      'wait',
      '--for=condition=Succeeded',
      `toolrun/${toolRunName(runId)}`,
      '--timeout=60s',
    ]);
    expect((await finished(runId)).status).toBe('success');
    const results = await call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
    expect(results.body.data.data).toEqual([{ id: 1 }, { id: 2 }]);
    // A sync run executes in the API's own worker pool.
    const sync = await call<{ status: string; data: unknown }>('POST', '/v1/tools/items/run', {});
    expect(sync.body).toMatchObject({ status: 'success', data: [{ id: 1 }, { id: 2 }] });
  });

  it("sends a runner Pod's identity token, signed by the api, which the target verifies against the api's JWKS", async () => {
    const received: string[] = [];
    target.route('GET', '/whoami', async (req) => {
      const token = /^Bearer (.+)$/.exec(String(req.headers.authorization))?.[1] ?? '';
      received.push(token);
      const jwks = createRemoteJWKSet(new URL(`${roles.started.url}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(token, jwks, { issuer: roles.started.url, audience: target.url });
      return { body: { run: payload.run_id, source: payload.request_source } };
    });
    const created = await call('POST', '/v1/tools', {
      id: 'whoami',
      steps: [
        {
          id: 'fetch',
          config: {
            url: `${target.url}/whoami`,
            headers: { Authorization: 'Bearer <<kubeglue_identity_jwt>>' },
          },
        },
      ],
    });
    expect(created.status).toBe(201);
    const runId = await startAsync('whoami');
    const run = await finished(runId);
    expect(run.status, run.error).toBe('success');
    const results = await call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
    expect(results.body.data.data).toEqual({ run: runId, source: 'api' });
    expect(received).toHaveLength(1);
    expect(JSON.stringify(results.body)).not.toContain(received[0]);
    expect(roles.api.output()).not.toContain(received[0]);
  });

  it("a runner Pod's requests and the API's own take from one rate budget of their system", async () => {
    const created = await call('POST', '/v1/systems', {
      id: 'budgeted',
      url: target.url,
      rateLimit: { requestsPerSecond: 4 },
    });
    expect(created.status).toBe(201);
    target.route('GET', '/budgeted', { body: { ok: true } });
    await createTool('budgeted-four', '/budgeted', {
      steps: [
        {
          id: 'fetch',
          dataSelector: '() => [1, 2, 3, 4]',
          config: { systemId: 'budgeted', url: '/budgeted' },
        },
      ],
    });
    const runId = await startAsync('budgeted-four');
    await podRunning(runId);
    const sync = await call<Run>('POST', '/v1/tools/budgeted-four/run', {});
    expect(sync.body.status, sync.body.error).toBe('success');
    expect((await finished(runId)).status).toBe('success');

    const arrivals = target.requests
      .filter((req) => req.path === '/budgeted')
      .map((req) => req.receivedAt)
      .sort((a, b) => a - b);
    expect(arrivals).toHaveLength(8);
    // One turn each quarter second, whichever process sent it (the Pod's through the internal API). A
    // request may go up to half an interval after its turn (a late timer on a busy host: engine/budget.ts),
    // so two arrivals are at least half an interval apart (less 30 ms of scheduling before the target reads
    // its clock), never a burst, and the eight span seven intervals less that half.
    const interval = 250;
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(7 * interval - interval / 2 - 30);
    for (let i = 1; i < arrivals.length; i++)
      expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThanOrEqual(interval / 2 - 30);
    const system = await call<{ data: { rateLimitUse?: { requests: number } } }>(
      'GET',
      '/v1/systems/budgeted',
    );
    // Turns taken: the eight, and any a late sender gave up for a new one.
    expect(system.body.data.rateLimitUse?.requests).toBeGreaterThanOrEqual(8);
  });

  it('fails a run whose step fails, with the step error in the run and the ToolRun', async () => {
    await createTool('broken', `${target.url}/broken`);
    const runId = await startAsync('broken');
    const run = await finished(runId);
    expect(run.status).toBe('failed');
    expect(run.error).toContain('HTTP 500');
    await waitUntil(async () => {
      const status = ((await toolRun(runId)).body as { status?: { status?: string } }).status;
      return status?.status === 'failed';
    }, 20_000);
  });

  it('runs an OAuth client-credentials system in a runner Pod with a token from the internal API, which it never shows', async () => {
    const idp: TestOAuthProvider = await startOAuthProvider({ redirectUris: [] });
    try {
      const system = await call(
        'POST',
        '/v1/systems',
        idp.clientCredentialsSystem('oauth-cc', { scopes: 'api:read' }),
      );
      expect(system.status, JSON.stringify(system.body)).toBe(201);
      const tool = await call('POST', '/v1/tools', {
        id: 'oauth-whoami',
        steps: [
          { id: 'first', config: { url: '/api/whoami', systemId: 'oauth-cc' } },
          { id: 'second', config: { url: '/api/whoami', systemId: 'oauth-cc' } },
        ],
      });
      expect(tool.status).toBe(201);
      const runId = await startAsync('oauth-whoami');
      const run = await finished(runId);
      expect(run.status, run.error).toBe('success');
      expect(idp.tokenRequests.client_credentials).toBe(1);
      expect(idp.apiCalls.ok).toBe(2);
      const [accessToken] = [...idp.acceptedTokens];
      expect(accessToken).toBeDefined();
      let object: unknown;
      await waitUntil(async () => {
        object = (await toolRun(runId)).body;
        return (object as { status?: { status?: string } }).status?.status === 'success';
      }, 20_000);
      // Everything Kubernetes users and the API show about the run, in every form a secret takes in text.
      const exposed = [
        { where: 'GET run', text: JSON.stringify((await call('GET', `/v1/runs/${runId}`)).body) },
        { where: 'GET results', text: JSON.stringify((await call('GET', `/v1/runs/${runId}/results`)).body) },
        { where: 'GET system', text: JSON.stringify((await call('GET', '/v1/systems/oauth-cc')).body) },
        { where: 'ToolRun', text: JSON.stringify(object) },
        { where: 'Tools and Systems', text: await bed.kubectl('get', 'tools,systems', '-o', 'json') },
        { where: 'Events', text: await bed.kubectl('get', 'events', '-o', 'json') },
        {
          where: 'runner Pod log',
          text: await roles.kubelet
            .logs(bed.namespace.name, runnerPodName(toolRunName(runId), 1))
            .catch(() => ''),
        },
        { where: 'api output', text: roles.api.output() },
        { where: 'operator output', text: roles.operator.output() },
      ];
      const secrets = [
        { name: 'access token', value: accessToken as string },
        { name: 'client secret', value: CC_CLIENT.secret },
      ];
      expect(summarise(findSecrets(secrets, exposed))).toEqual([]);
    } finally {
      await idp.stop();
    }
  });

  it('reaches a private system through a gateway agent from a runner Pod, with its run token only', async () => {
    target.route('GET', '/private', (req) => ({ body: { private: true, host: req.headers.host ?? null } }));
    let agent: AgentProcess | undefined;
    try {
      agent = await startAgent({
        tunnel_id: 'office',
        server_url: roles.started.url.replace('http://127.0.0.1', 'ws://localhost'),
        api_key: TEST_ADMIN_KEY,
        targets: { web: new URL(target.url).host },
      });
      await agent.waitFor("tunnel 'office' registered");
      const system = await call('POST', '/v1/systems', {
        id: 'office-web',
        url: 'http://billing.corp.internal',
        gateway: { tunnelId: 'office', target: 'web' },
      });
      expect(system.status).toBe(201);
      await createTool('office-private', '/private', {
        steps: [{ id: 'fetch', config: { url: '/private', systemId: 'office-web' } }],
      });
      const runId = await startAsync('office-private');
      const run = await finished(runId);
      expect(run, run.error).toMatchObject({ status: 'success' });
      const results = await call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
      // The Host header names the system, not the address the agent dialled.
      expect(results.body.data.data).toEqual({ private: true, host: 'billing.corp.internal' });

      // A live runner's token opens its own run's gateways and nothing else.
      await createTool('office-slow', '/slow', {
        steps: [{ id: 'fetch', config: { url: '/slow', systemId: 'office-web' } }],
      });
      const slowId = await startAsync('office-slow');
      await podRunning(slowId);
      const secret = await bed.kube.request(
        `/api/v1/namespaces/${bed.namespace.name}/secrets/${runTokenSecretName(toolRunName(slowId))}`,
      );
      const token = Buffer.from((secret.body as { data: { token: string } }).data.token, 'base64').toString();
      const ask = (request: Record<string, unknown>) =>
        relayAnswer(roles.started.relayPort, {
          token,
          runId: slowId,
          tunnelId: 'office',
          target: 'web',
          ...request,
        });
      expect(await ask({})).toEqual({ ok: true });
      expect(await ask({ tunnelId: 'elsewhere' })).toEqual({
        ok: false,
        error: `gateway elsewhere: run ${slowId} has no system behind gateway elsewhere, target 'web'`,
      });
      expect(await ask({ runId: runId })).toMatchObject({
        ok: false,
        error: expect.stringContaining('is not valid'),
      });
      expect(await ask({ token: 'x'.repeat(43) })).toMatchObject({ ok: false });
      await call('POST', `/v1/runs/${slowId}/cancel`);
      expect((await finished(slowId, 30_000)).status).toBe('aborted');
      // The token of an ended run opens nothing.
      expect(await ask({})).toMatchObject({ ok: false, error: expect.stringContaining('has ended') });
      expect(agent.output()).not.toContain(TEST_ADMIN_KEY);
    } finally {
      await agent?.kill();
    }
  });

  it('cancels a run in its Pod through the API', async () => {
    await createTool('slow', `${target.url}/slow`);
    const runId = await startAsync('slow');
    await podRunning(runId);
    const cancelled = await call<Run>('POST', `/v1/runs/${runId}/cancel`);
    expect(cancelled.body.status).toBe('aborted');
    // The runner hears it from its heartbeat, or the operator deletes the Pod after the grace period.
    await roles.kubelet.waitFor(
      bed.namespace.name,
      runnerPodName(toolRunName(runId), 1),
      (pod) => pod === undefined || ['Succeeded', 'Failed'].includes(pod.status?.phase ?? ''),
      30_000,
    );
    expect((await finished(runId)).status).toBe('aborted');
  });

  it('cancels a live run when its ToolRun is deleted with kubectl', async () => {
    const runId = await startAsync('slow');
    await podRunning(runId);
    await bed.kubectl('delete', 'toolrun', toolRunName(runId), '--wait=false');
    const run = await finished(runId, 30_000);
    expect(run.status).toBe('aborted');
    // The finalizer is released once the store holds the outcome, then the object goes.
    await waitUntil(async () => (await toolRun(runId)).status === 404, 30_000, 'the ToolRun to go');
  });

  it('fails a run that exceeds its timeout', async () => {
    const runId = await startAsync('slow', { timeout: 1500 });
    const run = await finished(runId, 30_000);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/timed out/);
  });

  it('fails a run whose Pod is OOMKilled, naming the cause', async () => {
    const runId = await startAsync('slow');
    await podRunning(runId);
    await roles.kubelet.oomKill(bed.namespace.name, runnerPodName(toolRunName(runId), 1));
    const run = await finished(runId, 30_000);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/OOMKilled/);
  });

  it('runs a read-only run again in a second Pod when its runner Pod is deleted; a modifying one fails with the reason', async () => {
    // The first request is held until its runner goes; every later one is answered.
    let requests = 0;
    target.route('GET', '/first-held', () =>
      ++requests === 1 ? undefined : { body: { answered: requests } },
    );
    await createTool('first-held', `${target.url}/first-held`);
    const runId = await startAsync('first-held');
    await podRunning(runId);
    await waitUntil(async () => requests === 1, 20_000, 'the first attempt to call the target');
    await bed.kubectl('delete', 'pod', runnerPodName(toolRunName(runId), 1), '--wait=false');
    const run = await finished(runId);
    expect(run).toMatchObject({ status: 'success', attempt: 2 });
    const results = await call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
    expect(results.body.data.data).toEqual({ answered: 2 });

    await createTool('slow-writer', `${target.url}/slow`, {
      steps: [{ id: 'write', modify: true, config: { url: `${target.url}/slow` } }],
    });
    const writerId = await startAsync('slow-writer');
    await podRunning(writerId);
    await bed.kubectl('delete', 'pod', runnerPodName(toolRunName(writerId), 1), '--wait=false');
    const writer = await finished(writerId);
    expect(writer).toMatchObject({ status: 'failed', attempt: 1 });
    expect(writer.error).toMatch(
      /^The runner Pod \S+-a1 (was stopped before the run finished|was deleted before the run finished|disappeared while the run was running).* \(it modifies data, so it was not retried\)$/,
    );
  }, 120_000);

  it('fails a run whose Pod never starts', async () => {
    roles.kubelet.neverStart((pod) => pod.metadata?.labels?.['kubeglue.dev/tool-id'] === 'never');
    try {
      await createTool('never', `${target.url}/items`);
      const runId = await startAsync('never');
      const run = await finished(runId, 30_000);
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/ImagePull|did not start|pending/i);
    } finally {
      roles.kubelet.neverStart(null);
    }
  });

  it('lists Tools applied with kubectl, shows Ready and the step count, and explains the fields', async () => {
    await bed.kubectl('apply', '-f', join(import.meta.dirname, '../../../examples'));
    await waitUntil(
      async () => (await bed.kubectl('get', 'tools')).match(/list-posts\s+True\s+1/) !== null,
      20_000,
      'list-posts Ready',
    );
    const listed = await call<{ data: { id: string }[] }>('GET', '/v1/tools');
    expect(listed.body.data.map((tool) => tool.id)).toContain('list-posts');
    await waitUntil(
      async () => (await bed.kubectl('get', 'systems')).includes('True'),
      20_000,
      'the System Ready',
    );

    const broken = {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'Tool',
      metadata: { name: 'broken-transform', namespace: bed.namespace.name },
      spec: { steps: [{ id: 'x', config: { type: 'transform', transformCode: '(s) => {' } }] },
    };
    await bed.kube.request(`/apis/kubeglue.dev/v1alpha1/namespaces/${bed.namespace.name}/tools`, {
      method: 'POST',
      body: broken,
    });
    await waitUntil(
      async () => (await bed.kubectl('get', 'tools', 'broken-transform')).includes('False'),
      20_000,
    );
    const described = await bed.kubectl('describe', 'tool', 'broken-transform');
    expect(described).toMatch(/steps\[0\]|step x/i);
    // The operator told it in an Event too (recorded right after the status it wrote).
    await waitUntil(
      async () =>
        /Warning\s+CompileError\s+.*kubeglue-operator/.test(
          await bed.kubectl('describe', 'tool', 'broken-transform'),
        ),
      20_000,
      'the Warning Event of broken-transform',
    );

    const explained = await bed.kubectl('explain', 'tool.spec.steps');
    expect(explained).toContain('each one');
  });

  it('finishes a run after the operator is killed and a new one takes the Lease', async () => {
    target.route('GET', '/wait', { delayMs: 4000, body: { waited: true } });
    await createTool('waits', `${target.url}/wait`);
    const runId = await startAsync('waits');
    await podRunning(runId);
    roles.operator.child.kill('SIGKILL');
    await roles.operator.exited;
    roles.operator = startKubeglue('operator', roles.operatorEnv);
    await roles.operator.waitForOutput(/reconciling Tools/, 30_000);
    expect((await finished(runId, 60_000)).status).toBe('success');
    await waitUntil(
      async () => {
        const object = (await toolRun(runId)).body as {
          status?: { status?: string };
          metadata?: { finalizers?: string[] };
        };
        return object.status?.status === 'success' && !object.metadata?.finalizers?.length;
      },
      30_000,
      'the ToolRun to show success and release its finalizer',
    );
  }, 120_000);

  it('ends in the same store and resource state with the fault proxy between components and API server', async () => {
    // Outcome of each scenario, as a user sees it in the API and with kubectl.
    const scenarios = async (label: string) => {
      const outcome: Record<string, unknown> = {};
      for (const [name, toolId, cancel] of [
        ['success', 'items', false],
        ['failure', 'broken', false],
        ['cancel', 'slow', true],
      ] as const) {
        const runId = await startAsync(toolId, { traceId: `${label}-${name}` });
        if (cancel) {
          await podRunning(runId);
          await call('POST', `/v1/runs/${runId}/cancel`);
        }
        const run = await finished(runId, 60_000).catch(async (error: unknown) => {
          const podName = runnerPodName(toolRunName(runId), 1);
          const logs = await Promise.resolve()
            .then(() => roles.kubelet.logs(bed.namespace.name, podName))
            .catch(() => '(no logs)');
          throw new Error(
            `${label} ${name}: ${(error as Error).message}\nToolRun: ${JSON.stringify((await toolRun(runId)).body)}\n` +
              `Pod: ${JSON.stringify(roles.kubelet.pod(bed.namespace.name, podName)?.status)}\nrunner logs:\n${logs}`,
          );
        });
        let object: {
          status?: { status?: string; conditions?: { type: string; status: string }[] };
          metadata?: { finalizers?: string[] };
        } = {};
        await waitUntil(
          async () => {
            object = (await toolRun(runId)).body as typeof object;
            return object.status?.status === run.status && !object.metadata?.finalizers?.length;
          },
          60_000,
          `ToolRun of ${label} ${name} to settle`,
        );
        const steps = await call<{ data: { stepResults: { success: boolean }[] } | null }>(
          'GET',
          `/v1/runs/${runId}/results`,
        );
        outcome[name] = {
          status: run.status,
          error: run.error?.split(':')[0],
          steps: steps.body.data?.stepResults.map((step) => step.success) ?? null,
          toolRunStatus: object.status?.status,
          succeeded: object.status?.conditions?.find((c) => c.type === 'Succeeded')?.status,
        };
      }
      return outcome;
    };
    const direct = await scenarios('direct');

    const proxy = await startKubeFaultProxy(bed.kube, {
      conflictEveryNthWrite: 3,
      tooManyRequestsEveryNth: 11,
      retryAfterSeconds: 1,
      latencyMs: 5,
      dropWatchesEveryMs: 3000,
    });
    try {
      await roles.operator.stop();
      await roles.api.stop();
      /** The role's kubeconfig, through the proxy. */
      const proxied = (role: 'api' | 'operator') =>
        bed.kube.writeKubeconfig(join(bed.dir, `${role}-proxy.kubeconfig`), `kubeglue-${role}`, proxy.url);
      roles.api = startKubeglue('api', { ...roles.started.env, KUBEGLUE_KUBECONFIG: await proxied('api') });
      await roles.api.waitForOutput(/ready on/, 60_000);
      roles.operator = startKubeglue('operator', {
        ...roles.operatorEnv,
        KUBEGLUE_KUBECONFIG: await proxied('operator'),
        // The production timings: the short ones of the kill test leave no room for throttled renewals.
        KUBEGLUE_LEASE_DURATION_MS: '15000',
        KUBEGLUE_LEASE_RENEW_DEADLINE_MS: '10000',
        KUBEGLUE_LEASE_RETRY_MS: '2000',
      });
      await roles.operator.waitForOutput(/reconciling Tools/, 60_000);
      const faulty = await scenarios('proxied').catch((error: unknown) => {
        throw new Error(
          `${(error as Error).message}\n--- operator:\n${roles.operator.output().slice(-6000)}\n--- api:\n${roles.api.output().slice(-3000)}`,
        );
      });
      expect(proxy.requests.filter((r) => r.injected).length).toBeGreaterThan(0);
      expect(faulty).toEqual(direct);
    } finally {
      await proxy.stop();
    }
  }, 240_000);

  it('used only what the RBAC module grants each role', async () => {
    const events = await bed.kube.auditEvents();
    for (const role of ['api', 'operator'] as RbacRole[]) {
      const used = events.filter((event) => event.user === `kubeglue-${role}` && event.resource);
      expect(used.length).toBeGreaterThan(0);
      const denied = used.filter((event) => event.code === 403);
      expect(denied).toEqual([]);
      for (const event of used) {
        const resource = event.subresource ? `${event.resource}/${event.subresource}` : event.resource;
        expect({
          role,
          verb: event.verb,
          resource,
          allowed: allows(role, event.apiGroup, resource, event.verb),
        }).toMatchObject({
          allowed: true,
        });
      }
    }
  });
});

describe('Kubernetes roles without a cluster', () => {
  it('refuse to start without a database URL, naming the setting', async () => {
    const api = startKubeglue('api', { KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY });
    expect(await api.exited).toBe(1);
    expect(api.output()).toContain('KUBEGLUE_DATABASE_URL is required');
  });
});
