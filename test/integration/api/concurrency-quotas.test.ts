/**
 * A tool's maxConcurrentRuns (whenAtCapacity refuse or queue) and an API key's quotas, as a client sees
 * them: 429 with Retry-After and the RateLimit-* headers, a queued async run shown waiting and run after
 * the one before it, a sync run that waits for its slot or gives up at its timeout (docs/operations.md).
 */
import type { ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { type ApiResponse, callOk, type TestApi, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const api = useTestApi();

/** A tool whose one step waits at the target until the test answers it. */
async function heldTool(
  id: string,
  path: string,
  capacity: { maxConcurrentRuns?: number; whenAtCapacity?: 'queue' | 'refuse' },
): Promise<ServerResponse[]> {
  const held = target.hold(path);
  await callOk(api, 'POST', '/v1/tools', {
    id,
    steps: [{ id: 'wait', config: { url: `${target.url}${path}` } }],
    ...capacity,
  });
  return held;
}

function answer(res: ServerResponse | undefined, body: unknown): void {
  res?.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Ends the one run holding its slot (held[0]) and waits for the run queued behind it to reach `path`:
 * its request comes only after the first run ended.
 */
async function endFirstThenNextStarts(held: ServerResponse[], path: string): Promise<void> {
  expect(held).toHaveLength(1);
  const firstEnded = Date.now();
  answer(held[0], { n: 1 });
  await expect.poll(() => held.length, { timeout: 20_000 }).toBe(2);
  const second = target.requests.filter((r) => r.path === path)[1];
  expect(second?.receivedAt).toBeGreaterThanOrEqual(firstEnded);
}

const startAsync = (runApi: TestApi, toolId: string, key?: string) =>
  runApi.call<Run>('POST', `/v1/tools/${toolId}/run`, {
    body: { options: { async: true } },
    ...(key ? { key } : {}),
  });

describe('a tool at its maxConcurrentRuns', () => {
  it('refuses a run beyond it with 429, Retry-After and KG_ERR_TOOL_AT_CAPACITY (whenAtCapacity refuse)', async () => {
    const held = await heldTool('strict', '/strict', { maxConcurrentRuns: 1, whenAtCapacity: 'refuse' });
    const first = await startAsync(api, 'strict');
    expect(first.status).toBe(202);
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    for (const async of [true, false]) {
      const refused = await api.call<ErrorBody>('POST', '/v1/tools/strict/run', {
        body: { options: { async } },
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error.code).toBe('KG_ERR_TOOL_AT_CAPACITY');
      expect(refused.body.error.message).toContain("Tool 'strict' is at its capacity: 1 of its runs");
    }
    answer(held[0], { done: 1 });
    await waitForRun(api, first.body.runId);
    // The slot is free again: the next run is accepted and runs.
    const next = api.call<Run>('POST', '/v1/tools/strict/run', { body: {} });
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(2);
    answer(held[1], { done: 2 });
    expect((await next).body).toMatchObject({ status: 'success', data: { done: 2 } });
  });

  it('queues an async run beyond it: shown waiting, it runs after the one before it ends', async () => {
    const held = await heldTool('one-at-a-time', '/one', { maxConcurrentRuns: 1 });
    const first = await startAsync(api, 'one-at-a-time');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const second = await startAsync(api, 'one-at-a-time');
    expect(second.status).toBe(202);
    const waiting = async () =>
      (await api.call<Run>('GET', `/v1/runs/${second.body.runId}`)).body.waiting?.reason ?? 'not waiting';
    await expect.poll(waiting, { timeout: 20_000 }).toBe('ToolConcurrencyLimit');
    const shown = (await api.call<Run>('GET', `/v1/runs/${second.body.runId}`)).body;
    expect(shown).toMatchObject({
      status: 'running',
      waiting: { position: 1, inUse: 1, limit: 1 },
    });
    expect(shown.waiting?.message).toMatch(/^Waiting for a slot of tool one-at-a-time: position 1/);
    const listed = await api.call<{ data: Run[] }>('GET', '/v1/runs?toolId=one-at-a-time&status=running');
    expect(listed.body.data.find((run) => run.runId === second.body.runId)?.waiting?.position).toBe(1);
    await endFirstThenNextStarts(held, '/one');
    answer(held[1], { n: 2 });
    const done = await waitForRun<Run>(api, second.body.runId);
    expect(done).toMatchObject({ status: 'success' });
    expect(done.waiting).toBeUndefined();
    expect((await waitForRun<Run>(api, first.body.runId)).status).toBe('success');
  });

  it('holds a sync run until a slot frees, then runs it', async () => {
    const held = await heldTool('sync-queue', '/sync-queue', { maxConcurrentRuns: 1 });
    const first = await startAsync(api, 'sync-queue');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const sync = api.call<Run>('POST', '/v1/tools/sync-queue/run', {
      body: { runId: 'sync-waiter', options: { timeout: 60_000 } },
    });
    // A sync run waits before its record is written: its place in the queue is in the store.
    const queued = async () =>
      (await api.embedded.store.runSlots.waiting(['sync-waiter'], new Date())).length;
    await expect.poll(queued, { timeout: 20_000 }).toBe(1);
    await endFirstThenNextStarts(held, '/sync-queue');
    answer(held[1], { n: 2 });
    expect((await sync).body).toMatchObject({ status: 'success', data: { n: 2 } });
    expect((await waitForRun<Run>(api, first.body.runId)).status).toBe('success');
  });

  it('answers 429 to a sync run that waited its whole timeout without a slot', async () => {
    const held = await heldTool('sync-timeout', '/sync-timeout', { maxConcurrentRuns: 1 });
    const first = await startAsync(api, 'sync-timeout');
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    const refused = await api.call<ErrorBody>('POST', '/v1/tools/sync-timeout/run', {
      body: { options: { timeout: 1_000 } },
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.error).toMatchObject({ code: 'KG_ERR_TOOL_AT_CAPACITY' });
    expect(refused.body.error.message).toMatch(/this synchronous run waited [\d.]+ s \(its timeout\)/);
    expect(held).toHaveLength(1);
    answer(held[0], {});
    expect((await waitForRun<Run>(api, first.body.runId)).status).toBe('success');
  });
});

describe('API key quotas', () => {
  beforeAll(async () => {
    await callOk(api, 'POST', '/v1/tools', {
      id: 'quick',
      steps: [{ id: 'one', config: { type: 'transform', transformCode: '() => 1' } }],
    });
  });

  const createKey = (quotas: object) =>
    callOk<{ id: string; key: string; quotas: object }>(api, 'POST', '/v1/api-keys', {
      name: 'quota',
      scopes: ['runs:execute', 'runs:read'],
      quotas,
    });

  it('refuses runs past runsPerMinute with 429, Retry-After and RateLimit-* headers', async () => {
    const { key, quotas } = await createKey({ runsPerMinute: 2 });
    expect(quotas).toEqual({ runsPerMinute: 2, concurrentRuns: null });
    const answers: ApiResponse<ErrorBody>[] = [];
    // A minute may begin between two calls: a quota never refuses before its limit, and within a few
    // calls the limit is reached in one minute.
    for (let i = 0; i < 5 && answers.at(-1)?.status !== 429; i++) {
      answers.push(await api.call<ErrorBody>('POST', '/v1/tools/quick/run', { body: {}, key }));
    }
    const refused = answers.at(-1)!;
    expect(refused.status).toBe(429);
    expect(answers.length - 1).toBeGreaterThanOrEqual(2);
    expect(answers.length - 1).toBeLessThanOrEqual(4);
    expect(refused.body.error.code).toBe('KG_ERR_KEY_QUOTA_EXCEEDED');
    expect(refused.body.error.message).toMatch(/may start 2 runs per minute/);
    const reset = Number(refused.headers.get('ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(60);
    expect(refused.headers.get('retry-after')).toBe(String(reset));
    expect(refused.headers.get('ratelimit-limit')).toBe('2');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    // Each accepted run's answer says what is left of the minute's quota.
    const accepted = answers.at(-2)!;
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get('ratelimit-limit')).toBe('2');
    expect(accepted.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(accepted.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    const unlimited = await api.call('POST', '/v1/tools/quick/run', { body: {} });
    expect(unlimited.headers.get('ratelimit-limit')).toBeNull();
  });

  it('refuses a run past concurrentRuns until one ends; PATCH changes the quota', async () => {
    const held = await heldTool('key-held', '/key-held', {});
    const created = await createKey({ concurrentRuns: 1 });
    const first = await startAsync(api, 'key-held', created.key);
    expect(first.status).toBe(202);
    const refused = await api.call<ErrorBody>('POST', '/v1/tools/quick/run', { body: {}, key: created.key });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('KG_ERR_KEY_QUOTA_EXCEEDED');
    expect(refused.body.error.message).toMatch(/may have 1 runs in progress at once/);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('ratelimit-limit')).toBe('1');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    // The other keys are not limited by it.
    expect((await api.call<Run>('POST', '/v1/tools/quick/run', { body: {} })).status).toBe(200);

    const raised = await api.call<{ quotas: object }>('PATCH', `/v1/api-keys/${created.id}`, {
      body: { quotas: { concurrentRuns: 2 } },
    });
    expect(raised.status).toBe(200);
    expect(raised.body.quotas).toEqual({ runsPerMinute: null, concurrentRuns: 2 });
    expect((await api.call<Run>('POST', '/v1/tools/quick/run', { body: {}, key: created.key })).status).toBe(
      200,
    );
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    answer(held[0], {});
    expect((await waitForRun<Run>(api, first.body.runId)).status).toBe('success');
    const listed = await callOk<{ data: Array<{ id: string; quotas: object }> }>(api, 'GET', '/v1/api-keys');
    expect(listed.data.find((k) => k.id === created.id)?.quotas).toEqual({
      runsPerMinute: null,
      concurrentRuns: 2,
    });
  });
});

describe("runs waiting for their tool's slot, under the installation's limit of async runs", () => {
  const limited = useTestApi({ KUBEGLUE_MAX_ASYNC_RUNS: '2' });

  it('do not hold back a run of another tool behind them', async () => {
    const capped = target.hold('/capped');
    const free = target.hold('/free');
    for (const [id, path, capacity] of [
      ['capped', '/capped', { maxConcurrentRuns: 1 }],
      ['free', '/free', {}],
    ] as const) {
      await callOk(limited, 'POST', '/v1/tools', {
        id,
        steps: [{ id: 'wait', config: { url: `${target.url}${path}` } }],
        ...capacity,
      });
    }
    const first = await startAsync(limited, 'capped');
    await expect.poll(() => capped.length, { timeout: 20_000 }).toBe(1);
    const queued = await startAsync(limited, 'capped');
    const waiting = async () =>
      (await limited.call<Run>('GET', `/v1/runs/${queued.body.runId}`)).body.waiting?.position ?? 0;
    await expect.poll(waiting, { timeout: 20_000 }).toBe(1);
    // One of the two async slots is free: the other tool's run takes it, though it came later.
    const other = await startAsync(limited, 'free');
    await expect.poll(() => free.length, { timeout: 20_000 }).toBe(1);
    answer(free[0], {});
    answer(capped[0], {});
    await expect.poll(() => capped.length, { timeout: 20_000 }).toBe(2);
    answer(capped[1], {});
    for (const run of [first, queued, other]) {
      expect((await waitForRun<Run>(limited, run.body.runId)).status).toBe('success');
    }
  });
});
