/**
 * CPU-µs per run of the embedded server and its engine workers (and of this process: load generator +
 * target), for the one-step tool and the 5-page pagination + transform tool at concurrency 32.
 * CPU time, unlike wall time, barely moves when other work shares the cores, so it is what to compare
 * between two versions. `npx node --no-node-snapshot bench/cpu-probe.ts [runs]`; with
 * KUBEGLUE_BENCH_PROFILE_DIR set, the server and workers write V8 CPU profiles (.cpuprofile) there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../config/config.ts';
import { client, createBenchTools, startServer, startTarget } from './api.ts';
import { cpuPerRun } from './cpu.ts';
import { emit, progress } from './stats.ts';

const RUNS = Number(process.argv[2] ?? 6_000);
/** Which tools to load: get, pages, or both (default). */
const ONLY = process.argv[3] ?? 'both';
const CONCURRENCY = 32;

async function loop(fn: () => Promise<unknown>, runs: number): Promise<number> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < runs) await fn();
    }),
  );
  return runs;
}

const { profileDir } = loadSettings('bench').bench;
const target = await startTarget();
const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-cpu-'));
const server = await startServer({
  KUBEGLUE_DATA_DIR: dataDir,
  ...(profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
});
const { agent, call } = client(`${server.url}/v1`);
try {
  const { run, runPages } = await createBenchTools(call, target.url);
  progress('cpu: warming up');
  await loop(run, 1_000);
  await loop(runPages, 300);
  const pid = server.child.pid as number;
  for (const [tool, fn, runs] of [
    ['bench-get', run, RUNS],
    ['bench-pages', runPages, Math.round(RUNS / 3)],
  ] as const) {
    if (ONLY !== 'both' && `bench-${ONLY}` !== tool) continue;
    progress(`cpu: ${runs} runs of ${tool} at concurrency ${CONCURRENCY}`);
    const started = performance.now();
    const cpu = await cpuPerRun(pid, () => loop(fn, runs));
    const seconds = (performance.now() - started) / 1000;
    emit({
      bench: 'api.cpu_per_run',
      tool,
      concurrency: CONCURRENCY,
      ...cpu,
      runsPerSec: Math.round(runs / seconds),
    });
  }
} finally {
  await agent.close();
  await server.stop();
  await target.stop();
  await rm(dataDir, { recursive: true, force: true });
}
