/**
 * Issue 19, item 6: after isolated-vm's "Catastrophic out-of-memory … Script failed to terminate" a
 * worker outlived the API and ignored SIGTERM. Workers whose main thread is stuck (made so by
 * test/support/stuck-worker.ts) must still be gone after the pool closes, and after the API process
 * is SIGKILLed.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPoolSettings } from '../../../config/config.ts';
import { WorkerPool } from '../../../engine/worker/pool.ts';
import { startWorkerPool } from '../../support/engine.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { isAlive } from '../../support/os.ts';
import { runOrder } from '../../support/run-order.ts';
import { stuckWorkerImport } from '../../support/stuck-worker.ts';

const POOL_HOST = new URL('../../support/pool-host.ts', import.meta.url).pathname;
/**
 * Grows a dictionary-mode object without bound: under a 32 MB limit isolated-vm reports "Catastrophic
 * out-of-memory" and loses control of the isolate, whose thread stays stuck. The process's normal
 * exit then hangs for good (isolated-vm joins its threads): the state issue 19 found a worker in.
 */
const RUNAWAY = '() => { const o = {}; for (let i = 0; ; i++) o["k" + i] = i; }';

let markers: string;
let target: HttpTarget;
let savedNodeOptions: string | undefined;
/** Processes to SIGKILL at the end if a test left them behind. */
const leftovers = new Set<number>();
let release: () => void = () => {};

beforeAll(async () => {
  markers = await mkdtemp(join(tmpdir(), 'kubeglue-stuck-'));
  target = await startHttpTarget();
  // Answers once the test releases it: the run holds its worker busy until then.
  target.route(
    'GET',
    '/hold',
    () =>
      new Promise((resolve) => {
        release = () => resolve({ body: { released: true } });
      }),
  );
  target.route('GET', '/quick', { body: { ok: true } });
  // Never answers.
  target.route('GET', '/hang', () => undefined);
  savedNodeOptions = process.env.NODE_OPTIONS;
  // Workers inherit NODE_* variables (engine/worker/env.ts): every worker forked from here loads the hook.
  process.env.NODE_OPTIONS = `${savedNodeOptions ?? ''} --import=${stuckWorkerImport(markers)}`.trim();
});

afterAll(async () => {
  if (savedNodeOptions === undefined) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = savedNodeOptions;
  for (const pid of leftovers) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await target?.stop();
  await rm(markers, { recursive: true, force: true });
});

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  for (const start = Date.now(); !check(); await sleep(25)) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting until ${what}`);
  }
}

const marked = (pid: number, what: 'ready' | 'blocked') => existsSync(join(markers, `${pid}.${what}`));

/** Blocks a ready worker's main thread for good; resolves once it is blocked. */
async function block(pid: number): Promise<void> {
  leftovers.add(pid);
  process.kill(pid, 'SIGUSR2');
  await until(`worker ${pid} is blocked`, () => marked(pid, 'blocked'));
}

/** test/support/pool-host.ts in a process of its own: the API process a test can SIGKILL. */
function startPoolHost(transformCode?: string): {
  child: ChildProcess;
  line<T>(index: number): Promise<T>;
} {
  const args = ['--no-node-snapshot', POOL_HOST, ...(transformCode !== undefined ? [transformCode] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  if (child.pid !== undefined) leftovers.add(child.pid);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return {
    child,
    async line<T>(index: number): Promise<T> {
      await until(`the pool host printed line ${index}`, () => output.split('\n').length > index + 1, 60_000);
      const line = output.split('\n')[index] as string;
      const parsed = JSON.parse(line) as T & { workerPid?: number };
      if (parsed.workerPid !== undefined) leftovers.add(parsed.workerPid);
      return parsed;
    },
  };
}

function get(path: string) {
  return runOrder({ id: 'stop', steps: [{ id: 'get', config: { url: `${target.url}${path}` } }] });
}

describe('stopping workers that do not stop', () => {
  it('fails the run whose transform made the sandbox lose control of an isolate, then replaces that worker', async () => {
    const pool = await startWorkerPool({
      workers: 1,
      sandboxMemoryMb: 32,
      sandboxTimeoutMs: 60_000,
      workerHeapMb: 256,
    });
    try {
      const pid = pool.workerPids()[0] as number;
      leftovers.add(pid);
      const result = await pool.run(
        runOrder({ id: 'oom', steps: [{ id: 't', config: { type: 'transform', transformCode: RUNAWAY } }] }),
      );
      expect(result).toMatchObject({
        status: 'failed',
        error: 'Step t failed: step t transformCode: exceeded the memory limit of 32 MB',
      });
      // The worker (an isolate's thread may stay stuck in it) is stopped; a new one serves the next run.
      await until('the worker that lost an isolate exited', () => !isAlive(pid));
      expect((await pool.run(get('/quick'))).status).toBe('success');
      expect(pool.workerPids()[0]).not.toBe(pid);
    } finally {
      await pool.close();
    }
  }, 90_000);

  it('close() leaves no worker process behind, a stuck retiring one whose slot was reused included', async () => {
    const pool = await startWorkerPool({ workers: 2, workerIdleMs: 300, workerHeapMb: 256 });
    const first = pool.workerPids()[0] as number;
    leftovers.add(first);
    // A run arriving while worker 0 is busy starts worker 1 (and still goes to worker 0, the ready
    // one); worker 1 then sits idle and is retired after 300 ms.
    const held = pool.run(get('/hold'));
    expect((await pool.run(get('/quick'))).status).toBe('success');
    await until('a second worker started', () => pool.workerPids()[1] !== undefined);
    const second = pool.workerPids()[1] as number;
    await until('the second worker is ready', () => marked(second, 'ready'));
    await block(second);
    await until('the stuck worker is retiring', () => pool.workerCount() === 1);
    // Worker 0 still busy: a new worker takes the retiring one's slot.
    const next = pool.run(get('/quick'));
    await until('a replacement started', () => {
      const pid = pool.workerPids()[1];
      return pid !== undefined && pid !== second;
    });
    const third = pool.workerPids()[1] as number;
    leftovers.add(third);
    release();
    expect((await held).status).toBe('success');
    expect((await next).status).toBe('success');
    expect(isAlive(second)).toBe(true);

    await pool.close();
    expect({ first: isAlive(first), stuck: isAlive(second), replacement: isAlive(third) }).toEqual({
      first: false,
      stuck: false,
      replacement: false,
    });
  }, 60_000);

  it('close() ends a worker whose main thread is stuck', async () => {
    const pool = new WorkerPool({ ...defaultPoolSettings(), workers: 1, workerHeapMb: 256 });
    await pool.start();
    const pid = pool.workerPids()[0] as number;
    await until('the worker is ready', () => marked(pid, 'ready'));
    await block(pid);
    await pool.close();
    expect(isAlive(pid)).toBe(false);
  }, 60_000);

  it('ends a worker whose main thread is stuck while its API is alive: its run fails instead of hanging', async () => {
    const pool = new WorkerPool({ ...defaultPoolSettings(), workers: 1, workerHeapMb: 256 });
    try {
      await pool.start();
      const pid = pool.workerPids()[0] as number;
      await until('the worker is ready', () => marked(pid, 'ready'));
      const hanging = pool.run(get('/hang'));
      await until('the run reached the target', () => target.count('/hang') > 0);
      await block(pid);
      const result = await hanging;
      expect(result.status).toBe('failed');
      expect(result.error).toMatch(/^The worker process executing this run was killed by SIGKILL/);
      expect(isAlive(pid)).toBe(false);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('a worker whose API process was SIGKILLed exits even with its main thread stuck', async () => {
    const host = startPoolHost();
    const { workerPid } = await host.line<{ workerPid: number }>(0);
    await until('the worker is ready', () => marked(workerPid, 'ready'));
    await block(workerPid);

    host.child.kill('SIGKILL');
    await until('the orphaned worker exited', () => !isAlive(workerPid), 30_000);
    expect(isAlive(workerPid)).toBe(false);
  }, 60_000);

  it('a worker whose sandbox lost control of an isolate exits once its API process was SIGKILLed', async () => {
    const host = startPoolHost(RUNAWAY);
    const { workerPid } = await host.line<{ workerPid: number }>(0);
    expect(await host.line(1)).toEqual({
      status: 'failed',
      error: 'Step t failed: step t transformCode: exceeded the memory limit of 32 MB',
    });
    host.child.kill('SIGKILL');
    await until('the orphaned worker exited', () => !isAlive(workerPid), 30_000);
    expect(isAlive(workerPid)).toBe(false);
  }, 90_000);
});
