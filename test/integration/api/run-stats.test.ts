/**
 * GET /v1/stats/runs on the embedded deployment with each store (SQLite, Postgres): runs seeded with known
 * start times, statuses and durations add up to exact buckets, counts, failure rates and percentiles; the
 * window's edges hold; a key limited to tools sees its tools' runs only; and an async run waiting for an
 * execution slot (KUBEGLUE_MAX_ASYNC_RUNS=1, another run held) is in the queue with its ToolRun's reason.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunStats } from '../../../contract/api/run-stats.ts';
import type { DriverName, StoredRun, TerminalRunStatus } from '../../../store/index.ts';
import { startTestApi, type TestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { endedRun, runningRun } from '../../support/store.ts';

// The seeded runs are dated yesterday (UTC), not on a fixed calendar day: the server under test runs its
// retention sweep (30 days by default) in the background, and runs older than that could vanish between
// the seeding and the reads.
const DAY = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
const at = (time: string) => `${DAY}T${time}Z`;
const FROM = at('10:00:00.000');
const TO = at('10:05:00.000');

/** A run of `toolId` that started at `time` (yesterday) and ended `status` after durationMs. */
const ended = (runId: string, toolId: string, status: TerminalRunStatus, time: string, durationMs: number) =>
  endedRun(runId, toolId, status, at(time), durationMs);

const RUNS: StoredRun[] = [
  ended('a1', 'alpha', 'success', '10:00:00.000', 100),
  ended('a2', 'alpha', 'success', '10:00:30.000', 200),
  ended('a3', 'alpha', 'success', '10:01:10.000', 300),
  ended('a4', 'alpha', 'success', '10:02:00.000', 400),
  ended('a5', 'alpha', 'failed', '10:02:59.999', 1000),
  ended('a6', 'alpha', 'aborted', '10:03:00.000', 50),
  // A sync run of another process: running, but not waiting to start.
  runningRun('a7', { toolId: 'alpha', executor: 'elsewhere', metadata: { startedAt: at('10:04:59.999') } }),
  ended('b1', 'beta', 'success', '10:01:00.000', 10),
  ended('b2', 'beta', 'success', '10:01:01.000', 20),
  ended('b3', 'beta', 'failed', '10:03:30.000', 30),
  ended('b4', 'beta', 'failed', '10:03:31.000', 50),
  ended('g1', 'gamma', 'aborted', '10:04:00.000', 5),
  // Just outside the window, on either side.
  ended('before', 'alpha', 'success', '09:59:59.999', 7),
  ended('at-the-end', 'beta', 'failed', '10:05:00.000', 7),
  // Accepted and never handed over (no executor, no ToolRun): waiting to start, whenever it was accepted.
  runningRun('stranded', { toolId: 'beta', metadata: { startedAt: at('08:00:00.000') } }),
];

const counts = (success: number, failed: number, aborted: number, running: number) => ({
  success,
  failed,
  aborted,
  running,
});

describe.each<DriverName>(['sqlite', 'pg'])('GET /v1/stats/runs on %s', (driver) => {
  const target = useHttpTarget();
  let api: TestApi;
  let database: TestDatabase | undefined;
  let betaKey = '';
  let held: ServerResponse[] = [];

  async function stats(query: string, key?: string): Promise<RunStats> {
    const answer = await api.call<RunStats>('GET', `/v1/stats/runs?${query}`, key ? { key } : {});
    expect(answer.status, answer.text).toBe(200);
    return answer.body;
  }

  beforeAll(async () => {
    if (driver === 'pg') database = await createTestDatabase(inject('databaseUrl'));
    api = await startTestApi({
      KUBEGLUE_MAX_ASYNC_RUNS: '1',
      ...(database ? { KUBEGLUE_DATABASE_URL: database.url } : {}),
    });
    await api.embedded.store.insertRuns(RUNS);
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'beta only', toolIds: ['beta'] },
    });
    betaKey = created.body.key;
    held = target.hold('/hold');
    await api.call('POST', '/v1/tools', {
      body: { id: 'hold', steps: [{ id: 'wait', config: { url: `${target.url}/hold` } }] },
    });
  }, 60_000);

  afterAll(async () => {
    for (const response of held) response.destroy();
    await api?.stop();
    await database?.drop();
  });

  it('counts the runs of each bucket by status, the edges of the window included exactly', async () => {
    const answer = await stats(`from=${FROM}&to=${TO}&bucket=60`);
    expect(answer).toMatchObject({ from: FROM, to: TO, bucketSeconds: 60 });
    expect(answer.buckets).toEqual([
      { start: at('10:00:00.000'), ...counts(2, 0, 0, 0) },
      { start: at('10:01:00.000'), ...counts(3, 0, 0, 0) },
      { start: at('10:02:00.000'), ...counts(1, 1, 0, 0) },
      { start: at('10:03:00.000'), ...counts(0, 2, 1, 0) },
      { start: at('10:04:00.000'), ...counts(0, 0, 1, 1) },
    ]);
    expect(answer.totals).toEqual({ ...counts(6, 3, 2, 1), runs: 12, failureRate: 3 / 9 });
  });

  it('gives per tool its counts, failure rate and p50/p95 duration of the runs that ended by themselves', async () => {
    const answer = await stats(`from=${FROM}&to=${TO}&bucket=60`);
    expect(answer.toolCount).toBe(3);
    expect(answer.tools).toEqual([
      // Durations 100, 200, 300, 400 (success) and 1000 (failed); the aborted 50 ms run is left out.
      { toolId: 'alpha', runs: 7, ...counts(4, 1, 1, 1), failureRate: 0.2, p50Ms: 300, p95Ms: 880 },
      { toolId: 'beta', runs: 4, ...counts(2, 2, 0, 0), failureRate: 0.5, p50Ms: 25, p95Ms: 47 },
      { toolId: 'gamma', runs: 1, ...counts(0, 0, 1, 0), failureRate: null, p50Ms: null, p95Ms: null },
    ]);
  });

  it('shows a key limited to tools only the runs of its tools', async () => {
    const answer = await stats(`from=${FROM}&to=${TO}&bucket=300`, betaKey);
    expect(answer.buckets).toEqual([{ start: FROM, ...counts(2, 2, 0, 0) }]);
    expect(answer.totals).toEqual({ ...counts(2, 2, 0, 0), runs: 4, failureRate: 0.5 });
    expect(answer.tools.map((tool) => tool.toolId)).toEqual(['beta']);
    expect(answer.queue).toEqual({
      waiting: 1,
      runs: [{ runId: 'stranded', toolId: 'beta', requestSource: 'api', acceptedAt: at('08:00:00.000') }],
    });
  });

  it('reads the hour before now when no window is given, a minute per bucket', async () => {
    const before = Date.now();
    const answer = await stats('');
    const to = Date.parse(answer.to);
    expect(to).toBeGreaterThanOrEqual(before);
    expect(to - Date.parse(answer.from)).toBe(3_600_000);
    expect(answer.bucketSeconds).toBe(60);
    expect(answer.buckets).toHaveLength(60);
    expect(answer.totals.runs).toBe(0);
  });

  it.each([
    ['a window that ends before it starts', `from=${TO}&to=${FROM}`],
    ['a window longer than 7 days', 'from=2026-03-01T00:00:00Z&to=2026-03-09T00:00:00Z&bucket=3600'],
    ['more than 1 440 buckets', `from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:01Z&bucket=60`],
    ['a bucket that is not a number of seconds', `from=${FROM}&to=${TO}&bucket=1.5`],
  ])('refuses %s', async (_name, query) => {
    const answer = await api.call<{ error: { code: string } }>('GET', `/v1/stats/runs?${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('KG_ERR_VALIDATION');
  });

  it('lists an async run waiting for an execution slot, with its place in the queue', async () => {
    const executing = await api.call<{ runId: string }>('POST', '/v1/tools/hold/run', {
      body: { options: { async: true } },
    });
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(1);
    const queued = await api.call<{ runId: string }>('POST', '/v1/tools/hold/run', {
      body: { options: { async: true, requestSource: 'cli' } },
    });
    const waiting = async () => (await stats(`from=${FROM}&to=${TO}`)).queue;
    await expect
      .poll(async () => (await waiting()).runs.find((run) => run.runId === queued.body.runId)?.admission, {
        timeout: 15_000,
      })
      .toBe(
        'Waiting for an execution slot: position 1 in the queue; 1 of 1 runs executing (limit KUBEGLUE_MAX_ASYNC_RUNS)',
      );
    const queue = await waiting();
    expect(queue.waiting).toBe(2);
    expect(queue.runs.map((run) => run.runId)).toEqual(['stranded', queued.body.runId]);
    expect(queue.runs[1]).toMatchObject({ toolId: 'hold', requestSource: 'cli' });
    // A key limited to other tools does not see it.
    expect((await stats(`from=${FROM}&to=${TO}`, betaKey)).queue.waiting).toBe(1);

    // Once the slot is free, the run starts and leaves the queue.
    (held[0] as ServerResponse).end('"done"');
    await waitForRun(api, executing.body.runId);
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(2);
    expect((await waiting()).runs.map((run) => run.runId)).toEqual(['stranded']);
    (held[1] as ServerResponse).end('"done"');
    await waitForRun(api, queued.body.runId);
  });
});
