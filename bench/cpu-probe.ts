/**
 * CPU-µs per run of the whole tree that serves it (the embedded server and its engine workers; with
 * KUBEGLUE_DATABASE_URL, the server on that Postgres and the Postgres processes when they run on this
 * machine), for the one-step tool, the same with a one-field outputTransform, and the 5-page pagination + transform tool at concurrency 32 from the
 * external load generator (whose CPU, and this process's — the target — are printed beside the total).
 * CPU time, unlike wall time, barely moves when other work shares the cores, so it is what to compare
 * between two versions. `npx node --no-node-snapshot bench/cpu-probe.ts [runs] [get|transform|pages|all]`; with
 * KUBEGLUE_BENCH_PROFILE_DIR set, the server and workers write V8 CPU profiles (.cpuprofile) there.
 */

import { loadSettings, SETTINGS } from '../config/config.ts';
import { createBenchTools, startBenchClient, startBenchServer } from './api.ts';
import { measureCpu, postmasterPid } from './cpu.ts';
import { emit, progress, round } from './stats.ts';

const RUNS = Number(process.argv[2] ?? 6_000);
/** Which tools to load: get, transform (the GET with a one-field outputTransform), pages, or all (default). */
const ONLY = process.argv[3] ?? 'all';
const CONCURRENCY = 32;

const { profileDir } = loadSettings('bench').bench;
const databaseUrl = process.env[SETTINGS.tree.databaseUrl.name];
const { target, server, call, stop } = await startBenchServer(
  'cpu',
  profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {},
);
const external = await startBenchClient(server.url, target.url);
try {
  await createBenchTools(call, target.url);
  progress('cpu: warming up');
  await external.load('run', CONCURRENCY, { runs: 1_000 });
  await external.load('runTransform', CONCURRENCY, { runs: 1_000 });
  await external.load('runPages', CONCURRENCY, { runs: 300 });
  const postgres = databaseUrl ? await postmasterPid(databaseUrl) : undefined;
  const roots = {
    server: server.child.pid as number,
    loadClient: external.pid,
    ...(postgres ? { postgres } : {}),
  };
  for (const [tool, kind, runs] of [
    ['bench-get', 'run', RUNS],
    ['bench-transform', 'runTransform', RUNS],
    ['bench-pages', 'runPages', Math.round(RUNS / 3)],
  ] as const) {
    if (ONLY !== 'all' && ONLY !== 'both' && `bench-${ONLY}` !== tool) continue;
    progress(`cpu: ${runs} runs of ${tool} at concurrency ${CONCURRENCY}`);
    const phase = await measureCpu(roots, () => external.load(kind, CONCURRENCY, { runs }));
    emit({
      bench: 'api.cpu_per_run',
      tool,
      driver: databaseUrl ? 'pg' : 'embedded',
      client: 'external',
      concurrency: CONCURRENCY,
      runs: phase.completed,
      failedRuns: phase.failed,
      runsPerSec: round(phase.completed / phase.seconds, 0),
      cpuUsPerRun: phase.cpuUsPerRun,
      targetCpuUsPerRun: 1000,
    });
  }
} finally {
  await external.stop();
  await stop();
}
