import pg from 'pg';
import { beforeAll, expect, it } from 'vitest';
import {
  buildListRunsQuery,
  type ListRunsFilter,
  type RunStatus,
  type StoredRun,
} from '../../../store/index.ts';
import { describeStore, postgresUrl } from '../../support/store.ts';

const RUN_COUNT = 100_000;

/** Deterministic PRNG, so a failure reproduces. */
function mulberry32(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SOURCES = [
  'api',
  'api',
  'api',
  'frontend',
  'mcp',
  'cli',
  'webhook',
  'webhook',
  'tool-chain',
  'scheduler',
];

function seedRuns(count: number): StoredRun[] {
  const random = mulberry32(20260301);
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  const runs: StoredRun[] = [];
  for (let i = 0; i < count; i++) {
    // Whole seconds over 30 days, plus deliberate repeats, so equal start times (ordered by runId) occur.
    const startedMs =
      i % 97 === 1 && runs.length > 0
        ? Date.parse(runs[i - 1]!.metadata.startedAt)
        : start + Math.floor(random() * 30 * 86_400) * 1000;
    const roll = random();
    const status: RunStatus =
      roll < 0.6 ? 'success' : roll < 0.8 ? 'failed' : roll < 0.9 ? 'aborted' : 'running';
    const systemCount = Math.floor(random() * 4);
    const systemIds = [
      ...new Set(Array.from({ length: systemCount }, () => `sys-${Math.floor(random() * 25)}`)),
    ];
    const userRoll = random();
    const run: StoredRun = {
      // Ids are not in time order, so the run_id tie-break is exercised independently of insertion order.
      runId: `run-${((i * 7_919) % count).toString(36).padStart(4, '0')}-${i}`,
      toolId: `tool-${Math.floor(random() ** 2 * 40)}`,
      status,
      requestSource: SOURCES[Math.floor(random() * SOURCES.length)]!,
      systemIds,
      toolPayload: { n: i },
      metadata: { startedAt: new Date(startedMs).toISOString() },
    };
    if (userRoll > 0.2) run.userId = `user-${Math.floor(userRoll * 1000) % 300}`;
    if (status !== 'running') {
      const durationMs = Math.floor(random() * 60_000);
      run.metadata.completedAt = new Date(startedMs + durationMs).toISOString();
      run.metadata.durationMs = durationMs;
      if (status !== 'success') run.error = `${status} run ${i}`;
    }
    runs.push(run);
  }
  return runs;
}

function matches(run: StoredRun, filter: ListRunsFilter): boolean {
  if (filter.toolId !== undefined && run.toolId !== filter.toolId) return false;
  if (filter.toolIds !== undefined && !filter.toolIds.includes(run.toolId)) return false;
  if (filter.status !== undefined && run.status !== filter.status) return false;
  if (filter.requestSources !== undefined && !filter.requestSources.includes(run.requestSource)) return false;
  if (filter.userId !== undefined && run.userId !== filter.userId) return false;
  if (filter.systemId !== undefined && !run.systemIds.includes(filter.systemId)) return false;
  const started = Date.parse(run.metadata.startedAt);
  if (filter.startedAfter !== undefined && started < Date.parse(filter.startedAfter)) return false;
  if (filter.startedBefore !== undefined && started >= Date.parse(filter.startedBefore)) return false;
  return true;
}

function newestFirst(a: StoredRun, b: StoredRun): number {
  if (a.metadata.startedAt !== b.metadata.startedAt)
    return a.metadata.startedAt < b.metadata.startedAt ? 1 : -1;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

const FILTERS: Record<string, ListRunsFilter> = {
  'first page': { page: 1, limit: 50 },
  'a middle page': { page: 777, limit: 100 },
  'the last page': { page: RUN_COUNT / 50, limit: 50 },
  'past the last page': { page: RUN_COUNT / 50 + 1, limit: 50 },
  status: { status: 'running', page: 3, limit: 100 },
  toolId: { toolId: 'tool-3', page: 2, limit: 20 },
  requestSources: { requestSources: ['webhook', 'tool-chain'], page: 4, limit: 100 },
  userId: { userId: 'user-7', page: 1, limit: 10 },
  systemId: { systemId: 'sys-4', page: 5, limit: 50 },
  'tool restriction': { toolIds: ['tool-1', 'tool-5'], status: 'failed', page: 2, limit: 25 },
  'empty tool restriction': { toolIds: [], page: 1, limit: 25 },
  'time range': {
    startedAfter: '2026-01-10T00:00:00Z',
    startedBefore: '2026-01-12T06:30:00.000+02:00',
    page: 3,
    limit: 50,
  },
  'time range of a tool': { toolId: 'tool-2', startedAfter: '2026-01-20T00:00:00.000Z', page: 1, limit: 20 },
  combination: {
    toolId: 'tool-1',
    status: 'success',
    requestSources: ['api', 'frontend'],
    systemId: 'sys-2',
    page: 2,
    limit: 10,
  },
};

describeStore('listing 100 000 runs', (store, driver, config) => {
  const seeded = seedRuns(RUN_COUNT);
  const ordered = [...seeded].sort(newestFirst);

  beforeAll(async () => {
    expect(await store.insertRuns(seeded)).toBe(RUN_COUNT);
  });

  it.each(Object.entries(FILTERS))('pages correctly with %s', async (_name, filter) => {
    const expected = ordered.filter((run) => matches(run, filter));
    const offset = (filter.page - 1) * filter.limit;
    const page = await store.listRuns(filter);
    expect(page.total).toBe(expected.length);
    expect(page.hasMore).toBe(offset + filter.limit < expected.length);
    expect(page.runs.map((run) => run.runId)).toEqual(
      expected.slice(offset, offset + filter.limit).map((run) => run.runId),
    );
    expect(page.runs).toEqual(expected.slice(offset, offset + filter.limit));
  });

  it('seeds data where every filter in the table selects something to compare', () => {
    for (const [name, filter] of Object.entries(FILTERS)) {
      if (name === 'empty tool restriction' || name === 'past the last page') continue;
      expect(ordered.filter((run) => matches(run, filter)).length, name).toBeGreaterThan(
        filter.page * filter.limit - filter.limit,
      );
    }
  });

  it.runIf(driver === 'pg')('reads each filtered page through an index, not a table scan', async () => {
    const client = new pg.Client({ connectionString: postgresUrl(config()) });
    await client.connect();
    try {
      await client.query('ANALYZE runs');
      const expectedIndex: Record<string, string> = {
        'first page': 'runs_started_idx',
        'time range': 'runs_started_idx',
        toolId: 'runs_tool_started_idx',
        userId: 'runs_user_started_idx',
        combination: 'runs_tool_status_started_idx',
      };
      for (const [name, filter] of Object.entries(FILTERS)) {
        const query = buildListRunsQuery(filter);
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${query.sql}`, query.params);
        const plan = JSON.stringify(rows[0]);
        expect(plan, `${name}: ${plan}`).not.toContain('Seq Scan');
        const index = expectedIndex[name];
        if (index) expect(plan, name).toContain(`"Index Name":"${index}"`);
      }
    } finally {
      await client.end();
    }
  });
});
