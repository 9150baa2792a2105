import { loadSettings } from '../config/config.ts';
import { createBenchTools, startBenchClient, startBenchServer } from './api.ts';
import { measureCpu } from './cpu.ts';
import { treePss } from './pss.ts';
import { emit, progress, round } from './stats.ts';

/** Runs in the soak (KUBEGLUE_BENCH_SOAK_RUNS); the figure is for 200 000. */
const RUNS = loadSettings('bench').bench.soakRuns;
const CONCURRENCY = 32;

/**
 * soak.pss_growth_pct: sync runs of the one-step tool at concurrency 32 from the external load generator
 * against the embedded server (the node process the README's start command leaves); the process tree's PSS at
 * the end against its value after the first 10 000 runs (half the runs when fewer), as issue 10 states it (a
 * leak shows as growth). Lost runs: answered `success` to the client but not stored as `success`.
 */
export async function benchSoak(): Promise<void> {
  const { target, server, call, stop } = await startBenchServer('soak');
  const external = await startBenchClient(server.url, target.url);
  const pid = server.child.pid as number;
  try {
    await createBenchTools(call, target.url);
    const early = Math.max(1, Math.min(10_000, Math.floor(RUNS / 2)));
    let earlyPss = { pssMib: 0, processes: 0 };
    let earlyTaken: Promise<void> = Promise.resolve();
    progress(`soak: ${RUNS} sync runs at concurrency ${CONCURRENCY} from the external client`);
    const phase = await measureCpu({ server: pid, loadClient: external.pid }, () =>
      external.load(
        'run',
        CONCURRENCY,
        { runs: RUNS, progressEvery: 10_000, markAt: early },
        (done, mark) => {
          if (mark) {
            earlyTaken = treePss(pid).then((pss) => {
              earlyPss = pss;
            });
          }
          if (done % 10_000 === 0) progress(`soak: ${done} runs`);
        },
      ),
    );
    await earlyTaken;
    const end = await treePss(pid);
    const total = async (query: string) =>
      Number((await call('GET', `/runs?toolId=bench-get&limit=1${query}`)).total);
    const storedRuns = await total('');
    const storedSuccess = await total('&status=success');
    emit({
      bench: 'soak.pss_growth_pct',
      client: 'external',
      runs: RUNS,
      concurrency: CONCURRENCY,
      runsPerSec: round(phase.completed / phase.seconds, 0),
      cpuUsPerRun: phase.cpuUsPerRun,
      measuredAfterRuns: early,
      pssAfterFirstMib: round(earlyPss.pssMib, 0),
      processesAfterFirst: earlyPss.processes,
      pssAtEndMib: round(end.pssMib, 0),
      processesAtEnd: end.processes,
      value: round(((end.pssMib - earlyPss.pssMib) / earlyPss.pssMib) * 100, 1),
      acceptedRuns: phase.completed,
      failedRuns: phase.failed,
      ...(phase.firstError ? { firstError: phase.firstError } : {}),
      storedRuns,
      storedSuccessRuns: storedSuccess,
      lostRuns: phase.completed - storedSuccess,
      target: 10,
      targetLostRuns: 0,
    });
  } finally {
    await external.stop();
    await stop();
  }
}

if (import.meta.main) await benchSoak();
