/**
 * api.list_runs: `GET /v1/runs` with KUBEGLUE_BENCH_LIST_RUNS runs stored (10 000 000 is the issue's figure),
 * every filter of the route, the first page, the deepest offset page and cursor pages (right after the first
 * page, and from the middle of the list), on the embedded store and on Postgres. The runs are seeded straight
 * into the database by one INSERT … SELECT per million (SQLite: a recursive CTE; Postgres: generate_series),
 * in start order, so each list index grows at its end; then api.run_stats (the Overview) and the dashboard's
 * runs list (ui.runs_list_ms, with Chromium) on the embedded store's runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { encodeRunCursor } from '../api/run-cursor.ts';
import { loadSettings } from '../config/config.ts';
import { RUNS_OFFSET_MAX } from '../contract/api/run.ts';
import {
  embeddedStorePath,
  type ListRunsFilter,
  openStore,
  type RunStatus,
  type StoredRun,
} from '../store/index.ts';
import { createTestDatabase, startTestPostgres } from '../test/support/postgres.ts';
import { client, startServer } from './api.ts';
import { emit, percentile, progress, round, timed } from './stats.ts';

/** Runs seeded (KUBEGLUE_BENCH_LIST_RUNS; 0 skips the benchmark). */
const LIST_RUNS = loadSettings('bench').bench.listRuns;
const CHUNK = 1_000_000;
const SAMPLES = 10;
const SAMPLE_BUDGET_MS = 20_000;
const LIMIT = 50;
/** The deepest page offset paging allows. */
const DEEPEST_PAGE = RUNS_OFFSET_MAX / LIMIT;
/** The first run starts here, one a second after it. */
const BASE_SECONDS = Date.parse('2026-01-01T00:00:00Z') / 1000;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const STATUSES = ['success', 'failed', 'aborted'] as const;
/** The seeded runs started months ago: without this the server's retention (30 days) deletes them while measured. */
const KEEP_RUNS = { KUBEGLUE_RUN_RETENTION: '0' };

/**
 * What run `i` is: tool-(i % 50), status success/failed/aborted in turn, one of 8 request sources, user-(i %
 * 300), no system for even i and sys-(i % 25) for odd ones, started at BASE + i s, durations over 0-2 s.
 */
const SOURCES = ['api', 'api', 'frontend', 'mcp', 'cli', 'webhook', 'tool-chain', 'scheduler'];
const sourceCase = `CASE i % 8 ${SOURCES.map((source, index) => `WHEN ${index} THEN '${source}'`).join(' ')} END`;
const statusCase = `CASE i % 3 ${STATUSES.map((status, index) => `WHEN ${index} THEN '${status}'`).join(' ')} END`;
const COLUMNS =
  'run_id, tool_id, status, request_source, user_id, system_ids, started_at, completed_at, duration_ms';

/** Seeds runs [0, count) into the embedded store's file (migrated, closed); returns seconds taken. */
export function seedSqlite(path: string, count: number): number {
  const db = new DatabaseSync(path);
  const began = performance.now();
  try {
    db.exec('PRAGMA synchronous = OFF');
    db.exec('PRAGMA cache_size = -262144');
    // node:sqlite binds a JS number as REAL: the CAST keeps i an integer ('tool-3', not 'tool-3.0').
    const insert = db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?)
      INSERT INTO runs (${COLUMNS})
      SELECT printf('seed-%010d', i), 'tool-' || (i % 50), ${statusCase}, ${sourceCase}, 'user-' || (i % 300),
             CASE WHEN i % 2 = 0 THEN '[]' ELSE '["sys-' || (i % 25) || '"]' END,
             strftime('%Y-%m-%dT%H:%M:%fZ', ? + i, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', ? + i, 'unixepoch'),
             (i * 7919) % 2000
        FROM n`);
    // The systemId filter's rows (migration 22), as the store writes them with each run.
    const insertSystems = db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?)
      INSERT INTO run_systems (system_id, started_at, run_id)
      SELECT 'sys-' || (i % 25), strftime('%Y-%m-%dT%H:%M:%fZ', ? + i, 'unixepoch'), printf('seed-%010d', i)
        FROM n WHERE i % 2 = 1`);
    for (let from = 0; from < count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK) - 1;
      db.exec('BEGIN');
      insert.run(from, to, BASE_SECONDS, BASE_SECONDS);
      insertSystems.run(from, to, BASE_SECONDS);
      db.exec('COMMIT');
      progress(
        `list_runs (sqlite): ${to + 1} runs seeded, ${round((performance.now() - began) / 1000, 0)} s`,
      );
    }
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
  return (performance.now() - began) / 1000;
}

/** The same runs into a migrated Postgres database; returns seconds taken (VACUUM ANALYZE included). */
async function seedPg(url: string, count: number): Promise<number> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const began = performance.now();
  try {
    await db.query('SET synchronous_commit = off');
    for (let from = 0; from < count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK) - 1;
      await db.query(
        `INSERT INTO runs (${COLUMNS})
         SELECT 'seed-' || lpad(i::text, 10, '0'), 'tool-' || (i % 50), ${statusCase}, ${sourceCase},
                'user-' || (i % 300),
                CASE WHEN i % 2 = 0 THEN '{}'::text[] ELSE ARRAY['sys-' || (i % 25)] END,
                to_timestamp($3::bigint + i), to_timestamp($3::bigint + i), (i * 7919) % 2000
           FROM generate_series($1::bigint, $2::bigint) AS i`,
        [from, to, BASE_SECONDS],
      );
      await db.query(
        `INSERT INTO run_systems (system_id, started_at, run_id)
         SELECT 'sys-' || (i % 25), to_timestamp($3::bigint + i), 'seed-' || lpad(i::text, 10, '0')
           FROM generate_series($1::bigint, $2::bigint) AS i WHERE i % 2 = 1`,
        [from, to, BASE_SECONDS],
      );
      progress(`list_runs (pg): ${to + 1} runs seeded, ${round((performance.now() - began) / 1000, 0)} s`);
    }
    // As autovacuum would: the visibility map lets the counts read the indexes only.
    await db.query('VACUUM ANALYZE runs');
    await db.query('VACUUM ANALYZE run_systems');
  } finally {
    await db.end();
  }
  return (performance.now() - began) / 1000;
}

/** Every filter of GET /v1/runs (and two together), as the query of sample `k`. */
function filters(count: number): Record<string, (k: number) => string> {
  const last = BASE_SECONDS + count - 1;
  return {
    none: () => '',
    toolId: (k) => `toolId=tool-${k % 50}`,
    status: (k) => `status=${STATUSES[k % 3]}`,
    requestSources: (k) => `requestSources=${SOURCES[2 + (k % 6)]},tool-chain`,
    userId: (k) => `userId=user-${k % 300}`,
    systemId: (k) => `systemId=sys-${(2 * k + 1) % 25}`,
    // The last day, and one day in the middle of the stored time.
    startedAfter: (k) => `startedAfter=${iso(last - 86_400 - k)}`,
    startedRange: (k) => {
      const from = BASE_SECONDS + Math.floor(count / 2) + k * 3600;
      return `startedAfter=${iso(from)}&startedBefore=${iso(from + 86_400)}`;
    },
    toolAndStatus: (k) => `toolId=tool-${k % 50}&status=${STATUSES[k % 3]}`,
  };
}

async function measureFilters(url: string, driver: string, count: number): Promise<void> {
  const { agent, call } = client(`${url}/v1`);
  try {
    // A cursor in the middle of the list: the keyset position of run count/2 (whatever the filter).
    const middle = Math.floor(count / 2);
    const middleCursor = encodeRunCursor(
      {
        runId: `seed-${String(middle).padStart(10, '0')}`,
        metadata: { startedAt: iso(BASE_SECONDS + middle) },
      } as StoredRun,
      2,
    );
    const worst: Record<string, number> = {};
    for (const [name, query] of Object.entries(filters(count))) {
      const path = (k: number, page: string) => {
        const q = query(k);
        return `/runs?${q ? `${q}&` : ''}limit=${LIMIT}&${page}`;
      };
      const first: number[] = [];
      const deep: number[] = [];
      const next: number[] = [];
      const middleSamples: number[] = [];
      let total = 0;
      let totalExact = true;
      const began = performance.now();
      // Slow filters (seconds per call at 10 M runs) stop after 3 samples once they took SAMPLE_BUDGET_MS.
      for (let k = 0; k < SAMPLES && (k < 3 || performance.now() - began < SAMPLE_BUDGET_MS); k++) {
        let nextCursor: unknown;
        first.push(
          await timed(async () => {
            const page = await call('GET', path(k, 'page=1'));
            total = Number(page.total);
            totalExact = page.totalExact !== false;
            nextCursor = page.nextCursor;
          }),
        );
        if (typeof nextCursor === 'string') {
          next.push(await timed(() => call('GET', path(k, `cursor=${nextCursor as string}`))));
        }
        deep.push(await timed(() => call('GET', path(k, `page=${DEEPEST_PAGE}`))));
        middleSamples.push(await timed(() => call('GET', path(k, `cursor=${middleCursor}`))));
      }
      const figures = {
        firstPageP50Ms: round(percentile(first, 50)),
        deepestOffsetPageP50Ms: round(percentile(deep, 50)),
        cursorPageP50Ms: next.length ? round(percentile(next, 50)) : null,
        middleCursorPageP50Ms: round(percentile(middleSamples, 50)),
      };
      worst[name] = Math.max(...Object.values(figures).map((value) => value ?? 0));
      emit({
        bench: 'api.list_runs',
        driver,
        runs: count,
        filter: name,
        example: path(0, 'page=1'),
        matching: total,
        // false: more runs match than the API counts (total is its cap).
        matchingExact: totalExact,
        limit: LIMIT,
        deepestOffsetPage: DEEPEST_PAGE,
        ...figures,
        samples: first.length,
        maxMs: round(Math.max(...first, ...deep, ...next, ...middleSamples)),
        targetP50Ms: 10,
      });
    }
    emit({ bench: 'api.list_runs_worst', driver, runs: count, worstP50MsByFilter: worst, targetP50Ms: 10 });
  } finally {
    await agent.close();
  }
}

/**
 * api.list_runs_cpu: the CPU of the embedded store's share of each page (listRuns: the page and its count, in
 * this process, as the server runs them), per filter: what the wall times above mean on a machine whose load
 * varies from second to second.
 */
async function measureStoreCpu(path: string, count: number): Promise<void> {
  const store = await openStore({ driver: 'sqlite', path });
  try {
    const middle = Math.floor(count / 2);
    const middleAfter = {
      startedAt: iso(BASE_SECONDS + middle),
      runId: `seed-${String(middle).padStart(10, '0')}`,
    };
    for (const [name, query] of Object.entries(filters(count))) {
      const samples: Record<string, number[]> = { first: [], deepest: [], next: [], middle: [] };
      const cpu = async (kind: string, filter: ListRunsFilter) => {
        const before = process.cpuUsage();
        const page = await store.listRuns(filter);
        const used = process.cpuUsage(before);
        samples[kind]!.push((used.user + used.system) / 1000);
        return page;
      };
      for (let k = 0; k < SAMPLES; k++) {
        const base = filterOf(query(k));
        const first = await cpu('first', { ...base, page: 1, limit: LIMIT });
        const last = first.runs.at(-1);
        if (last) {
          await cpu('next', {
            ...base,
            page: 1,
            limit: LIMIT,
            after: { startedAt: last.metadata.startedAt, runId: last.runId },
          });
        }
        await cpu('deepest', { ...base, page: DEEPEST_PAGE, limit: LIMIT });
        await cpu('middle', { ...base, page: 1, limit: LIMIT, after: middleAfter });
      }
      emit({
        bench: 'api.list_runs_cpu',
        driver: 'sqlite',
        runs: count,
        filter: name,
        ...Object.fromEntries(
          Object.entries(samples).map(([kind, values]) => [`${kind}CpuMsP50`, round(percentile(values, 50))]),
        ),
      });
    }
  } finally {
    await store.close();
  }
}

/** The store filter of a GET /v1/runs query string of `filters`. */
function filterOf(query: string): Omit<ListRunsFilter, 'page' | 'limit'> {
  const params = new URLSearchParams(query);
  const filter: Omit<ListRunsFilter, 'page' | 'limit'> = {};
  const toolId = params.get('toolId');
  if (toolId) filter.toolId = toolId;
  const status = params.get('status');
  if (status) filter.status = status as RunStatus;
  const sources = params.get('requestSources');
  if (sources) filter.requestSources = sources.split(',');
  const userId = params.get('userId');
  if (userId) filter.userId = userId;
  const systemId = params.get('systemId');
  if (systemId) filter.systemId = systemId;
  const after = params.get('startedAfter');
  if (after) filter.startedAfter = after;
  const before = params.get('startedBefore');
  if (before) filter.startedBefore = before;
  return filter;
}

/** GET /v1/stats/runs (the Overview) over a day (86 400 of the runs: one a second) and an hour. */
async function measureRunStats(url: string, driver: string, count: number): Promise<void> {
  const { agent, call } = client(`${url}/v1`);
  try {
    for (const [window, from, to, bucket] of [
      ['day', '2026-01-05T00:00:00Z', '2026-01-06T00:00:00Z', 900],
      ['hour', '2026-01-05T12:00:00Z', '2026-01-05T13:00:00Z', 60],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        times.push(await timed(() => call('GET', `/stats/runs?from=${from}&to=${to}&bucket=${bucket}`)));
      }
      emit({
        bench: 'api.run_stats',
        driver,
        runs: count,
        window,
        p50Ms: round(percentile(times, 50)),
        maxMs: round(Math.max(...times)),
        targetMs: 1000,
      });
    }
  } finally {
    await agent.close();
  }
}

/** Both drivers, or one: `npx node --no-node-snapshot bench/list-runs.ts [sqlite|pg]`. */
export async function benchListRuns(drivers: readonly string[] = ['sqlite', 'pg']): Promise<void> {
  if (LIST_RUNS <= 0) return progress('list_runs: KUBEGLUE_BENCH_LIST_RUNS is 0, skipped');
  if (drivers.includes('sqlite')) await listRunsSqlite();
  if (drivers.includes('pg')) await listRunsPg();
}

async function listRunsSqlite(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-list-'));
  try {
    const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
    await store.close();
    progress(`list_runs: seeding ${LIST_RUNS} runs into SQLite`);
    const seconds = seedSqlite(embeddedStorePath(dataDir), LIST_RUNS);
    emit({ bench: 'api.list_runs_seed', driver: 'sqlite', runs: LIST_RUNS, seconds: round(seconds, 0) });
    await measureStoreCpu(embeddedStorePath(dataDir), LIST_RUNS);
    const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir, ...KEEP_RUNS });
    try {
      await measureFilters(server.url, 'sqlite', LIST_RUNS);
      await measureRunStats(server.url, 'sqlite', LIST_RUNS);
      // The dashboard's runs list on the same runs (imported here: bench/ui.ts imports bench/api.ts).
      const { benchUiRunsList } = await import('./ui.ts');
      await benchUiRunsList(server.url, LIST_RUNS);
    } finally {
      await server.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function listRunsPg(): Promise<void> {
  const postgres = await startTestPostgres();
  try {
    const database = await createTestDatabase(postgres.url);
    const dataDirPg = await mkdtemp(join(tmpdir(), 'kubeglue-bench-list-pg-'));
    try {
      const store = await openStore({ driver: 'pg', url: database.url });
      await store.close();
      progress(`list_runs: seeding ${LIST_RUNS} runs into Postgres`);
      const seconds = await seedPg(database.url, LIST_RUNS);
      emit({ bench: 'api.list_runs_seed', driver: 'pg', runs: LIST_RUNS, seconds: round(seconds, 0) });
      const server = await startServer({
        KUBEGLUE_DATA_DIR: dataDirPg,
        KUBEGLUE_DATABASE_URL: database.url,
        ...KEEP_RUNS,
      });
      try {
        await measureFilters(server.url, 'pg', LIST_RUNS);
      } finally {
        await server.stop();
      }
    } finally {
      await database.drop();
      await rm(dataDirPg, { recursive: true, force: true });
    }
  } finally {
    await postgres.stop();
  }
}

if (import.meta.main) await benchListRuns(process.argv[2] ? [process.argv[2]] : undefined);
