/**
 * `npm run bench -- runner`: runner.process_start, what a runner Pod's process costs before its first step
 * (issue 34: ≤ 300 ms), without Kubernetes: `kubeglue runner` from dist/ as the image starts it (its
 * ENTRYPOINT's node flags and its node ENV, read from the Dockerfile) against an internal API on a real
 * store, for a one-step HTTP tool, one process at a time. Per process: spawn → the step's request at the
 * target (`firstStep…`), spawn → exit (`exit…`), and the CPU it used until its exit (user + system, from
 * bash's `times`), which moves far less than wall time on a shared machine.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SETTINGS } from '../config/config.ts';
import { startHttpTarget } from '../test/support/http-target.ts';
import { createInternalApi } from '../test/support/internal-api.ts';
import { openTestStore } from '../test/support/store.ts';
import { emit, percentile, progress, round } from './stats.ts';

const REPO = join(import.meta.dirname, '..');
const SAMPLES = 20;

/** The image's `node <flags> /app/dist/bin/kubeglue.js` and its NODE_* environment, from the Dockerfile. */
async function imageCommand(): Promise<{ args: string[]; env: Record<string, string> }> {
  const dockerfile = await readFile(join(REPO, 'Dockerfile'), 'utf8');
  const entrypoint = JSON.parse(dockerfile.match(/^ENTRYPOINT (\[.*\])$/m)?.[1] ?? 'null') as string[] | null;
  if (entrypoint?.[0] !== 'node') throw new Error('Dockerfile: no ENTRYPOINT ["node", …]');
  const envInstruction = dockerfile.match(/^ENV ((?:.*\\\n)*.*)$/m)?.[1] ?? '';
  const env = Object.fromEntries(
    [...envInstruction.matchAll(/\b(NODE_[A-Z_]+)=(\S+)/g)].map((m) => [m[1] as string, m[2] as string]),
  );
  return { args: entrypoint.slice(1).map((arg) => arg.replace(/^\/app\//, `${REPO}/`)), env };
}

/** Children's user + system CPU from bash's `times` (its second line), in ms. */
function childCpuMs(times: string): number {
  const line = times.trim().split('\n').at(-1) ?? '';
  return [...line.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
    (sum, m) => sum + (Number(m[1]) * 60 + Number(m[2])) * 1000,
    0,
  );
}

export async function benchRunner(): Promise<void> {
  const { args, env: imageEnv } = await imageCommand();
  const { store, close } = await openTestStore('sqlite');
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-runner-'));
  const target = await startHttpTarget();
  let arrived = 0;
  target.route('GET', '/items', () => {
    arrived ||= performance.now();
    return { body: [{ id: 1 }] };
  });
  const api = createInternalApi(store);
  await api.listen();
  const firstStep: number[] = [];
  const exit: number[] = [];
  const cpu: number[] = [];
  let failed = 0;
  try {
    for (let i = 0; i < SAMPLES + 1; i++) {
      const runId = `bench-runner-${i}`;
      const token = await api.startRun(runId, {
        id: 'items',
        steps: [{ id: 'fetch', config: { url: `${target.url}/items` } }],
      });
      arrived = 0;
      const started = performance.now();
      const { code, times } = await new Promise<{ code: number | null; times: string }>((resolve, reject) => {
        const child = spawn(
          'bash',
          [
            '-c',
            '"$@" >/dev/null 2>&1; code=$?; times; exit $code',
            'runner',
            process.execPath,
            ...args,
            'runner',
          ],
          {
            env: {
              PATH: process.env.PATH ?? '',
              HOME: dir,
              ...imageEnv,
              [SETTINGS.tree.internalUrl.name]: api.url,
              [SETTINGS.tree.runId.name]: runId,
              [SETTINGS.tree.runToken.name]: token,
              [SETTINGS.tree.runAttempt.name]: '1',
              [SETTINGS.tree.terminationMessagePath.name]: join(dir, `${runId}.termination`),
              // The target is on loopback, which a runner Pod refuses unless the deployment allows it.
              KUBEGLUE_EGRESS_ALLOW: '127.0.0.1',
            },
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        );
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
        });
        child.once('error', reject);
        child.once('close', (exitCode) => resolve({ code: exitCode, times: out }));
      });
      const ended = performance.now();
      if (code !== 0 || arrived === 0) failed++;
      if (i === 0) continue; // the first warms the page cache
      firstStep.push(arrived - started);
      exit.push(ended - started);
      cpu.push(childCpuMs(times));
    }
  } finally {
    await api.close();
    await target.stop();
    await close();
    await rm(dir, { recursive: true, force: true });
  }
  progress(`runner: ${SAMPLES} runner processes, ${failed} failed`);
  emit({
    bench: 'runner.process_start',
    runs: firstStep.length,
    failed,
    firstStepP50Ms: round(percentile(firstStep, 50), 0),
    firstStepP99Ms: round(percentile(firstStep, 99), 0),
    exitP50Ms: round(percentile(exit, 50), 0),
    cpuMsP50: round(percentile(cpu, 50), 0),
    cpuMsMin: round(Math.min(...cpu), 0),
    targetFirstStepMs: 300,
  });
}
