import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUNS_OFFSET_MAX } from '../../../contract/api/run.ts';
import {
  buildListRunsQuery,
  embeddedStorePath,
  type ListRunsFilter,
  openStore,
  RUNS_TOTAL_CAP,
  type RunStatus,
  SQLITE_DIALECT,
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
    // Counted up to the cap: beyond it, the cap and "not exact".
    expect(page.total).toBe(Math.min(expected.length, RUNS_TOTAL_CAP));
    expect(page.totalExact).toBe(expected.length <= RUNS_TOTAL_CAP);
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

  // A Postgres-only behaviour: defined for that driver alone, so the SQLite run reports no skipped test.

  if (driver === 'pg')
    it('reads each filtered page through an index, not a table scan', async () => {
      const client = new pg.Client({ connectionString: postgresUrl(config()) });
      await client.connect();
      try {
        await client.query('ANALYZE runs');
        await client.query('ANALYZE run_systems');
        const expectedIndex: Record<string, string> = {
          'first page': 'runs_started_idx',
          'time range': 'runs_started_idx',
          toolId: 'runs_tool_started_idx',
          userId: 'runs_user_started_idx',
          requestSources: 'runs_source_started_idx',
          systemId: 'run_systems_pkey',
        };
        for (const [name, filter] of Object.entries(FILTERS)) {
          // Deeper offsets than the API allows may be planned as a scan (the store serves them; nobody asks).
          if (filter.page * filter.limit > RUNS_OFFSET_MAX) continue;
          const query = buildListRunsQuery(filter);
          const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${query.sql}`, query.params);
          const plan = JSON.stringify(rows[0]);
          expect(plan, `${name}: ${plan}`).not.toContain('Seq Scan');
          const index = expectedIndex[name];
          if (index) expect(plan, name).toContain(`"Index Name":"${index}"`);
          // Several request sources: each source's index range in order, merged, never every match sorted.
          if (name === 'requestSources') expect(plan, plan).toContain('"Node Type":"Merge Append"');
          // The count stops after the cap and one more.
          const count = await client.query(`EXPLAIN (FORMAT JSON) ${query.countSql}`, query.countParams);
          expect(JSON.stringify(count.rows[0]), name).toContain('"Node Type":"Limit"');
        }
        // systemId alone is counted on run_systems' key, without reading a run.
        const system = buildListRunsQuery(FILTERS.systemId!);
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${system.countSql}`, system.countParams);
        expect(JSON.stringify(rows[0])).toContain('"Index Name":"run_systems_pkey"');
        expect(JSON.stringify(rows[0])).not.toContain('"Relation Name":"runs"');
      } finally {
        await client.end();
      }
    });
});

/** EXPLAIN QUERY PLAN of a statement of buildListRunsQuery on SQLite (`$n` is SQLite's `?n`, as the driver binds). */
function sqlitePlan(db: DatabaseSync, sql: string, params: readonly unknown[]): string {
  const values = params.map((value) => (Array.isArray(value) ? JSON.stringify(value) : (value as string)));
  return db
    .prepare(`EXPLAIN QUERY PLAN ${sql.replace(/\$(\d+)/g, '?$1')}`)
    .all(...values)
    .map((row) => String(row.detail))
    .join(' | ');
}

describe('runs list plans on SQLite', () => {
  let dir: string;
  let db: DatabaseSync;
  const seeded = seedRuns(20_000);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeglue-list-plans-'));
    // The store as the server leaves it: migrated, written through insertRuns, never ANALYZEd.
    const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dir) });
    await store.insertRuns(seeded);
    await store.close();
    db = new DatabaseSync(embeddedStorePath(dir));
  });

  afterAll(async () => {
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("reads each page through the filter's index in list order, without sorting the matching runs", () => {
    const expected: Record<string, RegExp> = {
      'first page': /^SCAN runs USING INDEX runs_started_idx$/,
      toolId: /^SEARCH runs USING INDEX runs_tool_started_idx \(tool_id=\?\)$/,
      status: /^SEARCH runs USING INDEX runs_status_started_idx \(status=\?\)$/,
      userId: /^SEARCH runs USING INDEX runs_user_started_idx \(user_id=\?\)$/,
      // One ordered read per source, merged: a rare source costs what its own runs cost.
      requestSources:
        /MERGE \(UNION ALL\) \| LEFT \| SEARCH runs USING COVERING INDEX runs_source_started_idx \(request_source=\?\) \| RIGHT \| SEARCH runs USING COVERING INDEX runs_source_started_idx \(request_source=\?\)/,
      // run_systems' key in list order, then each run by its id: never a walk over every run.
      systemId:
        /^SEARCH s USING PRIMARY KEY \(system_id=\?\) \| SEARCH r USING INDEX sqlite_autoindex_runs_1 \(run_id=\?\)$/,
      'time range': /^SEARCH runs USING INDEX runs_started_idx \(started_at>\? AND started_at<\?\)$/,
    };
    for (const [name, pattern] of Object.entries(expected)) {
      const query = buildListRunsQuery({ ...FILTERS[name]!, page: 1 }, SQLITE_DIALECT);
      const plan = sqlitePlan(db, query.sql, query.params);
      expect(plan, name).toMatch(pattern);
      expect(plan, name).not.toContain('json_each(system_ids)');
      // Each source's rows stream from the index in order; only the page's own rows are sorted.
      if (name !== 'requestSources') expect(plan, name).not.toContain('TEMP B-TREE');
      else expect(plan.match(/TEMP B-TREE/g), plan).toHaveLength(1);
    }
  });

  it("steps over the runs before an offset page in a covering index, reading only the page's runs", () => {
    for (const name of [
      'first page',
      'toolId',
      'status',
      'userId',
      'requestSources',
      'systemId',
      'time range',
    ]) {
      const query = buildListRunsQuery(
        { ...FILTERS[name]!, page: RUNS_OFFSET_MAX / 50, limit: 50 },
        SQLITE_DIALECT,
      );
      const plan = sqlitePlan(db, query.sql, query.params);
      expect(plan, name).toMatch(
        /^SEARCH runs USING INDEX sqlite_autoindex_runs_1 \(run_id=\?\) \| LIST SUBQUERY/,
      );
      expect(plan, name).toMatch(/CO-ROUTINE page \| .*(COVERING INDEX|SEARCH s USING PRIMARY KEY)/);
      // systemId alone: the keys are run_systems' own, no run is read before the page's.
      expect(plan, name).not.toContain('SEARCH r USING');
    }
  });

  it('seeks a cursor page from the cursor, inside a time range too', () => {
    const after = { startedAt: '2026-01-11T00:00:00.000Z', runId: 'run-zzzz' };
    for (const [name, pattern] of [
      ['toolId', /SEARCH runs USING INDEX runs_tool_started_idx \(tool_id=\? AND started_at<\?\)/],
      ['systemId', /SEARCH s USING PRIMARY KEY \(system_id=\? AND started_at<\?\)/],
      ['time range', /SEARCH runs USING INDEX runs_started_idx \(started_at>\? AND started_at<\?\)/],
      ['status', /SEARCH runs USING INDEX runs_status_started_idx \(status=\? AND started_at<\?\)/],
    ] as const) {
      const query = buildListRunsQuery({ ...FILTERS[name]!, page: 1, after }, SQLITE_DIALECT);
      expect(sqlitePlan(db, query.sql, query.params), name).toMatch(pattern);
    }
    // In the range, the cursor is the only upper bound: the seek starts at the cursor, not at the range's top.
    const inRange = buildListRunsQuery({ ...FILTERS['time range']!, page: 1, after }, SQLITE_DIALECT);
    expect(inRange.params).not.toContain(FILTERS['time range']!.startedBefore);
    expect(inRange.params).toContain(after.startedAt);
  });

  it('counts through a covering index and stops after the cap', () => {
    for (const name of ['first page', 'status', 'requestSources', 'systemId', 'time range']) {
      const query = buildListRunsQuery(FILTERS[name]!, SQLITE_DIALECT);
      const plan = sqlitePlan(db, query.countSql, query.countParams);
      expect(plan, name).toMatch(/COVERING INDEX|USING PRIMARY KEY/);
      expect(plan, name).not.toMatch(/SCAN runs(?! USING COVERING)/);
      const [{ total }] = db
        .prepare(query.countSql.replace(/\$(\d+)/g, '?$1'))
        .all(...query.countParams.map((v) => (Array.isArray(v) ? JSON.stringify(v) : (v as string)))) as [
        { total: number },
      ];
      expect(total, name).toBeLessThanOrEqual(RUNS_TOTAL_CAP + 1);
    }
  });
});

describeStore('the total of a runs list', (store) => {
  const base = Date.parse('2026-02-01T00:00:00.000Z');
  const run = (i: number, toolId: string): StoredRun => ({
    runId: `cap-${String(i).padStart(6, '0')}`,
    toolId,
    status: 'success',
    requestSource: 'api',
    systemIds: i % 2 === 0 ? ['sys-even'] : [],
    metadata: {
      startedAt: new Date(base + i * 1000).toISOString(),
      completedAt: new Date(base + i * 1000 + 5).toISOString(),
      durationMs: 5,
    },
  });

  beforeAll(async () => {
    // The cap's worth of runs of one tool, and one run more of another.
    const runs = Array.from({ length: RUNS_TOTAL_CAP }, (_, i) => run(i, 'capped'));
    runs.push(run(RUNS_TOTAL_CAP, 'other'));
    expect(await store.insertRuns(runs)).toBe(RUNS_TOTAL_CAP + 1);
  });

  it('is the cap offset paging reaches, one fact', () => {
    expect(RUNS_TOTAL_CAP).toBe(RUNS_OFFSET_MAX);
  });

  it('is exact up to the cap, and the cap with totalExact false beyond it', async () => {
    const atCap = await store.listRuns({ toolId: 'capped', page: 1, limit: 50 });
    expect(atCap).toMatchObject({ total: RUNS_TOTAL_CAP, totalExact: true, hasMore: true });
    const beyond = await store.listRuns({ page: 1, limit: 50 });
    expect(beyond).toMatchObject({ total: RUNS_TOTAL_CAP, totalExact: false, hasMore: true });
    const few = await store.listRuns({ toolId: 'other', page: 1, limit: 50 });
    expect(few).toMatchObject({ total: 1, totalExact: true, hasMore: false });
    const systems = await store.listRuns({ systemId: 'sys-even', page: 1, limit: 50 });
    expect(systems).toMatchObject({ total: RUNS_TOTAL_CAP / 2 + 1, totalExact: true });
  });

  it('says whether more follow from the rows themselves, at the last offset page and by cursor', async () => {
    const lastPage = RUNS_TOTAL_CAP / 50;
    const last = await store.listRuns({ toolId: 'capped', page: lastPage, limit: 50 });
    expect(last.runs).toHaveLength(50);
    expect(last.hasMore).toBe(false);
    expect(last.runs.at(-1)?.runId).toBe('cap-000000');
    // Without the tool, one run more exists than the cap: the same depth has more after it.
    const deepest = await store.listRuns({ page: lastPage, limit: 50 });
    expect(deepest.hasMore).toBe(true);
    const oldest = deepest.runs.at(-1)!;
    const after = { startedAt: oldest.metadata.startedAt, runId: oldest.runId };
    const tail = await store.listRuns({ page: 1, limit: 50, after });
    expect(tail.runs.map((r) => r.runId)).toEqual(['cap-000000']);
    expect(tail).toMatchObject({ hasMore: false, total: RUNS_TOTAL_CAP, totalExact: false });
  });
});
