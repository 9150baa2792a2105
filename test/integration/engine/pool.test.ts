import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../../engine/types.ts';
import type { WorkerPool } from '../../../engine/worker/pool.ts';
import { KUBEGLUE_BIN } from '../../support/cli.ts';
import { startWorkerPool, useWorkerPool } from '../../support/engine.ts';
import { useTempDir } from '../../support/fixture.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { EXAMPLE_TRACE_ID, runOrder } from '../../support/run-order.ts';

const target = useHttpTarget();
const pool = useWorkerPool({ workers: 2, sandboxTimeoutMs: 1_000, sandboxMemoryMb: 64, workerHeapMb: 256 });

const transform = (code: string) => ({
  steps: [{ id: 't', config: { type: 'transform' as const, transformCode: code } }],
});

beforeAll(() => {
  target.route('GET', '/hello', { body: { hello: 'world' } });
});

describe('worker pool', () => {
  it('runs a one-step GET tool in a worker process and returns its data', async () => {
    const result = await pool.run(
      runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] }),
    );
    expect(result).toMatchObject({ status: 'success', data: { hello: 'world' } });
  });

  it('answers many runs started at once each with its own result, its events before it', async () => {
    // Runs started in one turn cross to a worker together and their results come back together.
    const runs = Array.from({ length: 24 }, (_, i) => {
      const events: EngineEvent[] = [];
      const done = pool
        .run(runOrder(transform(`() => ({ n: ${i}, text: "line\\nbreak \\u2028 é" })`)), {
          onEvent: (event) => events.push(event),
        })
        .then((result) => ({ result, eventsAtResult: events.length, events }));
      return done;
    });
    for (const [i, { result, eventsAtResult, events }] of (await Promise.all(runs)).entries()) {
      expect(result).toMatchObject({ status: 'success', data: { n: i, text: 'line\nbreak \u2028 é' } });
      expect(eventsAtResult).toBe(events.length);
      expect(events.map((event) => event.type)).toEqual(['step_started', 'step_finished']);
    }
  });

  it('starts an immediate run in its worker while the caller is still busy in the same turn', async () => {
    await pool.run(runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] }));
    const starts: number[] = [];
    const running = pool.run(runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] }), {
      immediate: true,
      onEvent: (event, at) => {
        if (event.type === 'step_started') starts.push(at);
      },
    });
    // The order goes once the worker is known ready (a microtask); then this turn keeps the event loop
    // busy, as a reconcile writing statuses after a launch does.
    await Promise.resolve();
    const busyUntil = Date.now() + 500;
    while (Date.now() < busyUntil) {
      // Busy: a batched order would only leave after this turn.
    }
    const turnEnded = Date.now();
    expect(await running).toMatchObject({ status: 'success' });
    // The worker's clock (same machine): the step started before this turn ended.
    expect(starts).toHaveLength(1);
    expect(starts[0]).toBeLessThan(turnEnded);
  });

  it('sends an order to a ready worker ahead of what its caller queues for the end of the turn next', async () => {
    await pool.run(runOrder(transform('() => 1')));
    const starts: number[] = [];
    const running = pool.run(runOrder(transform('() => 2')), {
      onEvent: (event, at) => {
        if (event.type === 'step_started') starts.push(at);
      },
    });
    // Queued right after run() returned, as a sync run's start record is (runs/execute-sync.ts): the order
    // crosses first, so the worker starts while this callback keeps the event loop busy.
    let busyEnded = Number.POSITIVE_INFINITY;
    setImmediate(() => {
      const busyUntil = Date.now() + 500;
      while (Date.now() < busyUntil) {
        // Busy, as a batch of store writes is.
      }
      busyEnded = Date.now();
    });
    expect(await running).toMatchObject({ status: 'success', data: 2 });
    expect(starts).toHaveLength(1);
    expect(starts[0]).toBeLessThan(busyEnded);
  });

  it('sends a W3C traceparent derived from the run trace id', async () => {
    target.reset();
    await pool.run(runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] }));
    expect(target.requests[0]?.headers.traceparent).toMatch(
      new RegExp(`^00-${EXAMPLE_TRACE_ID}-[0-9a-f]{16}-01$`),
    );
  });

  it('stops while(true){} at the sandbox timeout and the worker keeps serving', async () => {
    const looping = await pool.run(runOrder(transform('() => { while (true) {} }')));
    expect(looping.status).toBe('failed');
    expect(looping.error).toMatch(/Step t failed: .*timed out/i);
    const next = await pool.run(runOrder(transform('() => 42')));
    expect(next).toMatchObject({ status: 'success', data: 42 });
  });

  it('stops a 1 GB allocation at the memory limit without touching this process', async () => {
    // A CPU limit far above what the allocation needs: near the memory limit V8's collections count as
    // CPU time, and on a loaded machine the 1 s limit of the shared pool could stop the script first.
    const roomy = await startWorkerPool({
      workers: 1,
      sandboxTimeoutMs: 60_000,
      sandboxMemoryMb: 64,
      workerHeapMb: 256,
    });
    try {
      const before = process.memoryUsage().rss;
      const bomb = await roomy.run(
        runOrder(
          transform('() => { const a = []; for (;;) a.push("x".repeat(8 * 1024 * 1024) + a.length); }'),
        ),
      );
      expect(bomb.status).toBe('failed');
      expect(bomb.error).toMatch(/memory|worker process/i);
      expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
      const next = await roomy.run(runOrder(transform('() => "still serving"')));
      expect(next).toMatchObject({ status: 'success', data: 'still serving' });
    } finally {
      await roomy.close();
    }
  });

  it('refuses the 256 MB WebAssembly memory of issue 19 with a clear error, and the worker serves on', async () => {
    const pids = pool.workerPids();
    const wasm = await pool.run(
      runOrder(
        transform(
          '() => { const m = new WebAssembly.Memory({ initial: 4096 }); new Uint8Array(m.buffer).fill(1); return m.buffer.byteLength; }',
        ),
      ),
    );
    expect(wasm.status).toBe('failed');
    expect(wasm.error).toContain(
      'WebAssembly is not defined (WebAssembly is not available in the sandbox: its memory would escape the memory limit)',
    );
    const next = await pool.run(runOrder(transform('() => "still serving"')));
    expect(next).toMatchObject({ status: 'success', data: 'still serving' });
    expect(pool.workerPids()).toEqual(pids);
  });

  it('keeps require, process and fetch out of reach of user code', async () => {
    const probe = await pool.run(
      runOrder(transform('() => [typeof require, typeof process, typeof fetch, typeof setTimeout]')),
    );
    expect(probe).toMatchObject({
      status: 'success',
      data: ['undefined', 'undefined', 'undefined', 'undefined'],
    });
  });

  it('fails the runs of a worker that dies and replaces the worker', async () => {
    target.route('GET', '/hang', (_req, _res) => undefined);
    const victimLoad = pool.load();
    const hanging = pool.run(runOrder({ steps: [{ id: 'hang', config: { url: `${target.url}/hang` } }] }));
    await new Promise((r) => setTimeout(r, 100));
    const busy = pool.load().findIndex((n, i) => n > (victimLoad[i] ?? 0));
    const pids = pool.workerPids();
    expect(busy).toBeGreaterThanOrEqual(0);
    process.kill(pids[busy] as number, 'SIGKILL');
    const result = await hanging;
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/worker process .* was killed by SIGKILL/);
    const next = await pool.run(runOrder(transform('() => "replaced"')));
    expect(next).toMatchObject({ status: 'success', data: 'replaced' });
  });

  it('cancels a run mid-pagination: no further requests reach the target', async () => {
    target.route('GET', '/pages', (req) => {
      const page = Number(req.query.find(([k]) => k === 'page')?.[1]);
      return { delayMs: 20, body: Array.from({ length: 10 }, (_, i) => ({ id: page * 10 + i })) };
    });
    target.reset();
    const controller = new AbortController();
    const events: EngineEvent[] = [];
    const run = pool.run(
      runOrder({
        steps: [
          {
            id: 'list',
            config: {
              url: `${target.url}/pages`,
              queryParams: { page: '<<page>>' },
              pagination: { type: 'pageBased', pageSize: '10', maxPages: 1000 },
            },
          },
        ],
      }),
      {
        signal: controller.signal,
        onEvent: (event) => {
          events.push(event);
          if (event.type === 'page_fetched' && event.page === 3) controller.abort();
        },
      },
    );
    const result = await run;
    const countAtEnd = target.count('/pages');
    await new Promise((r) => setTimeout(r, 200));
    expect(result.status).toBe('aborted');
    expect(result.error).toBe('Run was cancelled');
    expect(countAtEnd).toBeLessThanOrEqual(4);
    expect(target.count('/pages')).toBe(countAtEnd);
  });

  it('never shows a credential in the result of a failing step', async () => {
    target.route('GET', '/secret-echo', (req) => ({
      status: 401,
      body: `denied for ${req.headers.authorization} at ${req.path}?${new URLSearchParams(req.query).toString()}`,
    }));
    const result = await pool.run(
      runOrder(
        {
          steps: [
            {
              id: 'call',
              config: {
                url: `${target.url}/secret-echo`,
                systemId: 'crm',
                queryParams: { key: '<<crm_apiKey>>' },
                headers: { Authorization: 'Bearer <<crm_apiKey>>' },
              },
            },
          ],
        },
        // Credentials go only to the system's own origin, so the system lives where the step calls.
        { systems: [{ id: 'crm', url: target.url, credentials: { apiKey: 'sk-live-very-secret-1234' } }] },
      ),
    );
    const everything = JSON.stringify(result);
    expect(result.status).toBe('failed');
    expect(everything).not.toContain('sk-live-very-secret-1234');
    expect(result.error).toContain('<<crm_apiKey>>');
  });
});

describe('worker pool size', () => {
  let lean: WorkerPool;

  beforeAll(async () => {
    lean = await startWorkerPool({
      workers: 3,
      workerIdleMs: 300,
      idleWorkers: 1,
      sandboxMemoryMb: 64,
      workerHeapMb: 256,
    });
  });

  afterAll(async () => {
    await lean?.close();
  });

  const live = () => lean.workerPids().filter((pid) => pid !== undefined).length;

  it('starts with one worker', () => {
    expect(live()).toBe(1);
    expect(lean.workerCount()).toBe(1);
  });

  it('grows under concurrent load to at most its limit, and shrinks back to one when idle', async () => {
    const held: Array<() => void> = [];
    let holding = true;
    target.route('GET', '/lean-hold', (_req, res) => {
      if (holding) held.push(() => res.end('"released"'));
      else res.end('"released"');
      return undefined;
    });
    const hold = { steps: [{ id: 'wait', config: { url: `${target.url}/lean-hold` } }] };
    const runs: Array<Promise<unknown>> = [];
    try {
      // Runs keep arriving while the workers they made start, until each of 3 has some: the pool stops at 3.
      while (live() < 3 || Math.min(...lean.load()) < 1) {
        runs.push(lean.run(runOrder(hold)));
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(live()).toBeLessThanOrEqual(3);
      }
      for (let i = 0; i < 10; i++) runs.push(lean.run(runOrder(hold)));
      expect(live()).toBe(3);
    } finally {
      holding = false;
      for (const release of held) release();
    }
    const results = (await Promise.all(runs)) as Array<{ status: string }>;
    expect(results.every((result) => result.status === 'success')).toBe(true);
    await expect.poll(live, { timeout: 10_000 }).toBe(1);
    const after = await lean.run(runOrder(transform('() => "one worker serves"')));
    expect(after).toMatchObject({ status: 'success', data: 'one worker serves' });
  });

  it('replaces a crashed worker, failing only its runs', async () => {
    const [pid] = lean.workerPids().filter((p) => p !== undefined);
    target.route('GET', '/lean-hang', () => undefined);
    const hanging = lean.run(
      runOrder({ steps: [{ id: 'hang', config: { url: `${target.url}/lean-hang` } }] }),
    );
    await expect.poll(() => target.count('/lean-hang')).toBe(1);
    process.kill(pid as number, 'SIGKILL');
    const result = await hanging;
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.error).toMatch(/worker process .* was killed by SIGKILL/);
    await expect.poll(live).toBe(1);
    expect(lean.workerPids()).not.toContain(pid);
    const next = await lean.run(runOrder(transform('() => "replaced"')));
    expect(next).toMatchObject({ status: 'success', data: 'replaced' });
  });
});

describe('a pool that keeps no idle worker (KUBEGLUE_IDLE_WORKERS=0, the embedded default)', () => {
  const isAlive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('lets its last worker exit once idle, and starts one again for the next run', async () => {
    const idle = await startWorkerPool({ workers: 2, workerIdleMs: 300, idleWorkers: 0, workerHeapMb: 256 });
    try {
      const [first] = idle.workerPids().filter((pid) => pid !== undefined) as number[];
      expect(idle.workerCount()).toBe(1);
      const get = runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] });
      expect(await idle.run(get)).toMatchObject({ status: 'success', data: { hello: 'world' } });
      await expect.poll(() => idle.workerCount(), { timeout: 10_000 }).toBe(0);
      await expect.poll(() => isAlive(first as number), { timeout: 10_000 }).toBe(false);
      expect(idle.workerPids().every((pid) => pid === undefined)).toBe(true);

      const next = await idle.run(runOrder(transform('(s) => ({ again: true })')));
      expect(next).toMatchObject({ status: 'success', data: { again: true } });
      const [second] = idle.workerPids().filter((pid) => pid !== undefined) as number[];
      expect(second).toBeDefined();
      expect(second).not.toBe(first);
    } finally {
      await idle.close();
    }
  }, 30_000);
});

describe('runner main (single run, the Pod entrypoint)', () => {
  const dir = useTempDir('kubeglue-runner-');

  /** `kubeglue runner --order file`: its exit code and what it printed. */
  function runner(
    file: string,
    env: NodeJS.ProcessEnv = process.env,
  ): Promise<{ code: number; stdout: string }> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--no-node-snapshot', KUBEGLUE_BIN, 'runner', '--order', file],
        { env },
        (error, stdout) => resolve({ code: error ? (error.code as number) : 0, stdout }),
      );
    });
  }

  it('executes one run order and writes the result as JSON', async () => {
    const file = join(dir.path, 'order.json');
    await writeFile(
      file,
      JSON.stringify(runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] })),
    );
    // A runner refuses private addresses unless told otherwise; the target is on 127.0.0.1.
    const { code, stdout } = await runner(file, { ...process.env, KUBEGLUE_EGRESS_PRIVATE: 'allow' });
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ status: 'success', data: { hello: 'world' } });
  });

  it('exits 2 for a failed run and 1 for an invalid order', async () => {
    const failing = join(dir.path, 'failing.json');
    await writeFile(failing, JSON.stringify(runOrder(transform('() => { throw new Error("no") }'))));
    const invalid = join(dir.path, 'invalid.json');
    await writeFile(invalid, JSON.stringify({ runId: 'x' }));
    expect((await runner(failing)).code).toBe(2);
    expect((await runner(invalid)).code).toBe(1);
  });
});
