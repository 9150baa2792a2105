/**
 * The external load generator: a process of its own (not the server's, not the bench's event loop), with
 * keep-alive connections, as a user's client is. The bench starts it with `startLoadClient` and sends it
 * jobs over IPC; it answers each with its samples or counts. It measures the direct call the same way, so
 * a figure and its direct call come from the same client in the same run.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Pool } from 'undici';
import { z } from 'zod';

/**
 * What one operation is: a sync run of the one-step tool, of the same GET with a one-field outputTransform
 * (`runTransform`) or of the 5-page tool, or the same calls made directly.
 */
const Kind = z.enum(['run', 'runTransform', 'runPages', 'direct', 'directPages']);
export type LoadKind = z.infer<typeof Kind>;

const Setup = z.strictObject({
  apiUrl: z.string().url(),
  targetUrl: z.string().url(),
  key: z.string(),
  /** Tool ids: the one-step tool, the one-step tool with a small outputTransform, and the 5-page tool. */
  tool: z.string(),
  transformTool: z.string(),
  pagesTool: z.string(),
  /** Items the 5-page tool returns and pages of the direct pagination. */
  items: z.number().int(),
  pageSize: z.number().int(),
  connections: z.number().int().positive(),
});
export type LoadSetup = z.infer<typeof Setup>;

const Job = z.discriminatedUnion('op', [
  /** `count` pairs: one `via` then one `direct`, timed in turn. */
  z.strictObject({ op: z.literal('sequential'), via: Kind, direct: Kind, count: z.number().int() }),
  /** `concurrency` loops of `kind` for `ms`, or until `runs` operations started. */
  z.strictObject({
    op: z.literal('load'),
    kind: Kind,
    concurrency: z.number().int().positive(),
    ms: z.number().optional(),
    runs: z.number().int().optional(),
    /** Report progress every this many completed operations (and once at `markAt`). */
    progressEvery: z.number().int().optional(),
    markAt: z.number().int().optional(),
  }),
  z.strictObject({ op: z.literal('stop') }),
]);
export type LoadJob = z.infer<typeof Job>;

export interface SequentialResult {
  via: number[];
  direct: number[];
}
export interface LoadResult {
  /** Operations answered as expected (a run: 200 and `success`). */
  completed: number;
  /** Operations answered otherwise or not at all. */
  failed: number;
  /** The first failure, to tell why. */
  firstError?: string;
  seconds: number;
}

type Message =
  | { type: 'ready' }
  | { type: 'result'; result: SequentialResult | LoadResult }
  | { type: 'progress'; completed: number; mark: boolean }
  | { type: 'error'; message: string };

function operations(setup: LoadSetup) {
  const api = new Pool(setup.apiUrl, { connections: setup.connections, keepAliveTimeout: 60_000 });
  const target = new Pool(setup.targetUrl, { connections: setup.connections, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${setup.key}`, 'content-type': 'application/json' };
  const runTool = async (tool: string): Promise<Record<string, unknown>> => {
    const response = await api.request({
      method: 'POST',
      path: `/v1/tools/${tool}/run`,
      headers,
      body: '{}',
    });
    const json = (await response.body.json()) as Record<string, unknown>;
    if (response.statusCode !== 200 || json.status !== 'success') {
      throw new Error(`run of ${tool}: ${response.statusCode} ${JSON.stringify(json).slice(0, 300)}`);
    }
    return json;
  };
  const get = async (path: string) => {
    const response = await target.request({ method: 'GET', path });
    await response.body.json();
  };
  const pages = Math.ceil(setup.items / setup.pageSize);
  const ops: Record<LoadKind, () => Promise<void>> = {
    run: async () => {
      await runTool(setup.tool);
    },
    runTransform: async () => {
      const result = await runTool(setup.transformTool);
      if (result.data !== true) throw new Error(`transform run: ${JSON.stringify(result).slice(0, 300)}`);
    },
    runPages: async () => {
      const result = await runTool(setup.pagesTool);
      if (!Array.isArray(result.data) || result.data.length !== setup.items) {
        throw new Error(`pagination run: ${JSON.stringify(result).slice(0, 300)}`);
      }
    },
    direct: () => get('/ok'),
    directPages: async () => {
      for (let page = 0; page < pages; page++) {
        await get(`/items?offset=${page * setup.pageSize}&limit=${setup.pageSize}`);
      }
    },
  };
  return { ops, close: () => Promise.all([api.close(), target.close()]) };
}

async function serve(): Promise<void> {
  const send = (message: Message) => process.send?.(message);
  const setup = Setup.parse(JSON.parse(process.argv[2] ?? '{}'));
  const { ops, close } = operations(setup);
  process.on('message', async (raw) => {
    const parsed = Job.safeParse(raw);
    if (!parsed.success) return send({ type: 'error', message: parsed.error.message });
    const job = parsed.data;
    try {
      if (job.op === 'stop') {
        await close();
        process.disconnect();
        return;
      }
      if (job.op === 'sequential') {
        const result: SequentialResult = { via: [], direct: [] };
        for (let i = 0; i < job.count; i++) {
          let start = performance.now();
          await ops[job.via]();
          result.via.push(performance.now() - start);
          start = performance.now();
          await ops[job.direct]();
          result.direct.push(performance.now() - start);
        }
        return send({ type: 'result', result });
      }
      const op = ops[job.kind];
      const end = job.ms === undefined ? Number.POSITIVE_INFINITY : performance.now() + job.ms;
      const limit = job.runs ?? Number.POSITIVE_INFINITY;
      let started = 0;
      const result: LoadResult = { completed: 0, failed: 0, seconds: 0 };
      const began = performance.now();
      await Promise.all(
        Array.from({ length: job.concurrency }, async () => {
          while (started < limit && performance.now() < end) {
            started++;
            try {
              await op();
              result.completed++;
            } catch (error) {
              result.failed++;
              result.firstError ??= error instanceof Error ? error.message : String(error);
            }
            const done = result.completed + result.failed;
            const mark = done === job.markAt;
            if (mark || (job.progressEvery && done % job.progressEvery === 0)) {
              send({ type: 'progress', completed: done, mark });
            }
          }
        }),
      );
      result.seconds = (performance.now() - began) / 1000;
      send({ type: 'result', result });
    } catch (error) {
      send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
    }
  });
  send({ type: 'ready' });
}

export interface LoadClient {
  pid: number;
  sequential(via: LoadKind, direct: LoadKind, count: number): Promise<SequentialResult>;
  /**
   * `concurrency` loops for `ms` or `runs` operations; `onProgress` hears every `progressEvery` completions and
   * once at `markAt` (`mark` true).
   */
  load(
    kind: LoadKind,
    concurrency: number,
    until: { ms?: number; runs?: number; progressEvery?: number; markAt?: number },
    onProgress?: (completed: number, mark: boolean) => void | Promise<void>,
  ): Promise<LoadResult>;
  stop(): Promise<void>;
}

/** Starts the load generator as a child process of the pinned node, the bench's own binary. */
export async function startLoadClient(setup: LoadSetup): Promise<LoadClient> {
  const child: ChildProcess = fork(import.meta.filename, [JSON.stringify(Setup.parse(setup))], {
    execArgv: ['--no-node-snapshot'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let pending: { resolve(value: unknown): void; reject(error: Error): void } | undefined;
  let onProgress: ((completed: number, mark: boolean) => void | Promise<void>) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => {
      const error = new Error(`load client exited with ${code}`);
      reject(error);
      pending?.reject(error);
    });
    child.on('message', (message: Message) => {
      if (message.type === 'ready') resolve();
      else if (message.type === 'progress') void onProgress?.(message.completed, message.mark);
      else if (message.type === 'result') pending?.resolve(message.result);
      else pending?.reject(new Error(`load client: ${message.message}`));
    });
  });
  await ready;
  const ask = <T>(job: LoadJob) =>
    new Promise<T>((resolve, reject) => {
      pending = { resolve: resolve as (value: unknown) => void, reject };
      child.send(job);
    });
  return {
    pid: child.pid as number,
    sequential: (via, direct, count) => ask<SequentialResult>({ op: 'sequential', via, direct, count }),
    load: (kind, concurrency, until, progress) => {
      onProgress = progress;
      return ask<LoadResult>({ op: 'load', kind, concurrency, ...until });
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ op: 'stop' });
      await exited;
    },
  };
}

if (import.meta.main) await serve();
