import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOG } from '../../../contract/api/errors.ts';
import { ROUTES } from '../../../contract/api/routes.ts';
import { KUBEGLUE_BIN } from '../../support/cli.ts';
import { startTestApi, TEST_ADMIN_KEY, TEST_MASTER_KEY, type TestApi } from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { freeLoopbackPort } from '../../support/os.ts';

describe('every route under malformed input', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({ KUBEGLUE_BODY_LIMIT_BYTES: String(64 * 1024) });
    await api.call('POST', '/v1/tools', {
      body: { id: 'fuzzed', steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }] },
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  const concrete = (path: string, value: string) =>
    `/v1${path.replace(/\{toolId\}/, 'fuzzed').replace(/\{(\w+)\}/g, () => encodeURIComponent(value))}`;
  const bodies: Array<[string, string | undefined]> = [
    ['malformed JSON', '{"steps": ['],
    ['a number', '42'],
    ['an array', '[1,2,3]'],
    [
      'wrong types',
      JSON.stringify({ id: 7, steps: 'no', inputs: 'x', options: { timeout: 'soon' }, name: [] }),
    ],
    ['a huge body', JSON.stringify({ inputs: { blob: 'x'.repeat(200 * 1024) } })],
    ['no body', undefined],
  ];

  for (const route of ROUTES) {
    it(`${route.method} ${route.path} answers every bad request without a 5xx, in the error shape`, async () => {
      for (const param of ['nope', '..', '%00', 'x'.repeat(300)]) {
        for (const [label, body] of route.method === 'GET' || route.method === 'DELETE'
          ? [['no body', undefined] as const]
          : bodies) {
          const res = await api.call(
            route.method,
            `${concrete(route.path, param)}?page=-1&limit=abc&status=maybe`,
            {
              ...(body !== undefined
                ? { rawBody: body, headers: { 'content-type': 'application/json' } }
                : {}),
            },
          );
          const where = `${route.method} ${concrete(route.path, param).slice(0, 60)} with ${label}`;
          expect(res.status, where).toBeLessThan(500);
          if (res.status >= 400 && res.headers.get('content-type')?.startsWith('application/json')) {
            expect(Object.keys(res.body as object), where).toEqual(['error']);
            const { issues, ...error } = (res.body as { error: { issues?: unknown } }).error;
            expect(error, where).toEqual({
              message: expect.any(String),
              code: expect.any(String),
              hint: expect.any(String),
            });
            if (issues !== undefined) expect(Array.isArray(issues), where).toBe(true);
            // The code is a catalog entry, answered with the catalog's status.
            const { code } = (res.body as { error: { code: string } }).error;
            expect(ERROR_CATALOG.find((entry) => entry.code === code)?.statusCode, `${where}: ${code}`).toBe(
              res.status,
            );
          }
        }
      }
    });
  }
});

/** Calls the server on `port` with the test admin key. */
function caller(port: number) {
  return (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
}

describe('a server killed with SIGKILL during runs', () => {
  let target: HttpTarget;
  let dataDir: string;
  let child: ChildProcess | undefined;
  const held: ServerResponse[] = [];
  /** The `run` query value of every held request: which run reached the target. */
  const heldRuns: string[] = [];

  beforeAll(async () => {
    target = await startHttpTarget();
    target.route('GET', '/hold', (req, res) => {
      held.push(res);
      heldRuns.push(req.query.find(([name]) => name === 'run')?.[1] ?? '');
      return undefined;
    });
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-crash-'));
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    for (const res of held) res.destroy();
    await target?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function startServer(port: number, extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
    const server = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, 'embedded'], {
      env: {
        ...process.env,
        KUBEGLUE_PORT: String(port),
        KUBEGLUE_DATA_DIR: dataDir,
        KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
        KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
        KUBEGLUE_WORKERS: '1',
        KUBEGLUE_LOG_LEVEL: 'silent',
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      server.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('ready on')) resolve();
      });
      server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
    });
    return server;
  }

  /** Each run failed, with an error that matches. */
  async function expectFailed(
    call: ReturnType<typeof caller>,
    runIds: string[],
    error: RegExp,
  ): Promise<void> {
    for (const runId of runIds) {
      const run = (await (await call('GET', `/v1/runs/${runId}`)).json()) as {
        status: string;
        error: string;
      };
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(error);
    }
  }

  /** A tool whose one step modifies data and waits at the target's /hold, which notes the run's `kind`. */
  const holdingTool = (id: string) => ({
    id,
    steps: [
      { id: 'wait', modify: true, config: { url: `${target.url}/hold`, queryParams: { run: '<<kind>>' } } },
    ],
  });

  it('records runs in flight that modify data as failed on SIGTERM after the grace period, not as cancelled', async () => {
    const port = await freeLoopbackPort();
    const call = caller(port);
    child = await startServer(port, { KUBEGLUE_SHUTDOWN_GRACE_MS: '500' });
    // Read-only async runs are handed back to run again instead (run-interruptions.test.ts).
    await call('POST', '/v1/tools', holdingTool('hang-term'));
    const asyncRun = (await (
      await call('POST', '/v1/tools/hang-term/run', {
        inputs: { kind: 'term-async' },
        options: { async: true },
      })
    ).json()) as { runId: string };
    const syncResponse = call('POST', '/v1/tools/hang-term/run', {
      runId: 'sync-term',
      inputs: { kind: 'term-sync' },
    }).then((r) => r.json());
    await expect
      .poll(() => ['term-async', 'term-sync'].every((kind) => heldRuns.includes(kind)), { timeout: 15_000 })
      .toBe(true);
    child.kill('SIGTERM');
    const exitCode = await new Promise((resolve) => child?.once('exit', resolve));
    expect(exitCode).toBe(0);
    expect(await syncResponse).toMatchObject({ status: 'failed' });
    child = await startServer(port);
    await expectFailed(call, [asyncRun.runId, 'sync-term'], /^kubeglue shut down before this run finished/);
    child.kill('SIGTERM');
    await new Promise((resolve) => child?.once('exit', resolve));
    child = undefined;
  }, 90_000);

  it('leaves no run running after a restart', async () => {
    const port = await freeLoopbackPort();
    const call = caller(port);
    child = await startServer(port);
    // Modifying: read-only async runs run again after a restart (run-interruptions.test.ts).
    await call('POST', '/v1/tools', holdingTool('hang'));
    const asyncRun = (await (
      await call('POST', '/v1/tools/hang/run', { inputs: { kind: 'crash-async' }, options: { async: true } })
    ).json()) as { runId: string };
    void call('POST', '/v1/tools/hang/run', { runId: 'sync-crash', inputs: { kind: 'crash-sync' } }).catch(
      () => {},
    );
    await expect
      .poll(() => ['crash-async', 'crash-sync'].every((kind) => heldRuns.includes(kind)), { timeout: 15_000 })
      .toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child?.once('exit', resolve));

    child = await startServer(port);
    await expectFailed(call, [asyncRun.runId, 'sync-crash'], /stopped before it finished/);
    const running = (await (await call('GET', '/v1/runs?status=running')).json()) as { total: number };
    expect(running.total).toBe(0);
    child.kill('SIGTERM');
    await new Promise((resolve) => child?.once('exit', resolve));
    child = undefined;
  }, 90_000);
});
