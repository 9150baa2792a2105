/**
 * Async runs on a real node (shared/kube-node: kubelet, containerd, runc, CNI bridge): every runner Pod
 * is a container from the image built from this checkout (uid 65532, read-only root filesystem, the
 * runner's securityContext and limits enforced by the runtime and cgroups). `kubeglue api` and
 * `kubeglue operator` run inside the node's network namespace from the same image tree, so runner Pods
 * reach the API's internal port on the node's address, as they reach a Service in a cluster.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Run } from '../../contract/api/run.ts';
import { toolRunName } from '../../runs/toolrun.ts';
import { useTestDatabase } from '../support/database.ts';
import { useHttpTarget } from '../support/http-target.ts';
import {
  applyCrds,
  type KubeglueOnNode,
  startKubeglueOnNode,
  waitFor,
} from '../support/kube-node/kubeglue.ts';
import {
  NODE_GATEWAY,
  NODE_IMAGE,
  NODE_NAME,
  type RealNode,
  startRealNode,
} from '../support/kube-node/node.ts';
import { REDIS_PASSWORD, redisServerMissing, useRedisServer } from '../support/redis-server.ts';
import { describeRealNode } from './support.ts';

const NAMESPACE = 'e2e-runs';

describeRealNode(
  'async runs on a real node',
  () => {
    const db = useTestDatabase();
    const target = useHttpTarget({ resetBeforeEach: false });
    // Under CI a missing redis-server is an error (redisServerMissing throws); elsewhere its scenario skips.
    const redisMissing = redisServerMissing();
    const redis = redisMissing ? undefined : useRedisServer();
    let node: RealNode;
    let kubeglue: KubeglueOnNode;
    /** The HTTP target as Pods reach it: on the node's address. */
    let targetUrl: string;

    const kubectl = (...args: string[]) => node.kubectl(['-n', NAMESPACE, ...args]);
    const createTool = async (id: string, path: string, extra: Record<string, unknown> = {}) => {
      const created = await kubeglue.call('POST', '/v1/tools', {
        id,
        steps: [{ id: 'fetch', config: { url: `${targetUrl}${path}` } }],
        ...extra,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    };
    const startAsync = async (toolId: string, options: Record<string, unknown> = {}) => {
      const started = await kubeglue.call<Run>('POST', `/v1/tools/${toolId}/run`, {
        options: { async: true, ...options },
      });
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      return started.body.runId;
    };
    const toolRunStatus = async (runId: string) =>
      (
        await node.get<{ status?: { status?: string; message?: string } }>([
          '-n',
          NAMESPACE,
          'toolrun',
          toolRunName(runId),
        ])
      )?.status;

    /** After a disruption: the run ends, succeeded or failed with a reason, and so does its ToolRun. */
    const endsTerminal = async (runId: string) => {
      const run = await kubeglue.finished(runId, 120_000);
      expect(['success', 'failed']).toContain(run.status);
      if (run.status === 'failed') expect(run.error).toBeTruthy();
      await waitFor(
        'the ToolRun to be terminal',
        () => toolRunStatus(runId),
        (status) =>
          status?.status !== undefined && status.status !== 'running' && status.status !== 'pending',
        60_000,
      );
    };

    beforeAll(async () => {
      // api and operator are processes in the node's namespace: no Service routing needed.
      node = await startRealNode({ services: false });
      try {
        target.route('GET', '/items', { body: [{ id: 1 }, { id: 2 }] });
        target.route('GET', '/broken', { status: 500, body: { message: 'the target is down' } });
        target.route('GET', '/slow', { delayMs: 120_000, body: { late: true } });
        target.route('GET', '/wait', { delayMs: 6000, body: { waited: true } });
        targetUrl = `http://${NODE_GATEWAY}:${await node.expose(Number(new URL(target.url).port))}`;
        await applyCrds(node);
        kubeglue = await startKubeglueOnNode(node, { namespace: NAMESPACE, databaseUrl: db.url });
        await createTool('items', '/items');
        await createTool('broken', '/broken');
        await createTool('slow', '/slow');
        await createTool('waits', '/wait');
        if (redis) {
          // A Redis system as Pods reach it, its password in the System's Secret.
          await redis.admin().set('greeting', 'from a runner Pod');
          const cache = await kubeglue.call('POST', '/v1/systems', {
            id: 'cache',
            url: `redis://${NODE_GATEWAY}:${await node.expose(redis.port)}/0`,
            authType: 'dataStore',
            credentials: { password: REDIS_PASSWORD },
          });
          expect(cache.status, JSON.stringify(cache.body)).toBe(201);
          const tool = await kubeglue.call('POST', '/v1/tools', {
            id: 'redis-get',
            steps: [
              {
                id: 'get',
                config: { url: '/', systemId: 'cache', body: { command: 'GET', args: ['greeting'] } },
              },
            ],
          });
          expect(tool.status, JSON.stringify(tool.body)).toBe(201);
        }
      } catch (error) {
        await node.stop();
        throw error;
      }
    }, 1_800_000); // the node is one per machine: this may wait for another file to release it

    afterAll(async () => {
      await kubeglue?.stop().catch(() => {});
      await node?.stop();
    }, 300_000);

    it('runs an async run in a runner Pod from the image, as uid 65532 on a read-only root filesystem', async () => {
      const runId = await startAsync('items');
      // The operator makes the ToolRun after the API answered, and kubectl wait fails at once on one that
      // does not exist yet.
      await waitFor(
        'the ToolRun',
        () => node.get(['-n', NAMESPACE, 'toolrun', toolRunName(runId)]),
        (found) => found !== undefined,
      );
      await kubectl('wait', '--for=condition=Succeeded', `toolrun/${toolRunName(runId)}`, '--timeout=90s');
      expect((await kubeglue.finished(runId)).status).toBe('success');
      const results = await kubeglue.call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
      expect(results.body.data.data).toEqual([{ id: 1 }, { id: 2 }]);
      // The run is stored before its runner's container has exited: the Pod ends a moment later.
      const pod = await waitFor(
        'the runner Pod to end',
        () => kubeglue.pod(runId),
        (found) => found?.status?.phase !== 'Running' && found?.status?.phase !== 'Pending',
      );
      expect(pod?.spec?.nodeName).toBe(NODE_NAME);
      expect(pod?.spec?.containers[0]?.image).toBe(NODE_IMAGE);
      expect(pod?.status?.phase).toBe('Succeeded');
      expect(await toolRunStatus(runId)).toMatchObject({ status: 'success' });
      // The runner's own container, as the runtime made it: the image's user and a read-only root.
      const spec = JSON.parse(await kubectl('get', 'pod', pod?.metadata.name ?? '', '-o', 'json')) as {
        spec: {
          securityContext?: { runAsUser?: number };
          containers: { securityContext?: Record<string, unknown> }[];
        };
      };
      expect(spec.spec.containers[0]?.securityContext).toMatchObject({ readOnlyRootFilesystem: true });
      const logs = await kubectl('logs', pod?.metadata.name ?? '');
      // (Node's "ExperimentalWarning: DecompressInterceptor" in these logs is issue 23 item 4, not checked here.)
      expect(logs).not.toMatch(/EROFS|EACCES/);
      // A sync run executes in the API's own worker pool.
      const sync = await kubeglue.call<{ status: string; data: unknown }>('POST', '/v1/tools/items/run', {});
      expect(sync.body).toMatchObject({ status: 'success', data: [{ id: 1 }, { id: 2 }] });
    }, 120_000);

    it("takes a runner Pod's requests and the API's own from one rate budget of their system", async () => {
      target.route('GET', '/budgeted', { body: { ok: true } });
      const system = await kubeglue.call('POST', '/v1/systems', {
        id: 'budgeted',
        url: targetUrl,
        rateLimit: { requestsPerSecond: 2 },
      });
      expect(system.status, JSON.stringify(system.body)).toBe(201);
      await createTool('budgeted-four', '/budgeted', {
        steps: [
          {
            id: 'fetch',
            dataSelector: '() => [1, 2, 3, 4]',
            config: { systemId: 'budgeted', url: '/budgeted' },
          },
        ],
      });
      const arrivals = () =>
        target.requests
          .filter((req) => req.path === '/budgeted')
          .map((req) => req.receivedAt)
          .sort((a, b) => a - b);
      const runId = await startAsync('budgeted-four');
      // The Pod's first request has gone: the API's sync run now competes with the Pod's other three.
      await waitFor(
        'the runner Pod to send',
        async () => arrivals().length,
        (n) => n >= 1,
        90_000,
      );
      const sync = await kubeglue.call<Run>('POST', '/v1/tools/budgeted-four/run', {});
      expect(sync.body.status, sync.body.error).toBe('success');
      expect((await kubeglue.finished(runId, 90_000)).status).toBe('success');
      expect((await kubeglue.pod(runId))?.spec?.nodeName).toBe(NODE_NAME);
      const seen = arrivals();
      expect(seen).toHaveLength(8);
      // One turn each half second, whichever process took it (the Pod through the internal API): the eight
      // span seven turns, and no two arrive together, however the node schedules the senders.
      expect(seen.at(-1)! - seen[0]!).toBeGreaterThanOrEqual(7 * 500 - 150);
      for (let i = 1; i < seen.length; i++) expect(seen[i]! - seen[i - 1]!).toBeGreaterThanOrEqual(300);
    }, 180_000);

    it.skipIf(redisMissing)(
      'runs an async run of a Redis tool in a runner Pod, with the Redis client from the image',
      async () => {
        const runId = await startAsync('redis-get');
        const run = await kubeglue.finished(runId, 90_000);
        expect(run.status, run.error).toBe('success');
        const results = await kubeglue.call<{ data: { data: unknown } }>('GET', `/v1/runs/${runId}/results`);
        expect(results.body.data.data).toBe('from a runner Pod');
        // The result is stored before the container exits: the Pod then ends as Succeeded.
        const pod = await waitFor(
          'the runner Pod to succeed',
          () => kubeglue.pod(runId),
          (found) => found?.status?.phase === 'Succeeded',
          60_000,
        );
        expect(pod?.spec?.containers[0]?.image).toBe(NODE_IMAGE);
      },
      120_000,
    );

    it('fails a run whose step fails, with the step error in the run and the ToolRun', async () => {
      const runId = await startAsync('broken');
      const run = await kubeglue.finished(runId);
      expect(run.status).toBe('failed');
      expect(run.error).toContain('HTTP 500');
      await waitFor(
        'the ToolRun to fail',
        () => toolRunStatus(runId),
        (status) => status?.status === 'failed',
      );
      const pod = await kubeglue.pod(runId);
      expect(pod?.status?.phase).toBe('Failed');
    }, 120_000);

    it('cancels a run in its Pod through POST /v1/runs/{id}/cancel', async () => {
      const runId = await startAsync('slow');
      await kubeglue.podRunning(runId);
      const cancelled = await kubeglue.call<Run>('POST', `/v1/runs/${runId}/cancel`);
      expect(cancelled.body.status).toBe('aborted');
      await waitFor(
        'the runner Pod to stop',
        () => kubeglue.pod(runId),
        (pod) => pod === undefined || ['Succeeded', 'Failed'].includes(pod.status?.phase ?? ''),
        60_000,
      );
      expect((await kubeglue.finished(runId)).status).toBe('aborted');
    }, 120_000);

    it('cancels a live run when its ToolRun is deleted with kubectl', async () => {
      const runId = await startAsync('slow');
      await kubeglue.podRunning(runId);
      await kubectl('delete', 'toolrun', toolRunName(runId), '--wait=false');
      expect((await kubeglue.finished(runId, 60_000)).status).toBe('aborted');
      await waitFor(
        'the ToolRun to go',
        () => node.get(['-n', NAMESPACE, 'toolrun', toolRunName(runId)]),
        (object) => object === undefined,
        60_000,
      );
    }, 120_000);

    it('fails a run that exceeds its timeout', async () => {
      const runId = await startAsync('slow', { timeout: 3000 });
      const run = await kubeglue.finished(runId, 60_000);
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/timed out/);
    }, 120_000);

    it('finishes a run after the operator is killed and a second one takes over', async () => {
      const runId = await startAsync('waits');
      await kubeglue.podRunning(runId);
      await kubeglue.restartOperator({}, 'SIGKILL');
      expect((await kubeglue.finished(runId, 90_000)).status).toBe('success');
      await waitFor(
        'the ToolRun to show success and release its finalizer',
        () =>
          node.get<{ status?: { status?: string }; metadata?: { finalizers?: string[] } }>([
            '-n',
            NAMESPACE,
            'toolrun',
            toolRunName(runId),
          ]),
        (object) => object?.status?.status === 'success' && !object.metadata?.finalizers?.length,
        60_000,
      );
    }, 180_000);

    it('fails a run whose runner Pod is OOMKilled, with a message that says so', async () => {
      // A memory limit the runner's Node process cannot start in: the cgroup kills it.
      const settings = { KUBEGLUE_RUNNER_MEMORY_REQUEST: '24Mi', KUBEGLUE_RUNNER_MEMORY_LIMIT: '24Mi' };
      await kubeglue.withOperatorSettings(settings, async () => {
        const runId = await startAsync('items');
        const run = await kubeglue.finished(runId, 90_000);
        expect(run.status).toBe('failed');
        expect(run.error).toMatch(/OOMKilled/);
        expect(run.error).toContain('24Mi');
        const pod = await kubeglue.pod(runId);
        const state = pod?.status?.containerStatuses?.[0]?.state?.terminated;
        expect(state?.reason).toBe('OOMKilled');
      });
    }, 240_000);

    it('fails a run whose image cannot be pulled, with the reason, after the pending timeout', async () => {
      // The node has no route out: a missing image can never be pulled (ErrImagePull, ImagePullBackOff).
      const settings = {
        KUBEGLUE_RUNNER_IMAGE: 'localhost/kubeglue:missing',
        // Long enough for the kubelet (status cycle up to 10 s) to report the pull failure on a loaded node;
        // before it does, the Pod is only ContainerCreating and the run would fail as "did not start".
        KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS: '25000',
      };
      await kubeglue.withOperatorSettings(settings, async () => {
        // Before the run is accepted: its pending clock starts later, at its Pod's creationTimestamp. That
        // timestamp has whole seconds (truncated), so the timeout can end up to 1 s short of 25 s on our clock.
        const started = Date.now();
        const runId = await startAsync('items');
        const run = await kubeglue.finished(runId, 90_000);
        expect(run.status).toBe('failed');
        expect(run.error).toMatch(/ErrImagePull|ImagePullBackOff/);
        expect(Date.now() - started).toBeGreaterThanOrEqual(24_000);
      });
    }, 240_000);

    it('ends a run whose node is lost (kubelet stopped mid-run) in a terminal state with a reason', async () => {
      const runId = await startAsync('waits');
      await kubeglue.podRunning(runId);
      await node.stopKubelet();
      try {
        await endsTerminal(runId);
      } finally {
        await node.startKubelet();
      }
    }, 240_000);

    it('ends a run in a terminal state with a reason when containerd restarts mid-run', async () => {
      const runId = await startAsync('waits');
      await kubeglue.podRunning(runId);
      await node.restartContainerd();
      await endsTerminal(runId);
      // Nothing is left running: every run of this suite is terminal.
      const runs = await kubeglue.call<{ data: { runId: string; status: string }[] }>(
        'GET',
        '/v1/runs?limit=100',
      );
      expect(runs.body.data.filter((r) => r.status === 'running')).toEqual([]);
    }, 240_000);
  },
  { services: false },
);
