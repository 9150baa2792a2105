import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadSettings, SETTINGS } from '../config/config.ts';
import { startTestPostgres } from '../test/support/postgres.ts';
import { DISPATCH_RUNS, measureDispatch } from './async-dispatch.ts';
import { type CpuRoots, measureCpu, postmasterPid } from './cpu.ts';
import { type LoadClient, startLoadClient } from './load-client.ts';
import { processTree, samplePeakPss, treeCommands, treePss } from './pss.ts';
import { emit, interleaved, overheadFigures, progress, round } from './stats.ts';
import { startJsonTarget } from './target.ts';

export const ADMIN_KEY = 'kg_bench-admin-key-000000000000000000000000';
const SEQUENTIAL = 2_000;
const { bench } = loadSettings('bench');
const THROUGHPUT_MS = bench.throughputMs;
const CONCURRENCY = 32;
/** The paginated listing: 45 items served 10 per page, so a run fetches 5 pages (the last one short). */
export const LISTING_ITEMS = 45;
export const PAGE_SIZE = 10;
const PAGES = Math.ceil(LISTING_ITEMS / PAGE_SIZE);
/** The one-step GET with a small transform: the outputTransform reads one field of the step's data. */
export const TRANSFORM_TOOL = 'bench-transform';
export const TRANSFORM_SOURCE = '(s) => s.get.data.ok';
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

/** The README's start command: it builds, then execs the pinned node with the embedded deployment's flags. */
export const START_COMMAND = join(import.meta.dirname, '../bin/start');

/**
 * The node flags of the start command (bin/start is their one source), so the bench runs what users run.
 * bin/start execs node, so the process it leaves is exactly `node <flags> dist/bin/kubeglue.js embedded`.
 */
const START_FLAGS = (readFileSync(START_COMMAND, 'utf8').match(/^exec [^\n]*(?:\\\n[^\n]*)*/m)?.[0] ?? '')
  .split(/\s+/)
  .filter((word) => word.startsWith('--'));

/**
 * The embedded deployment as its own process, compiled (`npm run bench` builds first): with `viaStartCommand`,
 * the README's start command itself (bin/start: it builds what changed, then execs node), else the node process that
 * command leaves, started directly with its flags.
 */
export async function startServer(
  env: Record<string, string>,
  options: { viaStartCommand?: boolean } = {},
): Promise<Server> {
  const [command, args] = options.viaStartCommand
    ? [START_COMMAND, []]
    : [process.execPath, [...START_FLAGS, join(import.meta.dirname, '../dist/bin/kubeglue.js'), 'embedded']];
  const child = spawn(command, args, {
    env: {
      ...process.env,
      KUBEGLUE_PORT: '0',
      KUBEGLUE_ADMIN_KEY: ADMIN_KEY,
      KUBEGLUE_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

/**
 * The benchmark's tools and a call of each: a one-step GET; the same GET with a small outputTransform that
 * reads one field (what users run: the headline figures use it); a 5-page pagination + transform.
 */
export async function createBenchTools(call: ReturnType<typeof client>['call'], targetUrl: string) {
  await call('POST', '/tools', {
    id: 'bench-get',
    steps: [{ id: 'get', config: { url: `${targetUrl}/ok` } }],
  });
  await call('POST', '/tools', {
    id: TRANSFORM_TOOL,
    steps: [{ id: 'get', config: { url: `${targetUrl}/ok` } }],
    outputTransform: TRANSFORM_SOURCE,
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
  const runTransform = async () => {
    const result = await call('POST', `/tools/${TRANSFORM_TOOL}/run`, {});
    if (result.status !== 'success' || result.data !== true) {
      throw new Error(`transform bench run: ${JSON.stringify(result).slice(0, 300)}`);
    }
  };
  const runPages = async () => {
    const result = await call('POST', '/tools/bench-pages/run', {});
    if (result.status !== 'success' || !Array.isArray(result.data) || result.data.length !== LISTING_ITEMS) {
      throw new Error(`pagination bench run: ${JSON.stringify(result).slice(0, 300)}`);
    }
  };
  return { run, runTransform, runPages };
}

/**
 * The tree's PSS once the idle engine workers have retired: the server and the workers the pool keeps
 * without runs (KUBEGLUE_IDLE_WORKERS, as the server reads it from the same environment).
 */
async function settledPss(pid: number): Promise<number> {
  const idleProcesses = 1 + loadSettings('embedded').idleWorkers;
  const until = performance.now() + SETTLE_MS;
  while (performance.now() < until && (await processTree(pid)).length > idleProcesses) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return (await treePss(pid)).pssMib;
}

/**
 * What most benches start with: the JSON target, the embedded server on a fresh data directory (`env` on
 * top), and a client of its /v1. `stop` ends them in reverse order and removes the directory; stop what
 * was started on top of them (a load client, a browser) first.
 */
export async function startBenchServer(name: string, env: Record<string, string> = {}) {
  const target = await startTarget();
  const dataDir = await mkdtemp(join(tmpdir(), `kubeglue-bench-${name}-`));
  const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir, ...env });
  const { agent, call } = client(`${server.url}/v1`);
  return {
    target,
    server,
    call,
    stop: async () => {
      await agent.close();
      await server.stop();
      await target.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The external load generator against this server and target, with the bench tools' ids. */
export function startBenchClient(serverUrl: string, targetUrl: string): Promise<LoadClient> {
  return startLoadClient({
    apiUrl: serverUrl,
    targetUrl,
    key: ADMIN_KEY,
    tool: 'bench-get',
    transformTool: TRANSFORM_TOOL,
    pagesTool: 'bench-pages',
    items: LISTING_ITEMS,
    pageSize: PAGE_SIZE,
    connections: CONCURRENCY * 2,
  });
}

/** `concurrency` loops of `fn` in this process for `ms`: the in-process client, kept beside the external one. */
async function inProcessLoad(fn: () => Promise<unknown>, ms: number) {
  let completed = 0;
  const began = performance.now();
  const end = began + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await fn();
        completed++;
      }
    }),
  );
  return { completed, seconds: (performance.now() - began) / 1000 };
}

const rate = (phase: { completed: number; seconds: number }) => phase.completed / phase.seconds;

/**
 * One throughput figure: `kind` at concurrency 32 from the external client (the figure) and from this
 * process (`inProcess`), each beside the direct calls of the same client in the same run (`ratio`), with
 * the tree's CPU per run.
 */
async function throughputFigure(
  external: LoadClient,
  roots: CpuRoots,
  kind: 'run' | 'runTransform' | 'runPages',
  fn: () => Promise<unknown>,
  directFn: () => Promise<unknown>,
) {
  const directKind = kind === 'runPages' ? 'directPages' : 'direct';
  const direct = await external.load(directKind, CONCURRENCY, { ms: THROUGHPUT_MS / 4 });
  const runs = await measureCpu(roots, () => external.load(kind, CONCURRENCY, { ms: THROUGHPUT_MS }));
  const inDirect = await inProcessLoad(directFn, THROUGHPUT_MS / 4);
  const { loadClient: _external, ...tree } = roots;
  const inRuns = await measureCpu(tree, () => inProcessLoad(fn, THROUGHPUT_MS));
  return {
    client: 'external',
    concurrency: CONCURRENCY,
    seconds: THROUGHPUT_MS / 1000,
    runsPerSec: round(rate(runs), 0),
    [kind === 'runPages' ? 'directPaginationsPerSec' : 'directRequestsPerSec']: round(rate(direct), 0),
    ratio: round(rate(runs) / rate(direct), 3),
    failedRuns: runs.failed,
    ...(runs.firstError ? { firstError: runs.firstError } : {}),
    cpuUsPerRun: runs.cpuUsPerRun,
    inProcess: {
      runsPerSec: round(rate(inRuns), 0),
      directPerSec: round(rate(inDirect), 0),
      ratio: round(rate(inRuns) / rate(inDirect), 3),
      cpuUsPerRun: inRuns.cpuUsPerRun,
    },
  };
}

async function benchDriver(
  driver: 'embedded' | 'pg',
  env: Record<string, string>,
  targetUrl: string,
): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-api-'));
  // The embedded server is started by the README's start command itself, so footprint.* is its tree.
  const server = await startServer(
    { KUBEGLUE_DATA_DIR: dataDir, ...env },
    { viaStartCommand: driver === 'embedded' },
  );
  const { agent, call } = client(`${server.url}/v1`);
  const pid = server.child.pid as number;
  let external: LoadClient | undefined;
  try {
    const { run, runTransform, runPages } = await createBenchTools(call, targetUrl);
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

    // Just started (no run yet): the server and the first engine worker.
    const started = driver === 'embedded' ? await treePss(pid) : { pssMib: 0, processes: 0 };
    external = await startBenchClient(server.url, targetUrl);
    const databaseUrl = env[SETTINGS.tree.databaseUrl.name];
    const postgres = databaseUrl ? await postmasterPid(databaseUrl) : undefined;
    const roots: CpuRoots = { server: pid, loadClient: external.pid, ...(postgres ? { postgres } : {}) };

    progress(`api (${driver}): warming up`);
    await external.load('run', CONCURRENCY, { runs: 600 });
    await external.load('runTransform', CONCURRENCY, { runs: 600 });
    await external.load('runPages', CONCURRENCY, { runs: 200 });
    for (let i = 0; i < 100; i++) await run();
    for (let i = 0; i < 100; i++) await runTransform();
    for (let i = 0; i < 50; i++) await runPages();

    let idle = 0;
    if (driver === 'embedded') {
      // Idle after the first runs: the warm-up's workers retire (up to KUBEGLUE_BENCH_SETTLE_MS).
      progress(`api: waiting up to ${SETTLE_MS / 1000} s for idle engine workers to retire`);
      idle = await settledPss(pid);
      emit({
        bench: 'footprint.idle_pss_mib',
        startCommand: 'bin/start',
        value: round(idle, 0),
        processes: (await processTree(pid)).length,
        commands: await treeCommands(pid),
        started: { pssMib: round(started.pssMib, 0), processes: started.processes },
        target: 100,
      });
    }

    if (driver === 'embedded') {
      // The headline is the tool with a small transform (what users run); the bare GET beside it.
      for (const [tool, kind, fn] of [
        [TRANSFORM_TOOL, 'runTransform', runTransform],
        ['bench-get', 'run', run],
      ] as const) {
        progress(
          `api: ${SEQUENTIAL} sequential sync runs of ${tool} vs direct GETs, interleaved, external client then in-process`,
        );
        emit({
          bench: 'api.sync_run_overhead',
          driver,
          tool,
          client: 'external',
          calls: SEQUENTIAL,
          ...overheadFigures('api', await external.sequential(kind, 'direct', SEQUENTIAL)),
          targetOverheadP50Ms: 0.5,
          inProcess: overheadFigures('api', await interleaved(SEQUENTIAL, fn, direct)),
        });
      }

      progress(
        `api: ${SEQUENTIAL / 2} sequential ${PAGES}-page pagination + transform runs vs ${PAGES} direct GETs`,
      );
      emit({
        bench: 'api.pagination_overhead',
        driver,
        client: 'external',
        pages: PAGES,
        calls: SEQUENTIAL / 2,
        ...overheadFigures('api', await external.sequential('runPages', 'directPages', SEQUENTIAL / 2)),
        targetOverheadP50Ms: 1.5,
        inProcess: overheadFigures('api', await interleaved(SEQUENTIAL / 2, runPages, directPages)),
      });

      progress(`api: async dispatch, ${DISPATCH_RUNS} runs (accepted to step running, and to success)`);
      emit({
        bench: 'api.async_dispatch',
        driver,
        ...(await measureDispatch(`${server.url}/v1`, ADMIN_KEY, call, DISPATCH_RUNS)),
      });
    }

    progress(
      `api (${driver}): throughput at concurrency ${CONCURRENCY}, ${THROUGHPUT_MS / 1000} s per phase`,
    );
    // The pool's idle workers retired during the sequential phases: start them again, or the first
    // phase counts a worker's start (~0.3 s of CPU) in its CPU per run.
    await external.load('runTransform', CONCURRENCY, { runs: 600 });
    const peak = samplePeakPss(pid);
    const workersCpu: Record<string, number> = {};
    for (const [tool, kind, fn] of [
      [TRANSFORM_TOOL, 'runTransform', runTransform],
      ['bench-get', 'run', run],
    ] as const) {
      const figure = await throughputFigure(external, roots, kind, fn, direct);
      workersCpu[tool] = figure.cpuUsPerRun.workers ?? 0;
      emit({
        bench: 'api.sync_run_throughput',
        driver,
        tool,
        ...figure,
        serverPeakRssMb: round(await server.peakRssMb(), 0),
        targetRatio: 0.3,
        targetCpuUsPerRun: 600,
      });
    }
    // What the small transform adds to a run in the engine workers: the same GET without it, same run.
    emit({
      bench: 'api.small_transform_cpu',
      driver,
      source: TRANSFORM_SOURCE,
      workersCpuUsPerRun: round((workersCpu[TRANSFORM_TOOL] ?? 0) - (workersCpu['bench-get'] ?? 0), 0),
      withTransform: workersCpu[TRANSFORM_TOOL],
      without: workersCpu['bench-get'],
      target: 100,
    });
    if (driver === 'embedded') {
      progress(`api: ${PAGES}-page pagination + transform at concurrency ${CONCURRENCY}`);
      emit({
        bench: 'api.pagination_throughput',
        driver,
        ...(await throughputFigure(external, roots, 'runPages', runPages, directPages)),
        targetRatio: 0.4,
      });
      const load = await peak.stop();
      emit({
        bench: 'footprint.load_pss_mib',
        startCommand: 'bin/start',
        value: round(load, 0),
        target: 300,
      });
      progress(`api: waiting up to ${SETTLE_MS / 1000} s for idle engine workers to retire`);
      const after = await settledPss(pid);
      emit({
        bench: 'footprint.after_load_pss_mib',
        startCommand: 'bin/start',
        value: round(after, 0),
        processes: (await processTree(pid)).length,
        idle: round(idle, 0),
        target: 120,
      });
    } else {
      await peak.stop();
    }
  } finally {
    await external?.stop();
    await agent.close();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * footprint.* (PSS of the tree the README's start command runs: idle, under load, after it),
 * api.sync_run_overhead, api.pagination_overhead, api.async_dispatch, api.sync_run_throughput (embedded store
 * and Postgres), api.pagination_throughput. The figures are the external load generator's, against direct
 * calls it makes in the same run; the in-process client's are beside them (`inProcess`).
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
}

if (import.meta.main) await benchApi();
