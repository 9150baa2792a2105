/**
 * Stopping the server with SIGTERM to its whole process group (Ctrl-C in a terminal, `kill -- -pid`,
 * process supervisors): the engine workers get the signal too. The server must still exit cleanly, every
 * time, without an unhandled EPIPE from the worker pool writing to a worker that is gone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defaultPoolSettings } from '../../../config/config.ts';
import { WorkerPool } from '../../../engine/worker/pool.ts';
import { KUBEGLUE_BIN } from '../../support/cli.ts';
import { testServerEnv } from '../../support/embedded.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { runOrder } from '../../support/run-order.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const ROUNDS = 20;

describe('SIGTERM to the whole process group', () => {
  let database: TestDatabase;
  let dataDir: string;

  beforeAll(async () => {
    // The Postgres store: the server starts in about two seconds, so 20 rounds stay short.
    database = await createTestDatabase(inject('databaseUrl'));
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-sigterm-'));
  });
  afterAll(async () => {
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Starts `kubeglue embedded` in its own process group; resolves once it is ready. */
  async function startServer(): Promise<{ child: ChildProcess; output: () => string }> {
    const child = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, 'embedded'], {
      cwd: REPO,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '',
        ...testServerEnv(dataDir, {
          KUBEGLUE_HOST: '127.0.0.1',
          KUBEGLUE_DATABASE_URL: database.url,
          KUBEGLUE_WORKERS: '2',
        }),
      },
    });
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
      const check = () => {
        if (output.includes('ready on')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before it was ready:\n${output}`));
      });
    });
    return { child, output: () => output };
  }

  async function round(number: number): Promise<void> {
    const { child, output } = await startServer();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    process.kill(-(child.pid as number), 'SIGTERM');
    const { code, signal } = await exited;
    const where = `round ${number}:\n${output()}`;
    expect(output(), where).not.toMatch(/EPIPE|Unhandled|ERR_IPC|shutdown failed/);
    expect({ code, signal }, where).toEqual({ code: 0, signal: null });
    expect(output(), where).toContain('"role":"embedded","msg":"stopped"');
  }

  // One test per round, each with its own time: a server start takes 2 s on a quiet machine and 25 s at
  // load 25, so a budget for all 20 together failed on a loaded machine with every round clean.
  it.each(Array.from({ length: ROUNDS }, (_, index) => index + 1))(
    `exits cleanly: round %i of ${ROUNDS}`,
    round,
    90_000,
  );
});

describe('the worker pool closing while its workers die', () => {
  let pool: WorkerPool | undefined;
  afterAll(async () => {
    await pool?.close();
  });

  it('neither throws nor emits an unhandled error when a worker is gone before close()', async () => {
    const unhandled: unknown[] = [];
    const onError = (error: unknown) => unhandled.push(error);
    process.on('uncaughtException', onError);
    try {
      for (let round = 0; round < 3; round++) {
        pool = new WorkerPool({
          ...defaultPoolSettings(),
          workers: 2,
          sandboxMemoryMb: 64,
          workerHeapMb: 256,
        });
        await pool.start();
        // Both workers die at once, as with a signal to the process group, and close() runs before this
        // process has noticed (its event loop is held until they are surely gone).
        for (const pid of pool.workerPids()) if (pid) process.kill(pid, 'SIGKILL');
        const until = Date.now() + 150;
        while (Date.now() < until) {
          // busy: the 'exit' and 'disconnect' events wait
        }
        await pool.close();
        // A run asked of a closed pool is refused, not sent to a dead worker.
        await expect(
          pool.run(
            runOrder({ steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }] }),
          ),
        ).rejects.toThrow('shutting down');
        pool = undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('uncaughtException', onError);
    }
  });

  it('fails the runs of a worker killed mid-run and replaces the worker', async () => {
    pool = new WorkerPool({ ...defaultPoolSettings(), workers: 1, sandboxMemoryMb: 64, workerHeapMb: 256 });
    await pool.start();
    const [pid] = pool.workerPids();
    const running = pool.run(
      runOrder({
        steps: [
          {
            id: 'a',
            config: {
              type: 'transform',
              transformCode: '() => { const t = Date.now(); while (Date.now() - t < 2000) {} return 1 }',
            },
          },
        ],
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(pid as number, 'SIGKILL');
    const result = await running;
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/killed by SIGKILL/);
  });
});
