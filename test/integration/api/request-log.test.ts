/**
 * The server's terminal at the default level: one line per request (method, route, status, ms, trace id)
 * and one per run end (run, tool, status, ms), as JSON log lines; never a secret in them, whether it came
 * in a query string (a webhook's ?token=), a header or a body. KUBEGLUE_REQUEST_LOG=false turns both off.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ServerProcess,
  startServerProcess,
  TEST_ADMIN_KEY,
  TEST_MASTER_KEY,
  testServerEnv,
} from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { type LogLine, logLines } from '../../support/log-lines.ts';
import { findSecrets, summarise } from '../../support/secret-scan.ts';

const SYSTEM_TOKEN = 'request-log-system-token-5f1c9e';
const RUNTIME_TOKEN = 'request-log-runtime-token-8d2a4b';
const NOT_A_KEY = 'kg_request-log-wrong-key-0123456789abcdef';

let target: HttpTarget;
const servers: ServerProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  target = await startHttpTarget();
  target.route('GET', '/items', { body: [{ id: 1 }] });
});

afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await target?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function start(env: Record<string, string> = {}): Promise<ServerProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-request-log-'));
  dirs.push(dir);
  // The default level, as bin/start runs it (the test servers' default is silent).
  const server = await startServerProcess(testServerEnv(dir, { KUBEGLUE_LOG_LEVEL: 'info', ...env }));
  servers.push(server);
  return server;
}

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  options: { body?: unknown; key?: string } = {},
): Promise<Response> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${options.key ?? TEST_ADMIN_KEY}`,
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  await response.arrayBuffer();
  return response;
}

const requestLines = (server: ServerProcess): LogLine[] =>
  logLines(server.output()).filter((line) => typeof line.route === 'string');

describe('the request log', () => {
  let server: ServerProcess;
  let hookKey: string;

  beforeAll(async () => {
    server = await start();
    await call(server, 'POST', '/v1/systems', {
      body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: SYSTEM_TOKEN } },
    });
    await call(server, 'POST', '/v1/tools', {
      body: { id: 'items', steps: [{ id: 'list', config: { systemId: 'shop', url: '/items' } }] },
    });
    const created = await fetch(`${server.url}/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'hook', scopes: ['runs:execute'], toolIds: ['items'] }),
    });
    hookKey = ((await created.json()) as { key: string }).key;
  });

  it('logs one line per request with its method, route pattern, status, duration and trace id', async () => {
    const answered = await fetch(`${server.url}/v1/tools/items`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'x-trace-id': 'trace-request-log-1' },
    });
    expect(answered.status).toBe(200);
    await expect
      .poll(() => requestLines(server).find((line) => line.traceId === 'trace-request-log-1'))
      .toMatchObject({
        level: 30,
        role: 'embedded',
        method: 'GET',
        route: '/v1/tools/:toolId',
        status: 200,
        traceId: 'trace-request-log-1',
        msg: expect.stringMatching(/^GET \/v1\/tools\/:toolId 200 \d+ ms$/),
      });
    const line = requestLines(server).find((one) => one.traceId === 'trace-request-log-1');
    expect(line?.ms).toEqual(expect.any(Number));

    // A refused key and an unknown path are requests too.
    expect((await call(server, 'GET', '/v1/tools', { key: NOT_A_KEY })).status).toBe(401);
    expect((await call(server, 'GET', '/v1/no-such-thing?token=kg_query-secret-in-a-typo')).status).toBe(404);
    await expect
      .poll(() => requestLines(server).map((one) => `${one.method} ${one.route} ${one.status}`))
      .toEqual(expect.arrayContaining(['GET /v1/tools 401', 'GET /v1/no-such-thing 404']));
  });

  it('logs one line per run end with the run, its tool, its status and its duration', async () => {
    const response = await fetch(`${server.url}/v1/tools/items/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ runId: 'logged-run', credentials: { shop_bearerToken: RUNTIME_TOKEN } }),
    });
    expect(((await response.json()) as { status: string }).status).toBe('success');
    await expect
      .poll(() => logLines(server.output()).find((line) => line.runId === 'logged-run'))
      .toMatchObject({
        toolId: 'items',
        status: 'success',
        ms: expect.any(Number),
        msg: expect.stringMatching(/^run logged-run of tool items: success in \d+ ms$/),
      });
    // An async run ends in the operator loops' worker pool: it is logged the same way, once.
    const queued = await fetch(`${server.url}/v1/tools/items/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ runId: 'logged-async-run', options: { async: true } }),
    });
    expect(queued.status).toBe(202);
    await expect
      .poll(() => logLines(server.output()).filter((line) => line.runId === 'logged-async-run').length, {
        timeout: 15_000,
      })
      .toBe(1);
  });

  it('never logs a secret: not the webhook token in the query, nor a key or a credential', async () => {
    const hook = await fetch(`${server.url}/v1/hooks/items?token=${encodeURIComponent(hookKey)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ event: 'x' }),
    });
    expect(hook.status).toBe(202);
    await expect
      .poll(() => requestLines(server).some((line) => line.route === '/v1/hooks/:toolId'))
      .toBe(true);
    const findings = findSecrets(
      [
        { name: 'webhook key', value: hookKey },
        { name: 'admin key', value: TEST_ADMIN_KEY },
        { name: 'wrong key', value: NOT_A_KEY },
        { name: 'key in a query string', value: 'kg_query-secret-in-a-typo' },
        { name: 'system token', value: SYSTEM_TOKEN },
        { name: 'runtime token', value: RUNTIME_TOKEN },
        { name: 'master key', value: TEST_MASTER_KEY },
      ],
      [{ where: 'server output', text: server.output() }],
    );
    expect(summarise(findings)).toEqual([]);
    for (const line of requestLines(server)) expect(Object.keys(line)).not.toContain('headers');
  });
});

describe('KUBEGLUE_REQUEST_LOG=false', () => {
  it('leaves requests and run ends out of the log', async () => {
    const server = await start({ KUBEGLUE_REQUEST_LOG: 'false' });
    await call(server, 'GET', '/v1/tools');
    await call(server, 'POST', '/v1/tools/run', {
      body: { tool: { id: 'inline', steps: [{ id: 'x', config: { url: `${target.url}/items` } }] } },
    });
    // The server's own lines still come (a later one proves the earlier requests were answered first).
    server.child.kill('SIGTERM');
    await server.exited;
    expect(server.output()).toContain('"msg":"stopped"');
    expect(requestLines(server)).toEqual([]);
    expect(logLines(server.output()).filter((line) => line.toolId !== undefined)).toEqual([]);
  });
});
