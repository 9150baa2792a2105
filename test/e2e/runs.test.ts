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
  type ApiReplica,
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
import { busiestSecond, startRateTarget } from '../support/rate-target.ts';
import { REDIS_PASSWORD, redisServerMissing, useRedisServer } from '../support/redis-server.ts';
import { describeRealNode } from './support.ts';

const NAMESPACE = 'e2e-runs';

/**
 * The proof of systems' rate budgets (issue 33): many paginated runs at once against a target that
 * counts the requests it receives in each second, some as async runs in runner Pods on this node, the
 * others as sync runs split over two `kubeglue api` processes on one Postgres. The budget is the
 * store's (a Pod takes its turns through the api's internal port), so the target sees the System's
 * rateLimit in each second, no run fails, and the whole takes about what the rate allows (within 20 %
 * of the ideal: runs × pages requests at `rate` a second).
 *
 * The slack, one request more in a second of the target's clock: the store grants at most `rate` turns
 * a second, and a request that could not go on time takes a new turn rather than going beside the
 * requests whose turn it now is (engine/budget.ts). What still moves an arrival is the scheduling
 * between the send and the target's clock (api processes, Pods and the target on a loaded 2-core
 * machine), which can carry one request across a second's boundary into its neighbour. That is all the
 * slack allowed, never a burst of late requests. Counted in the target's clock seconds, as a
 * fixed-window limiter counts (counted from the first arrival, which opens a connection and comes late,
 * the first window also holds the turns that passed it: printed, not judged).
 *
 * The issue's numbers (100 runs × 10 pages at 20 requests/s: 50 s of ideal time), 5 of the runs in
 * Pods, unless KUBEGLUE_BUDGET_PROOF_RUNS says fewer runs (a quick local check; a twentieth in Pods).
 * Why 5 Pods, not 10: each runner Pod's start (containerd, runc, a Node process loading the runner) costs
 * the 2-core node CPU while the sync runs are under way. With 10 Pods at once the api replicas fell
 * behind their turns for the first 5–10 s (5–12 requests a second) and the Pods sent their first request
 * after 19–35 s: 58.5, 59.3 and 60.3 s against the bound of 59.9 s (load 5–20; 58.5 s again with the
 * Pods limited to 200m of CPU). With 5: 51.3, 51.8 and 55.8 s (load 5–10).
 */
const BUDGET = (() => {
  const runs = Number(process.env.KUBEGLUE_BUDGET_PROOF_RUNS ?? 100);
  return { runs, podRuns: Math.max(1, Math.round(runs / 20)), pages: 10, rate: 20, slack: 1 };
})();

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

    it(
      `${BUDGET.runs} concurrent runs of a ${BUDGET.pages}-page tool, ${BUDGET.podRuns} in runner Pods and the rest split over two api replicas, send the target ${BUDGET.rate} requests a second (one more where an arrival crosses a second's boundary), none fails, in about the ideal time`,
      async () => {
        const { runs, podRuns, pages, rate } = BUDGET;
        const idealMs = ((runs * pages - 1) / rate) * 1000;
        // In the node's namespace, on the node's address: the api processes and the Pods reach it with no
        // bridge in between, so it counts arrivals as they come off the network.
        const counter = await startRateTarget({
          host: NODE_GATEWAY,
          spawn: (command, args) => node.spawnInside(command, args).child,
          reach: async (port) => `http://127.0.0.1:${await node.reach(port)}`,
        });
        let second: ApiReplica | undefined;
        try {
          const system = await kubeglue.call('POST', '/v1/systems', {
            id: 'limited',
            url: counter.url,
            rateLimit: { requestsPerSecond: rate },
          });
          expect(system.status, JSON.stringify(system.body)).toBe(201);
          const pagesConfig = {
            systemId: 'limited',
            url: '/items',
            // `from` tells the target whose request it is: a runner Pod's or an api replica's.
            queryParams: { page: '<<page>>', from: '<<from>>' },
            pagination: {
              type: 'pageBased',
              pageSize: 1,
              stopCondition: `(response, pageInfo) => pageInfo.page >= ${pages}`,
            },
          };
          const tool = await kubeglue.call('POST', '/v1/tools', {
            id: 'ten-pages',
            steps: [{ id: 'pages', config: pagesConfig }],
          });
          expect(tool.status, JSON.stringify(tool.body)).toBe(201);
          // Started after the system and tool exist, so its caches hold them from the start.
          second = await kubeglue.startApiReplica();
          const replicas = [kubeglue.call, second.call];

          // Each replica's engine worker has run a paginated tool (its sandbox) before, as in a deployment that serves.
          for (const call of replicas) {
            const warm = await call<Run>('POST', '/v1/tools/run', {
              tool: {
                id: 'warm-up',
                steps: [
                  {
                    id: 'pages',
                    config: {
                      ...pagesConfig,
                      systemId: undefined,
                      url: `${targetUrl}/items`,
                      // One page: the HTTP target answers every page alike.
                      pagination: { ...pagesConfig.pagination, stopCondition: '() => true' },
                    },
                  },
                ],
              },
              inputs: { from: 'warm-up' },
            });
            expect(warm.body.status, warm.body.error).toBe('success');
          }

          const started = Date.now();
          // All at once: the async runs' Pods start while the sync runs already take the budget's turns.
          const podRunsDone = Promise.all(
            Array.from({ length: podRuns }, async () => {
              const accepted = await kubeglue.call<Run>('POST', '/v1/tools/ten-pages/run', {
                inputs: { from: 'pod' },
                options: { async: true },
              });
              expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
              return kubeglue.finished(accepted.body.runId, idealMs * 3);
            }),
          );
          const syncRuns = await Promise.all(
            Array.from({ length: runs - podRuns }, (_, index) =>
              replicas[index % 2]!<Run>('POST', '/v1/tools/ten-pages/run', { inputs: { from: 'api' } }),
            ),
          );
          const syncEnded = Date.now();
          const podRunsEnded = await podRunsDone;
          const tookMs = Date.now() - started;

          const failed = [...syncRuns.map((run) => run.body), ...podRunsEnded].filter(
            (run) => run.status !== 'success',
          );
          expect(failed.map((run) => `${run.runId}: ${run.error}`)).toEqual([]);
          for (const run of podRunsEnded)
            expect((await kubeglue.pod(run.runId))?.spec?.nodeName).toBe(NODE_NAME);

          const arrivals = await counter.arrivals();
          const times = arrivals.map((arrival) => arrival.at);
          const { fromFirst, byClock } = busiestSecond(times);
          const secondsOf = (from: string) =>
            new Set(
              arrivals
                .filter((arrival) => arrival.url.includes(`from=${from}`))
                .map((arrival) => Math.floor(arrival.at / 1000)),
            );
          const podSeconds = secondsOf('pod');
          const apiSeconds = secondsOf('api');
          const shared = [...podSeconds].filter((second) => apiSeconds.has(second)).length;
          const fromPods = arrivals.filter((arrival) => arrival.url.includes('from=pod'));
          const report =
            `per second: ${fromFirst.join(' ')}; took ${tookMs} ms, ideal ${idealMs} ms ` +
            `(first arrival after ${Math.min(...times) - started} ms, the last ${Math.max(...times) - started} ms, ` +
            `sync runs answered after ${syncEnded - started} ms); ` +
            `busiest wall-clock second: ${byClock}; the Pods' first request after ${Math.min(...fromPods.map((a) => a.at)) - started} ms, ` +
            `${shared} seconds with requests from both Pods and api replicas`;
          console.log(`rate budget proof: ${report}`);
          expect(arrivals).toHaveLength(runs * pages);
          expect(fromPods).toHaveLength(podRuns * pages);
          // The Pods took turns while the api replicas did, for a fifth of the ideal time at least (their
          // Pods start some seconds late on a busy node): the budget was shared, not taken one after the other.
          expect(shared, report).toBeGreaterThanOrEqual(Math.floor(idealMs / 5000));
          expect(byClock, report).toBeLessThanOrEqual(rate + BUDGET.slack);
          expect(tookMs, report).toBeLessThanOrEqual(idealMs * 1.2);
        } finally {
          await second?.stop();
          await counter.stop();
        }
      },
      ((BUDGET.runs * BUDGET.pages) / BUDGET.rate) * 3000 + 180_000,
    );

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
      // The runner records its result before its container exits: the Pod's phase follows the kubelet's
      // next status report, so it is waited for rather than read once.
      const pod = await waitFor(
        'the runner Pod to fail',
        () => kubeglue.pod(runId),
        (found) => found?.status?.phase === 'Failed',
      );
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
