/**
 * A System's rateLimit as users see it, in the embedded deployment (the SQLite store): set and removed
 * over REST; a step that waits for the budget says so in its live events; a 429 with Retry-After pauses
 * the whole system's budget, so another run's request waits too; the budget's use in the System and the
 * metrics. Across api replicas on Postgres and runner Pods: the proof in test/e2e/runs.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run, RunLogEvent } from '../../../contract/api/run.ts';
import type { System } from '../../../contract/api/system.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const api = useTestApi();
const target = useHttpTarget();

async function system(id: string): Promise<System> {
  return (await api.call<{ data: System }>('GET', `/v1/systems/${id}`)).body.data;
}

/** The live events of a run, read from GET /v1/logs/stream (kept a while after it ended; the stream then ends). */
async function liveEvents(runId: string): Promise<RunLogEvent[]> {
  const response = await fetch(`${api.url}/v1/logs/stream?runId=${runId}`, {
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as RunLogEvent);
}

async function tool(id: string, systemId: string, path: string, items = 0): Promise<void> {
  const created = await api.call('POST', '/v1/tools', {
    body: {
      id,
      steps: [
        {
          id: 'call',
          config: { systemId, url: path },
          ...(items > 0
            ? {
                dataSelector: `() => [${Array.from({ length: items }, (_, i) => i)}]`,
                loopConcurrency: items,
              }
            : {}),
        },
      ],
    },
  });
  expect(created.status, created.text).toBe(201);
}

beforeAll(async () => {
  target.route('GET', '/ok', { body: { ok: true } });
  for (const body of [
    { id: 'slow-api', url: target.url, rateLimit: { requestsPerSecond: 4 } },
    { id: 'paused-api', url: target.url, rateLimit: { requestsPerSecond: 100 } },
    { id: 'free-api', url: target.url },
    { id: 'one-at-a-time', url: target.url, rateLimit: { maxConcurrent: 1 } },
    { id: 'rare-api', url: target.url, rateLimit: { requestsPerSecond: 0.2 } },
  ]) {
    const created = await api.call('POST', '/v1/systems', { body });
    expect(created.status, created.text).toBe(201);
  }
  await tool('slow-loop', 'slow-api', '/ok', 6);
  await tool('free-loop', 'free-api', '/ok', 6);
});

describe("a system's rate budget", () => {
  it('is part of the System: shown as set, removed with {}, refused when it makes no sense', async () => {
    await api.call('POST', '/v1/systems', {
      body: {
        id: 'edited',
        url: target.url,
        rateLimit: { requestsPerSecond: 5, burst: 10, maxConcurrent: 2 },
      },
    });
    expect((await system('edited')).rateLimit).toEqual({ requestsPerSecond: 5, burst: 10, maxConcurrent: 2 });
    await api.call('PUT', '/v1/systems/edited', { body: { rateLimit: {} } });
    expect((await system('edited')).rateLimit).toBeUndefined();
    const refused = await api.call('POST', '/v1/systems', {
      body: { id: 'bad', url: target.url, rateLimit: { burst: 3, requestsPerSecond: 0 } },
    });
    expect(refused.status).toBe(400);
  });

  it('spaces the requests of a loop at the rate, and the step says it waits in its live events', async () => {
    target.reset();
    const run = (await api.call<Run>('POST', '/v1/tools/slow-loop/run', { body: {} })).body;
    expect(run.status, run.error).toBe('success');
    const arrivals = target.requests.filter((req) => req.path === '/ok').map((req) => req.receivedAt);
    expect(arrivals).toHaveLength(6);
    // 4 a second: the sixth request goes 5 intervals (1.25 s) after the first.
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeGreaterThanOrEqual(1_200);

    const live = await liveEvents(run.runId);
    const waits = live.filter((event) => event.type === 'budget_wait');
    expect(waits.length).toBeGreaterThan(0);
    const targetHost = new URL(target.url).host;
    expect(waits[0]).toMatchObject({ stepId: 'call', system: targetHost });
    expect(waits[0]?.message).toMatch(
      new RegExp(`^Step 'call': waiting for ${targetHost}'s budget, [0-9.]+ s$`),
    );

    // Turns taken: the six, and any a late sender gave up for a new one (engine/budget.ts).
    const use = (await system('slow-api')).rateLimitUse;
    expect(use).toMatchObject({ throttled: 0 });
    expect(use?.requests).toBeGreaterThanOrEqual(6);
    const metrics = (await api.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/kubeglue_system_requests_total\{system="slow-api"\} ([6-9]|\d\d)/);
    expect(metrics).toMatch(/kubeglue_system_budget_waits_total\{system="slow-api"\} [1-9]/);
  });

  it('leaves a system without a rateLimit alone: no waits, nothing counted', async () => {
    target.reset();
    const run = (await api.call<Run>('POST', '/v1/tools/free-loop/run', { body: {} })).body;
    expect(run.status, run.error).toBe('success');
    const live = await liveEvents(run.runId);
    expect(live.map((event) => event.type)).toContain('step_finished');
    expect(live.filter((event) => event.type === 'budget_wait')).toEqual([]);
    expect((await system('free-api')).rateLimitUse).toBeUndefined();
    expect((await api.call('GET', '/metrics')).text).not.toContain('system="free-api"');
  });

  it("a 429 with Retry-After pauses the whole system's budget: another run's request waits until then", async () => {
    target.reset();
    let answered429At = 0;
    target.route('GET', '/busy', () => {
      if (answered429At === 0) {
        answered429At = Date.now();
        return { status: 429, headers: { 'retry-after': '2' }, body: { error: 'slow down' } };
      }
      return { body: { ok: true } };
    });
    await tool('busy-once', 'paused-api', '/busy');
    await tool('paused-other', 'paused-api', '/ok');
    const first = api.call<Run>('POST', '/v1/tools/busy-once/run', { body: {} });
    // The second run starts once the first has been told to slow down.
    const deadline = Date.now() + 10_000;
    while (answered429At === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    const second = (await api.call<Run>('POST', '/v1/tools/paused-other/run', { body: {} })).body;
    expect(second.status, second.error).toBe('success');
    expect((await first).body.status).toBe('success');

    const other = target.requests.find((req) => req.path === '/ok');
    expect(other?.receivedAt).toBeGreaterThanOrEqual(answered429At + 1_900);
    expect((await system('paused-api')).rateLimitUse).toMatchObject({ throttled: 1 });
    expect((await api.call('GET', '/metrics')).text).toContain(
      'kubeglue_system_throttled_total{system="paused-api"} 1',
    );
  });

  it('maxConcurrent: the system never has more requests of the runs in flight than allowed', async () => {
    let inFlight = 0;
    let most = 0;
    target.route('GET', '/slow', async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 100));
      inFlight--;
      return { body: { ok: true } };
    });
    await tool('one-by-one', 'one-at-a-time', '/slow', 4);
    const runs = await Promise.all(
      [1, 2].map(() => api.call<Run>('POST', '/v1/tools/one-by-one/run', { body: {} })),
    );
    expect(runs.map((run) => run.body.status)).toEqual(['success', 'success']);
    expect(most).toBe(1);
    expect((await system('one-at-a-time')).rateLimitUse).toMatchObject({ requests: 8, inFlight: 0 });
  });

  it("a request that could not go before the run's deadline is not sent, and its step says why", async () => {
    target.reset();
    await tool('rare-twice', 'rare-api', '/ok', 2);
    const run = (
      await api.call<Run>('POST', '/v1/tools/rare-twice/run', { body: { options: { timeout: 2_000 } } })
    ).body;
    expect(run.status).toBe('failed');
    expect(run.error).toContain(
      "was not sent: system 'rare-api's rate budget admits no request before the run's deadline",
    );
    expect(target.requests.filter((req) => req.path === '/ok')).toHaveLength(1);
  });
});
