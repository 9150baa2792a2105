import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { ToolResource } from '../../../contract/resources/kinds.ts';
import { Informer } from '../../../kube/informer.ts';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import {
  ClusterTransport,
  COORDINATION_KIND_SPECS,
  createClusterResources,
  KUBEGLUE_KIND_SPECS,
} from '../../../kube/resources/index.ts';
import { updateStatus } from '../../../kube/update-status.ts';
import { type FaultProxy, startKubeFaultProxy } from '../../support/kube/fault-proxy.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { type ContractResources, tool } from '../../support/resources-contract.ts';

/**
 * The kit on a real API server behind the fault proxy: what production sees when the API server restarts,
 * compacts, throttles or is far away.
 */
describeKube('the Kubernetes kit through a faulty connection', () => {
  const bed = useKubeTestBed('kit-faults', { crds: true });
  let proxy: FaultProxy;
  let direct: ClusterTransport;
  let faulty: ClusterTransport;
  /** Writes that bypass the proxy: the world changing while the informer struggles. */
  let truth: ContractResources;
  /** The same namespace, through the proxy. */
  let through: ContractResources;
  const logs: string[] = [];

  beforeAll(async () => {
    const { kube, dir, namespace } = bed;
    proxy = await startKubeFaultProxy(kube);
    direct = new ClusterTransport(loadKubeConfig({ path: await kube.writeKubeconfig(join(dir, 'direct')) }));
    faulty = new ClusterTransport(
      loadKubeConfig({ path: await kube.writeKubeconfig(join(dir, 'faulty'), 'admin', proxy.url) }),
      { maxRetryDelayMs: 2_000 },
    );
    const kinds = { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS };
    truth = createClusterResources(direct, { namespace: namespace.name, kinds });
    through = createClusterResources(faulty, { namespace: namespace.name, kinds });
  });

  afterEach(() => {
    for (const key of Object.keys(proxy.faults)) delete proxy.faults[key as keyof typeof proxy.faults];
  });

  afterAll(async () => {
    await proxy?.stop();
    await Promise.all([direct?.close(), faulty?.close()]);
  });

  /** name@resourceVersion of every Tool, sorted. */
  function snapshot(items: { metadata: { name: string; resourceVersion?: string } }[]): string[] {
    return items.map((item) => `${item.metadata.name}@${item.metadata.resourceVersion}`).sort();
  }

  async function converges(informer: Informer<ToolResource>) {
    await expect
      .poll(async () => snapshot(informer.values()), { timeout: 30_000, interval: 100 })
      .toEqual(snapshot((await truth.tools.list()).items));
  }

  /** Cuts the informer's watch once it has one open again. */
  async function drop(mode: 'reset' | 'end'): Promise<void> {
    await expect.poll(() => proxy.openWatches(), { timeout: 20_000, interval: 20 }).toBeGreaterThan(0);
    proxy.dropWatches(mode);
  }

  const requestsSince = (start: number) => proxy.requests.slice(start);
  const lists = (start: number) =>
    requestsSince(start).filter((r) => r.verb === 'list' && r.resource === 'tools' && !r.injected);

  it('keeps an informer’s cache correct across dropped watches, 410s, 429s and latency', async () => {
    const informer = new Informer(through.tools, {
      kind: 'Tool',
      minBackoffMs: 20,
      maxBackoffMs: 500,
      watchTimeoutSeconds: 60,
      log: (line) => logs.push(line),
    });
    try {
      let serial = 0;
      const churn = async () => {
        for (let i = 0; i < 3; i++) await truth.tools.create(tool(`t-${serial++}`));
        const items = (await truth.tools.list()).items;
        if (items[0]) await truth.tools.patchStatus(items[0].metadata.name, { stepCount: serial });
        if (items[1]) await truth.tools.delete(items[1].metadata.name);
      };
      await churn();
      await informer.start();
      await converges(informer);

      // Watches cut mid-stream and ended cleanly: the informer resumes from where it was, no relist.
      let mark = proxy.requests.length;
      await drop('reset');
      await churn();
      await converges(informer);
      await drop('end');
      await churn();
      await converges(informer);
      expect(lists(mark)).toEqual([]);
      const resumed = requestsSince(mark).filter((r) => r.watch && r.resource === 'tools');
      expect(resumed.length).toBeGreaterThanOrEqual(2);
      expect(resumed.every((r) => new URLSearchParams(r.query).get('resourceVersion'))).toBe(true);

      // 410 as an ERROR event, then as a plain HTTP 410: each time the informer lists again.
      for (const goneMode of ['event', 'http'] as const) {
        mark = proxy.requests.length;
        Object.assign(proxy.faults, { goneOnWatch: 1, goneMode });
        await churn();
        await drop('reset');
        await expect.poll(() => lists(mark).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
        await churn();
        await converges(informer);
        expect(requestsSince(mark).some((r) => r.injected === 'gone')).toBe(true);
      }

      // Throttled (with Retry-After) and slow: requests are retried, nothing is lost.
      mark = proxy.requests.length;
      Object.assign(proxy.faults, { tooManyRequestsEveryNth: 2, retryAfterSeconds: 1, latencyMs: 100 });
      for (const mode of ['reset', 'end', 'reset'] as const) {
        await drop(mode);
        await churn();
      }
      await converges(informer);
      expect(requestsSince(mark).some((r) => r.injected === 'tooManyRequests')).toBe(true);

      // Watches cut every few hundred milliseconds while objects keep changing.
      delete proxy.faults.tooManyRequestsEveryNth;
      Object.assign(proxy.faults, { dropWatchesEveryMs: 300, latencyMs: 20 });
      for (let round = 0; round < 4; round++) {
        await churn();
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      await converges(informer);
      expect(informer.hasSynced).toBe(true);
      expect(informer.lastEventAt).toBeGreaterThan(0);
    } finally {
      await informer.stop();
    }
  }, 120_000);

  it('writes status through conflicts: every second write answered 409', async () => {
    await truth.tools.create(tool('contended'));
    proxy.faults.conflictEveryNthWrite = 2;
    const mark = proxy.requests.length;
    for (let i = 1; i <= 6; i++) {
      const written = await updateStatus(through.tools, 'contended', (current) => ({
        stepCount: (current.status?.stepCount ?? 0) + 1,
      }));
      expect(written?.status?.stepCount).toBe(i);
    }
    expect((await truth.tools.get('contended'))?.status?.stepCount).toBe(6);
    const injected = requestsSince(mark).filter((r) => r.injected === 'conflict');
    expect(injected.length).toBeGreaterThanOrEqual(3);
    // Nothing to write: no write at all.
    const before = proxy.requests.length;
    const unchanged = await updateStatus(through.tools, 'contended', () => undefined);
    expect(unchanged?.status?.stepCount).toBe(6);
    expect(requestsSince(before).filter((r) => r.verb === 'patch')).toEqual([]);
    expect(await updateStatus(through.tools, 'no-such-tool', () => ({ stepCount: 1 }))).toBeUndefined();
  });

  it('retries reads the server throttles, honouring Retry-After', async () => {
    await truth.tools.create(tool('throttled'));
    proxy.faults.tooManyRequestsEveryNth = 1;
    proxy.faults.retryAfterSeconds = 1;
    const reading = through.tools.get('throttled');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    delete proxy.faults.tooManyRequestsEveryNth;
    expect((await reading)?.metadata.name).toBe('throttled');
    // Throttled for good: the error says so once the tries are used up.
    proxy.faults.tooManyRequestsEveryNth = 1;
    proxy.faults.retryAfterSeconds = 0;
    await expect(through.tools.get('throttled')).rejects.toMatchObject({
      code: 429,
      reason: 'TooManyRequests',
    });
  }, 30_000);
});
