/**
 * `npm run bench -- real-node` (opt-in: root and the caches of test/support/kube-node/prepare.sh):
 * operator.real_node_dispatch on the real node (shared/kube-node, containerd + runc): an async run
 * created → ToolRun → runner Pod from the image → run `success`, p50/p99 over KUBEGLUE_BENCH_REAL_NODE_RUNS
 * runs one at a time, with kubeglue's own share apart from the container runtime's:
 * - acceptToPodCreated: POST accepted → the runner Pod exists (api + operator: ToolRun, reconcile, Pod);
 * - podCreatedToRunning: scheduler, sandbox, CNI, container start (the runtime's, not ours);
 * - runningToSuccess: the runner process (Node start, order fetch, the step) and its result recorded;
 * - podExitToRecorded: the container's exit as the API sees it → the run's terminal record (≤ 0: the
 *   runner reports its result before it exits, so the record is there first).
 * Times are taken here from a watch on Pods (local clock), not from the second-granular timestamps.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadSettings } from '../config/config.ts';
import type { Run } from '../contract/api/run.ts';
import { runnerPodName } from '../operator/launchers/launcher.ts';
import { toolRunName } from '../runs/toolrun.ts';
import { startHttpTarget } from '../test/support/http-target.ts';
import { applyCrds, startKubeglueOnNode } from '../test/support/kube-node/kubeglue.ts';
import { NODE_GATEWAY, realNodeMissing, sleep, startRealNode } from '../test/support/kube-node/node.ts';
import { createTestDatabase, startTestPostgres } from '../test/support/postgres.ts';
import { emit, percentile, progress, round } from './stats.ts';

const NAMESPACE = 'bench';

interface PodEvent {
  type: string;
  object: {
    metadata: { name: string; labels?: Record<string, string> };
    status?: { phase?: string; containerStatuses?: { state?: { terminated?: unknown } }[] };
  };
}

export async function benchRealNode(): Promise<void> {
  const missing = realNodeMissing();
  if (missing) {
    progress(`real-node: skipped (${missing})`);
    return;
  }
  const runs = loadSettings('bench').bench.realNodeRuns;
  const postgres = await startTestPostgres();
  const database = await createTestDatabase(postgres.url);
  const target = await startHttpTarget();
  target.route('GET', '/items', { body: [{ id: 1 }] });
  const node = await startRealNode();
  let watch: AbortController | undefined;
  try {
    await applyCrds(node);
    const kubeglue = await startKubeglueOnNode(node, { namespace: NAMESPACE, databaseUrl: database.url });
    const targetUrl = `http://${NODE_GATEWAY}:${await node.expose(Number(new URL(target.url).port))}`;
    await kubeglue.call('POST', '/v1/tools', {
      id: 'items',
      steps: [{ id: 'fetch', config: { url: `${targetUrl}/items` } }],
    });

    // A watch on the namespace's Pods, through a bridge to the API server inside the node's namespace.
    const pki = join(node.paths.kubeHome, 'pki');
    const [ca, cert, key] = await Promise.all(
      ['ca.crt', 'admin.crt', 'admin.key'].map((file) => readFile(join(pki, file), 'utf8')),
    );
    const apiserver = await node.reach(6443, '127.0.0.1');
    const agent = new Agent({ connect: { ca, cert, key, servername: 'localhost' } });
    const seen = new Map<string, { created?: number; running?: number; exited?: number }>();
    watch = new AbortController();
    const response = await request(
      `https://127.0.0.1:${apiserver}/api/v1/namespaces/${NAMESPACE}/pods?watch=1`,
      {
        dispatcher: agent,
        signal: watch.signal,
      },
    );
    void (async () => {
      let buffer = '';
      try {
        for await (const chunk of response.body) {
          const now = performance.now();
          buffer += String(chunk);
          let newline = buffer.indexOf('\n');
          while (newline >= 0) {
            const event = JSON.parse(buffer.slice(0, newline)) as PodEvent;
            buffer = buffer.slice(newline + 1);
            newline = buffer.indexOf('\n');
            const times = seen.get(event.object.metadata.name) ?? {};
            times.created ??= now;
            if (event.object.status?.phase === 'Running') times.running ??= now;
            if (event.object.status?.containerStatuses?.[0]?.state?.terminated) times.exited ??= now;
            seen.set(event.object.metadata.name, times);
          }
        }
      } catch {
        // aborted at the end
      }
    })();

    const phases = {
      total: [] as number[],
      acceptToPodCreated: [] as number[],
      podCreatedToRunning: [] as number[],
      runningToSuccess: [] as number[],
      podExitToRecorded: [] as number[],
    };
    let failed = 0;
    for (let i = 0; i < runs + 2; i++) {
      const start = performance.now();
      const started = await kubeglue.call<Run>('POST', '/v1/tools/items/run', { options: { async: true } });
      const accepted = performance.now();
      const runId = started.body.runId;
      let run: Run;
      for (;;) {
        run = (await kubeglue.call<Run>('GET', `/v1/runs/${runId}`)).body;
        if (run.status !== 'running') break;
        await sleep(10);
      }
      const recorded = performance.now();
      if (run.status !== 'success') failed++;
      // The Pod's exit reaches the watch a moment after the record: wait for it (not timed).
      const podName = runnerPodName(toolRunName(runId), 1);
      for (let wait = 0; wait < 300 && seen.get(podName)?.exited === undefined; wait++) await sleep(20);
      const pod = seen.get(podName);
      if (i < 2 || !pod?.created || !pod.running) continue; // two to warm up
      phases.total.push(recorded - start);
      phases.acceptToPodCreated.push(pod.created - accepted);
      phases.podCreatedToRunning.push(pod.running - pod.created);
      phases.runningToSuccess.push(recorded - pod.running);
      if (pod.exited !== undefined) phases.podExitToRecorded.push(recorded - pod.exited);
      progress(`real-node: run ${i - 1}/${runs}: ${round(recorded - start, 0)} ms`);
    }
    const p = (samples: number[]) => ({
      p50Ms: round(percentile(samples, 50), 1),
      p99Ms: round(percentile(samples, 99), 1),
    });
    emit({
      bench: 'operator.real_node_dispatch',
      runs: phases.total.length,
      failed,
      ...p(phases.total),
      phases: Object.fromEntries(Object.entries(phases).map(([name, samples]) => [name, p(samples)])),
      ourPartP50Ms: round(percentile(phases.acceptToPodCreated, 50), 1),
    });
    await kubeglue.stop();
    // The watch first: closing the agent waits for its requests, and the watch never ends by itself.
    watch.abort();
    await agent.close().catch(() => {});
  } finally {
    watch?.abort();
    await node.stop();
    await target.stop();
    await database.drop();
    await postgres.stop();
  }
}
