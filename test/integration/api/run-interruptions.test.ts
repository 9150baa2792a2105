/**
 * What becomes of runs when `kubeglue embedded` stops while they execute: SIGTERM (the grace period, then
 * read-only async runs are handed back to run again and the others fail saying the server shut down) and
 * kill -9 (startup recovery re-executes read-only async runs as their next attempt, up to
 * KUBEGLUE_MAX_RUN_ATTEMPTS, and fails the rest). The server runs as a child process, restarted on the
 * same data dir; its steps call a real HTTP target.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { callServer, startServerProcess, testServerEnv, waitForServerRun } from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

interface Server {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let target: HttpTarget;
/** Requests the target holds without answering, by the value of their `run` query parameter. */
const held = new Map<string, ServerResponse>();
/** Which `run` values the target has seen (held or answered), in order. */
const seen: string[] = [];
/** false: the target answers every request at once. */
let holding = true;
const servers: Server[] = [];
const dirs: string[] = [];

const runKey = (query: Array<[string, string]>) => query.find(([name]) => name === 'run')?.[1] ?? '';

beforeAll(async () => {
  target = await startHttpTarget();
  // Takes three seconds, then answers.
  target.route('GET', '/three-seconds', { delayMs: 3_000, body: { slow: true } });
  // The first request of each run is held (until the test lets go); later ones are answered at once.
  const holdFirst = (req: { query: Array<[string, string]> }, res: ServerResponse) => {
    const key = runKey(req.query);
    const first = !seen.includes(key);
    seen.push(key);
    if (first && holding) {
      held.set(key, res);
      return undefined;
    }
    return { body: { run: key, answered: true } };
  };
  target.route('GET', '/hold-first', holdFirst);
  target.route('POST', '/hold-first', holdFirst);
  // Always held while `holding`.
  target.route('GET', '/hold', (req, res) => {
    seen.push(runKey(req.query));
    if (!holding) return { body: { answered: true } };
    held.set(`${runKey(req.query)}#${seen.length}`, res);
    return undefined;
  });
});

afterEach(async () => {
  for (const server of servers.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  }
  for (const res of held.values()) res.destroy();
  held.clear();
  holding = true;
});

afterAll(async () => {
  await target?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-interrupt-'));
  dirs.push(dir);
  return dir;
}

/** `kubeglue embedded` on `dir`, resolved once it listens. */
async function startServer(dir: string, env: Record<string, string> = {}): Promise<Server> {
  const server = await startServerProcess(
    testServerEnv(dir, { KUBEGLUE_HOST: '127.0.0.1', KUBEGLUE_WORKERS: '2', ...env }),
  );
  servers.push(server);
  return server;
}

async function createTool(server: Server, id: string, path: string, extra: Record<string, unknown> = {}) {
  await callServer(server, 'POST', '/v1/tools', {
    id,
    steps: [
      { id: 'fetch', config: { url: `${target.url}${path}`, queryParams: { run: '<<key>>' } }, ...extra },
    ],
  });
}

async function startAsync(server: Server, toolId: string, key: string): Promise<string> {
  const run = await callServer<Run>(server, 'POST', `/v1/tools/${toolId}/run`, {
    inputs: { key },
    options: { async: true },
  });
  return run.runId;
}

const getRun = (server: Server, runId: string) => callServer<Run>(server, 'GET', `/v1/runs/${runId}`);

async function stop(server: Server, signal: NodeJS.Signals): Promise<{ code: number | null }> {
  server.child.kill(signal);
  return server.exited;
}

describe('SIGTERM', () => {
  it('lets an async run in flight finish within the grace period', async () => {
    const dir = await dataDir();
    let server = await startServer(dir, { KUBEGLUE_SHUTDOWN_GRACE_MS: '20000' });
    await createTool(server, 'three-seconds', '/three-seconds');
    const runId = await startAsync(server, 'three-seconds', 'slow-1');
    await expect.poll(() => target.count('/three-seconds'), { timeout: 30_000 }).toBe(1);
    expect(await stop(server, 'SIGTERM')).toMatchObject({ code: 0 });
    expect(server.output()).toContain('in-flight runs get 20000 ms to finish');

    server = await startServer(dir);
    const run = await getRun(server, runId);
    expect(run).toMatchObject({ status: 'success', attempt: 1 });
    expect(run.error).toBeUndefined();
  });

  it('hands a read-only run back to run again after the restart; a modifying run fails saying the server shut down', async () => {
    const dir = await dataDir();
    let server = await startServer(dir, { KUBEGLUE_SHUTDOWN_GRACE_MS: '500' });
    await createTool(server, 'reader', '/hold-first');
    // Its runtime credentials must survive the hand-back: the second attempt sends them too.
    await callServer(server, 'POST', '/v1/systems', { id: 'crm', url: target.url, authType: 'bearer' });
    await callServer(server, 'POST', '/v1/tools', {
      id: 'crm-reader',
      steps: [
        { id: 'fetch', config: { url: '/hold-first', systemId: 'crm', queryParams: { run: '<<key>>' } } },
      ],
    });
    await callServer(server, 'POST', '/v1/tools', {
      id: 'writer',
      steps: [
        {
          id: 'write',
          modify: true,
          config: { url: `${target.url}/hold-first`, method: 'POST', queryParams: { run: '<<key>>' } },
        },
      ],
    });
    const reader = await startAsync(server, 'reader', 'term-reader');
    const writer = await startAsync(server, 'writer', 'term-writer');
    const crmReader = (
      await callServer<Run>(server, 'POST', '/v1/tools/crm-reader/run', {
        inputs: { key: 'term-crm' },
        credentials: { crm_bearerToken: 'runtime-token-0123456789' },
        options: { async: true },
      })
    ).runId;
    // A sync run in flight too: its caller is answered when the grace is over.
    const sync = callServer<Run>(server, 'POST', '/v1/tools/reader/run', { inputs: { key: 'term-sync' } });
    await expect
      .poll(() => ['term-reader', 'term-writer', 'term-sync', 'term-crm'].every((key) => held.has(key)), {
        timeout: 30_000,
      })
      .toBe(true);
    expect(await stop(server, 'SIGTERM')).toMatchObject({ code: 0 });
    const answered = await sync;
    expect(answered).toMatchObject({
      status: 'failed',
      error: 'kubeglue shut down before this run finished (synchronous runs are not retried)',
    });
    // The shutdown's log names each run it hands back and each it fails.
    const shutdownLog = server.output();
    for (const runId of [reader, crmReader])
      expect(shutdownLog).toContain(`shutdown: run ${runId} handed back to run again (attempt 2)`);
    expect(shutdownLog).toContain(
      `shutdown: run ${writer} failed: kubeglue shut down before this run finished (it modifies data, so it was not retried)`,
    );
    expect(shutdownLog).toContain(
      `shutdown: run ${answered.runId} failed: kubeglue shut down before this run finished (synchronous runs are not retried)`,
    );

    server = await startServer(dir);
    const readerRun = await waitForServerRun<Run>(server, reader);
    expect(readerRun).toMatchObject({ status: 'success', attempt: 2 });
    const results = await callServer<{ data: { data: unknown } }>(
      server,
      'GET',
      `/v1/runs/${reader}/results`,
    );
    expect(results.data.data).toEqual({ run: 'term-reader', answered: true });
    // The second attempt really executed: the target saw the run twice.
    expect(seen.filter((key) => key === 'term-reader')).toHaveLength(2);

    expect(await waitForServerRun<Run>(server, crmReader)).toMatchObject({ status: 'success', attempt: 2 });
    const crmCalls = target.requests.filter(
      (r) => r.path === '/hold-first' && runKey(r.query) === 'term-crm',
    );
    expect(crmCalls.map((r) => r.headers.authorization)).toEqual([
      'Bearer runtime-token-0123456789',
      'Bearer runtime-token-0123456789',
    ]);

    const writerRun = await getRun(server, writer);
    expect(writerRun).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: 'kubeglue shut down before this run finished (it modifies data, so it was not retried)',
    });
    expect(seen.filter((key) => key === 'term-writer')).toHaveLength(1);
    for (const run of [answered, writerRun]) expect(JSON.stringify(run)).not.toMatch(/cancel/i);
  }, 90_000);
});

describe('kill -9', () => {
  it('re-executes every accepted read-only async run after the restart; a modifying run fails as before', async () => {
    const dir = await dataDir();
    // Eight execute at once; the others wait for a slot.
    const env = { KUBEGLUE_MAX_ASYNC_RUNS: '8' };
    let server = await startServer(dir, env);
    await createTool(server, 'reader', '/hold-first');
    await createTool(server, 'writer', '/hold-first', { modify: true });
    const writer = await startAsync(server, 'writer', 'crash-writer');
    const readers: string[] = [];
    for (let i = 0; i < 40; i++) readers.push(await startAsync(server, 'reader', `crash-reader-${i}`));
    // Killed while runs execute (their requests are held) and others still wait to start.
    await expect.poll(() => held.has('crash-writer') && held.size === 8, { timeout: 60_000 }).toBe(true);
    server.child.kill('SIGKILL');
    await server.exited;
    const executing = [...held.keys()];
    for (const res of held.values()) res.destroy();
    held.clear();
    holding = false;

    server = await startServer(dir, env);
    const outcomes = await Promise.all(readers.map((runId) => waitForServerRun<Run>(server, runId)));
    expect(outcomes.filter((run) => run.status !== 'success')).toEqual([]);
    expect(outcomes.filter((run) => /stopped before it finished/.test(run.error ?? ''))).toEqual([]);
    // The runs that were executing when the process died ran a second time, as attempt 2.
    for (const [i, run] of outcomes.entries()) {
      if (executing.includes(`crash-reader-${i}`)) expect(run.attempt, run.runId).toBe(2);
    }
    const writerRun = await waitForServerRun<Run>(server, writer);
    expect(writerRun).toMatchObject({ status: 'failed', attempt: 1 });
    expect(writerRun.error).toBe(
      'kubeglue restarted: the process executing this run stopped before it finished (it modifies data, so it was not retried)',
    );
  }, 240_000);

  it('stops retrying after KUBEGLUE_MAX_RUN_ATTEMPTS, saying how many attempts were made', async () => {
    const dir = await dataDir();
    const env = { KUBEGLUE_MAX_RUN_ATTEMPTS: '2' };
    let server = await startServer(dir, env);
    await createTool(server, 'forever', '/hold');
    const runId = await startAsync(server, 'forever', 'bounded');
    for (const attempt of [1, 2]) {
      await expect
        .poll(() => seen.filter((key) => key === 'bounded').length, { timeout: 30_000 })
        .toBe(attempt);
      expect((await getRun(server, runId)).attempt).toBe(attempt);
      server.child.kill('SIGKILL');
      await server.exited;
      server = await startServer(dir, env);
    }
    const run = await waitForServerRun<Run>(server, runId);
    expect(run).toMatchObject({
      status: 'failed',
      attempt: 2,
      error:
        'kubeglue restarted: the process executing this run stopped before it finished (it was not retried again: 2 of at most 2 attempts were made, KUBEGLUE_MAX_RUN_ATTEMPTS)',
    });
    expect(seen.filter((key) => key === 'bounded')).toHaveLength(2);
  }, 90_000);
});
