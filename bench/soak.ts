import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../config/config.ts';
import { client, startServer, startTarget } from './api.ts';
import { treePss } from './pss.ts';
import { emit, progress, round } from './stats.ts';

/** Runs in the soak (KUBEGLUE_BENCH_SOAK_RUNS); the figure is for 200 000. */
const RUNS = loadSettings('bench').bench.soakRuns;
const CONCURRENCY = 32;

/**
 * soak.pss_growth_pct: sync runs of the one-step tool at concurrency 32 against the embedded server;
 * the process tree's PSS at the end against its value after the first 10 000 runs (half the runs when
 * fewer), as issue 10 states it (a leak shows as growth), and every run stored with its outcome.
 */
export async function benchSoak(): Promise<void> {
  const target = await startTarget();
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-soak-'));
  const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir });
  const { agent, call } = client(`${server.url}/v1`);
  const pid = server.child.pid as number;
  try {
    await call('POST', '/tools', { id: 'soak', steps: [{ id: 'get', config: { url: `${target.url}/ok` } }] });
    const early = Math.max(1, Math.min(10_000, Math.floor(RUNS / 2)));
    let started = 0;
    let failed = 0;
    let earlyPss = 0;
    let earlyProcesses = 0;
    const began = performance.now();
    progress(`soak: ${RUNS} sync runs at concurrency ${CONCURRENCY}`);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (started < RUNS) {
          const n = ++started;
          const result = await call('POST', '/tools/soak/run', {});
          if (result.status !== 'success') failed++;
          if (n === early) ({ pssMib: earlyPss, processes: earlyProcesses } = await treePss(pid));
          if (n % 10_000 === 0) progress(`soak: ${n} runs`);
        }
      }),
    );
    const seconds = (performance.now() - began) / 1000;
    const { pssMib: endPss, processes: endProcesses } = await treePss(pid);
    const stored = (await call('GET', '/runs?toolId=soak&limit=1')) as { total?: number };
    emit({
      bench: 'soak.pss_growth_pct',
      runs: RUNS,
      concurrency: CONCURRENCY,
      runsPerSec: round(RUNS / seconds, 0),
      measuredAfterRuns: early,
      pssAfterFirstMib: round(earlyPss, 0),
      processesAfterFirst: earlyProcesses,
      pssAtEndMib: round(endPss, 0),
      processesAtEnd: endProcesses,
      value: round(((endPss - earlyPss) / earlyPss) * 100, 1),
      failedRuns: failed,
      storedRuns: stored.total ?? null,
      target: 10,
    });
  } finally {
    await agent.close();
    await server.stop();
    await target.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) await benchSoak();
