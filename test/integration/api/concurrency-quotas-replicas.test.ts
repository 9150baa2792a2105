/**
 * Two API processes on one Postgres store count the same runs: a tool's maxConcurrentRuns and an API
 * key's quotas hold across them (docs/operations.md), and a run queued on one starts when the run
 * holding the slot on the other ends. Sync runs: two embedded processes each run an operator over the
 * same ToolRuns, which the cluster deployment never does (its operator is one leader); the operator's
 * queue of async runs is tested in concurrency-quotas.test.ts.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import { callOk, startTestApi, type TestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const database = useTestDatabase();
const target = useHttpTarget();
const replicas: TestApi[] = [];

beforeAll(async () => {
  // One after the other: the first one migrates the store and stores the admin key.
  for (let i = 0; i < 2; i++) replicas.push(await startTestApi({ KUBEGLUE_DATABASE_URL: database.url }));
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
});

const one = () => replicas[0] as TestApi;
const two = () => replicas[1] as TestApi;

function answer(res: ServerResponse | undefined): void {
  res?.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
}

async function heldTool(id: string, path: string, capacity: object): Promise<ServerResponse[]> {
  const held = target.hold(path);
  await callOk(one(), 'POST', '/v1/tools', {
    id,
    steps: [{ id: 'wait', config: { url: `${target.url}${path}` } }],
    ...capacity,
  });
  // The other replica's tool cache has it too.
  await expect.poll(async () => (await two().call('GET', `/v1/tools/${id}`)).status).toBe(200);
  return held;
}

const start = (api: TestApi, toolId: string, body: object = {}, key?: string) =>
  api.call<Run & ErrorBody>('POST', `/v1/tools/${toolId}/run`, { body, ...(key ? { key } : {}) });

describe('two API replicas on one Postgres store', () => {
  it("refuse a run on one replica while the tool's only slot is held on the other", async () => {
    const held = await heldTool('shared-strict', '/shared-strict', {
      maxConcurrentRuns: 1,
      whenAtCapacity: 'refuse',
    });
    const running = start(one(), 'shared-strict');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const refused = await start(two(), 'shared-strict');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error.code).toBe('KG_ERR_TOOL_AT_CAPACITY');
    answer(held[0]);
    expect((await running).body.status).toBe('success');
    const next = start(two(), 'shared-strict');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(2);
    answer(held[1]);
    expect((await next).body.status).toBe('success');
  });

  it('hold a sync run on one replica until the run holding the slot on the other ends', async () => {
    const held = await heldTool('shared-queue', '/shared-queue', { maxConcurrentRuns: 1 });
    const first = start(one(), 'shared-queue');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const second = start(two(), 'shared-queue', { runId: 'queued-on-two', options: { timeout: 60_000 } });
    // A sync run waits before its record is written: its place in the queue is in the store.
    const queued = async () =>
      (await two().embedded.store.runSlots.waiting(['queued-on-two'], new Date())).length;
    await expect.poll(queued, { timeout: 20_000 }).toBe(1);
    expect(held).toHaveLength(1);
    const firstEnded = Date.now();
    answer(held[0]);
    expect((await first).body.status).toBe('success');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(2);
    expect(target.requests.filter((r) => r.path === '/shared-queue')[1]?.receivedAt).toBeGreaterThanOrEqual(
      firstEnded,
    );
    answer(held[1]);
    expect((await second).body.status).toBe('success');
  });

  it("count a key's concurrent runs and runs per minute on both replicas", async () => {
    const held = await heldTool('shared-key', '/shared-key', {});
    const created = await callOk<{ key: string }>(one(), 'POST', '/v1/api-keys', {
      name: 'shared quota',
      scopes: ['runs:execute', 'runs:read'],
      quotas: { concurrentRuns: 1, runsPerMinute: 1_000 },
    });
    const first = start(one(), 'shared-key', {}, created.key);
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const refused = await start(two(), 'shared-key', {}, created.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('KG_ERR_KEY_QUOTA_EXCEEDED');
    expect(refused.headers.get('ratelimit-limit')).toBe('1');
    answer(held[0]);
    expect((await first).body.status).toBe('success');

    const perMinute = await callOk<{ key: string }>(one(), 'POST', '/v1/api-keys', {
      name: 'shared rate',
      scopes: ['runs:execute'],
      quotas: { runsPerMinute: 2 },
    });
    await callOk(one(), 'POST', '/v1/tools', {
      id: 'shared-quick',
      steps: [{ id: 'one', config: { type: 'transform', transformCode: '() => 1' } }],
    });
    await expect.poll(async () => (await two().call('GET', '/v1/tools/shared-quick')).status).toBe(200);
    // Alternating replicas; a minute may begin between two calls, so the limit is reached within five.
    const statuses: number[] = [];
    for (let i = 0; i < 5 && statuses.at(-1) !== 429; i++) {
      statuses.push((await start(i % 2 === 0 ? one() : two(), 'shared-quick', {}, perMinute.key)).status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length - 1).toBeGreaterThanOrEqual(2);
    expect(statuses.length - 1).toBeLessThanOrEqual(4);
  });
});
