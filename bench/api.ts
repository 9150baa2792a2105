import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadSettings } from '../config/config.ts';
import { embeddedStorePath, openStore, type StoredRun } from '../store/index.ts';
import { startTestPostgres } from '../test/support/postgres.ts';
import { processTree, samplePeakPss, treePss } from './pss.ts';
import {
  emit,
  interleaved,
  overheadFigures,
  percentile,
  progress,
  round,
  throughput,
  timed,
} from './stats.ts';
import { startJsonTarget } from './target.ts';

export const ADMIN_KEY = 'kg_bench-admin-key-000000000000000000000000';
const SEQUENTIAL = 2_000;
const { bench } = loadSettings('bench');
const THROUGHPUT_MS = bench.throughputMs;
const CONCURRENCY = 32;
/** Runs seeded for api.list_runs (KUBEGLUE_BENCH_LIST_RUNS; 0 skips it: seeding takes minutes). */
const LIST_RUNS = bench.listRuns;
/** The paginated listing: 45 items served 10 per page, so a run fetches 5 pages (the last one short). */
const LISTING_ITEMS = 45;
const PAGE_SIZE = 10;
const PAGES = Math.ceil(LISTING_ITEMS / PAGE_SIZE);
/** How long to wait after the load for idle engine workers to retire (KUBEGLUE_WORKER_IDLE_MS + margin). */
const SETTLE_MS = bench.settleMs;

/** The bench target: `/items?offset=&limit=` pages through LISTING_ITEMS items. */
export function startTarget() {
  return startJsonTarget((url) => {
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? PAGE_SIZE);
    const items = [];
    for (let i = offset; i < Math.min(LISTING_ITEMS, offset + limit); i++) {
      items.push({ id: i, name: `item ${i}`, email: `user${i}@example.com` });
    }
    return JSON.stringify({ items, total: LISTING_ITEMS });
  });
}

interface Server {
  url: string;
  child: ChildProcess;
  /** Peak resident set size of the server process (VmHWM), MB. */
  peakRssMb(): Promise<number>;
  stop(): Promise<void>;
}

/** The node flags of `npm start` (package.json is their one source), so the bench runs what users run. */
const START_FLAGS = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as {
    scripts: { start: string };
  }
).scripts.start
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));

/** The embedded deployment as its own process, as `npm start` runs it: compiled (`npm run bench` builds first). */
export async function startServer(env: Record<string, string>): Promise<Server> {
  const child = spawn(
    process.execPath,
    [...START_FLAGS, join(import.meta.dirname, '../dist/bin/kubeglue.js'), 'embedded'],
    {
      env: {
        ...process.env,
        KUBEGLUE_PORT: '0',
        KUBEGLUE_ADMIN_KEY: ADMIN_KEY,
        KUBEGLUE_LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /ready on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return {
    url,
    child,
    peakRssMb: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export function client(base: string) {
  const agent = new Agent({ connections: 64 });
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await request(`${base}${path}`, {
      method,
      dispatcher: agent,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await response.body.json()) as Record<string, unknown>;
    if (response.statusCode >= 400)
      throw new Error(`${method} ${path}: ${response.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  return { agent, call };
}

/** The benchmark's two tools (a one-step GET, a 5-page pagination + transform) and a call of each. */
export async function createBenchTools(call: ReturnType<typeof client>['call'], targetUrl: string) {
  await call('POST', '/tools', {
    id: 'bench-get',
    steps: [{ id: 'get', config: { url: `${targetUrl}/ok` } }],
  });
  await call('POST', '/tools', {
    id: 'bench-pages',
    steps: [
      {
        id: 'list',
        config: {
          url: `${targetUrl}/items`,
          queryParams: { offset: '<<offset>>', limit: '<<limit>>' },
          pagination: { type: 'offsetBased', pageSize: String(PAGE_SIZE) },
        },
      },
      {
        id: 'shape',
        config: {
          type: 'transform',
          transformCode: '(s) => s.list.data.items.map((item) => ({ id: item.id, name: item.name }))',
        },
      },
    ],
  });
  const run = () => call('POST', '/tools/bench-get/run', {});
  const runPages = async () => {
    const result = await call('POST', '/tools/bench-pages/run', {});
    if (result.status !== 'success' || !Array.isArray(result.data) || result.data.length !== LISTING_ITEMS) {
      throw new Error(`pagination bench run: ${JSON.stringify(result).slice(0, 300)}`);
    }
  };
  return { run, runPages };
}

/** The tree's PSS once the idle engine workers have retired (back to the server and one worker). */
async function settledPss(pid: number, idleProcesses: number): Promise<number> {
  const until = performance.now() + SETTLE_MS;
  while (performance.now() < until && (await processTree(pid)).length > idleProcesses) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return (await treePss(pid)).pssMib;
}

async function benchDriver(
  driver: 'embedded' | 'pg',
  env: Record<string, string>,
  targetUrl: string,
): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-api-'));
  const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir, ...env });
  const { agent, call } = client(`${server.url}/v1`);
  const pid = server.child.pid as number;
  try {
    const { run, runPages } = await createBenchTools(call, targetUrl);
    const direct = async () => {
      const response = await request(`${targetUrl}/ok`, { dispatcher: agent });
      await response.body.json();
    };
    const directPages = async () => {
      for (let page = 0; page < PAGES; page++) {
        const response = await request(`${targetUrl}/items?offset=${page * PAGE_SIZE}&limit=${PAGE_SIZE}`, {
          dispatcher: agent,
        });
        await response.body.json();
      }
    };

    let idle = { pssMib: 0, processes: 0 };
    if (driver === 'embedded') {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      idle = await treePss(pid);
      emit({
        bench: 'footprint.idle_pss_mib',
        value: round(idle.pssMib, 0),
        processes: idle.processes,
        target: 150,
      });
    }

    progress(`api (${driver}): warming up`);
    for (let i = 0; i < 300; i++) await run();
    for (let i = 0; i < 100; i++) await runPages();

    if (driver === 'embedded') {
      progress(`api: ${SEQUENTIAL} sequential sync runs vs direct GETs, interleaved`);
      emit({
        bench: 'api.sync_run_overhead',
        driver,
        calls: SEQUENTIAL,
        ...overheadFigures('api', await interleaved(SEQUENTIAL, run, direct)),
        targetOverheadP50Ms: 2,
      });

      progress(
        `api: ${SEQUENTIAL / 2} sequential ${PAGES}-page pagination + transform runs vs ${PAGES} direct GETs`,
      );
      emit({
        bench: 'api.pagination_overhead',
        driver,
        pages: PAGES,
        calls: SEQUENTIAL / 2,
        ...overheadFigures('api', await interleaved(SEQUENTIAL / 2, runPages, directPages)),
        targetOverheadP50Ms: 3,
      });

      progress('api: async dispatch (202 to success)');
      const dispatch: number[] = [];
      for (let i = 0; i < 200; i++) {
        const start = performance.now();
        const accepted = await call('POST', '/tools/bench-get/run', { options: { async: true } });
        for (;;) {
          const current = await call('GET', `/runs/${accepted.runId as string}`);
          if (current.status !== 'running') break;
          await new Promise((resolve) => setImmediate(resolve));
        }
        dispatch.push(performance.now() - start);
      }
      emit({
        bench: 'api.async_dispatch',
        driver,
        runs: 200,
        p50Ms: round(percentile(dispatch, 50)),
        p99Ms: round(percentile(dispatch, 99)),
      });
    }

    progress(`api (${driver}): throughput at concurrency ${CONCURRENCY} for ${THROUGHPUT_MS / 1000} s`);
    const peak = samplePeakPss(pid);
    const directRate = await throughput(direct, CONCURRENCY, THROUGHPUT_MS / 4);
    const rate = await throughput(run, CONCURRENCY, THROUGHPUT_MS);
    emit({
      bench: 'api.sync_run_throughput',
      driver,
      concurrency: CONCURRENCY,
      seconds: THROUGHPUT_MS / 1000,
      runsPerSec: round(rate, 0),
      directRequestsPerSec: round(directRate, 0),
      serverPeakRssMb: round(await server.peakRssMb(), 0),
      target: 1500,
    });
    if (driver === 'embedded') {
      progress(`api: ${PAGES}-page pagination + transform at concurrency ${CONCURRENCY}`);
      const pagesRate = await throughput(runPages, CONCURRENCY, THROUGHPUT_MS);
      emit({
        bench: 'api.pagination_throughput',
        driver,
        concurrency: CONCURRENCY,
        seconds: THROUGHPUT_MS / 1000,
        runsPerSec: round(pagesRate, 0),
        target: 600,
      });
      const load = await peak.stop();
      emit({ bench: 'footprint.load_pss_mib', value: round(load, 0), target: 400 });
      progress(`api: waiting up to ${SETTLE_MS / 1000} s for idle engine workers to retire`);
      const after = await settledPss(pid, idle.processes);
      emit({
        bench: 'footprint.after_load_pss_mib',
        value: round(after, 0),
        processes: (await processTree(pid)).length,
        idle: round(idle.pssMib, 0),
      });
    } else {
      await peak.stop();
    }
  } finally {
    await agent.close();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** GET /runs?toolId=&status= with a million runs stored (seeded directly, then served by the API). */
export async function benchListRuns(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-list-'));
  try {
    progress(`api: seeding ${LIST_RUNS} runs into SQLite`);
    const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
    const statuses = ['success', 'failed', 'aborted'] as const;
    const base = Date.parse('2026-01-01T00:00:00Z');
    for (let offset = 0; offset < LIST_RUNS; offset += 20_000) {
      const batch: StoredRun[] = [];
      for (let i = offset; i < Math.min(LIST_RUNS, offset + 20_000); i++) {
        const startedAt = new Date(base + i * 1000).toISOString();
        batch.push({
          runId: randomUUID(),
          toolId: `tool-${i % 50}`,
          status: statuses[i % 3] as (typeof statuses)[number],
          requestSource: 'api',
          systemIds: [],
          // Durations spread over 0–2 s, so api.run_stats's percentiles sort real values.
          metadata: { startedAt, completedAt: startedAt, durationMs: (i * 7919) % 2000 },
        });
      }
      await store.insertRuns(batch);
    }
    await store.close();
    const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir });
    const { agent, call } = client(`${server.url}/v1`);
    try {
      const samples: number[] = [];
      for (let i = 0; i < 200; i++) {
        samples.push(
          await timed(() => call('GET', `/runs?toolId=tool-${i % 50}&status=${statuses[i % 3]}&limit=50`)),
        );
      }
      emit({
        bench: 'api.list_runs',
        driver: 'sqlite',
        runs: LIST_RUNS,
        p50Ms: round(percentile(samples, 50)),
        p99Ms: round(percentile(samples, 99)),
      });
      // GET /v1/stats/runs (the Overview) over a day (86 400 of the runs: one a second) and an hour.
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
          driver: 'sqlite',
          runs: LIST_RUNS,
          window,
          p50Ms: round(percentile(times, 50)),
          maxMs: round(Math.max(...times)),
          targetMs: 1000,
        });
      }
      // The dashboard's runs list on the same million runs (imported here: bench/ui.ts imports this file).
      const { benchUiRunsList } = await import('./ui.ts');
      await benchUiRunsList(server.url, LIST_RUNS);
    } finally {
      await agent.close();
      await server.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * footprint.* (PSS of the embedded server's process tree: idle, under load, after it), api.sync_run_overhead,
 * api.pagination_overhead, api.async_dispatch, api.sync_run_throughput (embedded store and Postgres),
 * api.pagination_throughput, api.list_runs. Overheads are against direct calls measured in the same run.
 */
export async function benchApi(): Promise<void> {
  const target = await startTarget();
  try {
    await benchDriver('embedded', {}, target.url);
    const postgres = await startTestPostgres();
    try {
      await benchDriver('pg', { KUBEGLUE_DATABASE_URL: postgres.url }, target.url);
    } finally {
      await postgres.stop();
    }
  } finally {
    await target.stop();
  }
  if (LIST_RUNS > 0) await benchListRuns();
}

if (import.meta.main) await benchApi();
