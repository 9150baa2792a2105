/**
 * `GET /v1/logs/stream`: live run events as Server-Sent Events, read by real SSE clients (undici's
 * EventSource, and a reader that follows the EventSource parsing rules), on the embedded server, on a bare
 * route with short timings (heartbeats, waiting, the store fallback, shutdown), and across two "replicas"
 * joined by Postgres LISTEN/NOTIFY.
 */
import type { FastifyInstance } from 'fastify';
import { EventSource } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { logHandlers } from '../../../api/routes/logs.ts';
import { registerOperations } from '../../../api/routes/register.ts';
import { buildServer } from '../../../api/server.ts';
import { KG_ERR_RUN_NOT_FOUND } from '../../../contract/api/errors.ts';
import type { RunLogEvent } from '../../../contract/api/run.ts';
import { type RunEventBus, RunEventHub, type RunRef } from '../../../runs/run-events.ts';
import { openStore, type Store, type StoredRun } from '../../../store/index.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi, waitForRun } from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';

const TOKEN = 'stream-bearer-secret-5d1e7a90';
const INPUT_SECRET = 'input-value-never-streamed-81c2';
const ITEM_SECRET = 'item-value-never-streamed-3f0b';

interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/**
 * Reads a text/event-stream response following the EventSource parsing rules (fields, comments,
 * multi-line data, CR/LF); resolves when the server ends the stream.
 */
function readSse(response: Response) {
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  const done = (async () => {
    if (!response.body) return;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let data: string[] = [];
    let event = '';
    let id: string | undefined;
    for (;;) {
      const { done: finished, value } = await reader.read();
      if (finished) return;
      buffer += decoder.decode(value, { stream: true });
      let newline = buffer.search(/\r\n|\r|\n/);
      while (newline !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length > 0)
            messages.push({
              ...(id !== undefined ? { id } : {}),
              event: event || 'message',
              data: data.join('\n'),
            });
          data = [];
          event = '';
        } else if (line.startsWith(':')) {
          comments.push(line.slice(1).trim());
        } else {
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          const fieldValue = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(fieldValue);
          else if (field === 'event') event = fieldValue;
          else if (field === 'id') id = fieldValue;
        }
        newline = buffer.search(/\r\n|\r|\n/);
      }
    }
  })();
  return { messages, comments, done, events: () => messages.map((m) => JSON.parse(m.data) as RunLogEvent) };
}

async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the log stream of the embedded server', () => {
  let api: TestApi;
  let target: HttpTarget;
  let flaky = 0;

  beforeAll(async () => {
    target = await startHttpTarget();
    target.route('GET', '/items', (req) => {
      const page = Number(new URLSearchParams(req.url.split('?')[1]).get('page'));
      // Page 2 answers 503 once: the step retries it.
      if (page === 2 && flaky++ === 0) return { status: 503, body: { error: 'busy' } };
      const items = page <= 2 ? [{ v: `${ITEM_SECRET}-${page}a` }, { v: `${ITEM_SECRET}-${page}b` }] : [];
      return { delayMs: 150, body: items };
    });
    target.route('GET', '/denied', (req) => ({
      status: 401,
      body: { error: `token ${req.headers.authorization} is not allowed` },
    }));
    api = await startTestApi();
    await api.call('POST', '/v1/systems', {
      body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: TOKEN } },
    });
    for (const [id, config] of [
      [
        'paged',
        {
          url: '/items',
          systemId: 'shop',
          queryParams: { page: '<<page>>' },
          pagination: { type: 'pageBased', pageSize: 2 },
        },
      ],
      ['denied', { url: '/denied', systemId: 'shop' }],
    ] as const) {
      const created = await api.call('POST', '/v1/tools', { body: { id, steps: [{ id: 'fetch', config }] } });
      expect(created.status).toBe(201);
    }
  });

  afterAll(async () => {
    await api?.stop();
    await target?.stop();
  });

  it('streams a long async run to an EventSource: steps, pages, retries, the outcome; no data, no secrets', async () => {
    const started = await api.call<{ runId: string }>('POST', '/v1/tools/paged/run', {
      body: { inputs: { note: INPUT_SECRET }, options: { async: true } },
    });
    expect(started.status).toBe(202);
    const runId = started.body.runId;
    const source = new EventSource(
      `${api.url}/v1/logs/stream?runId=${encodeURIComponent(runId)}&token=${encodeURIComponent(TEST_ADMIN_KEY)}`,
    );
    const received: Array<{ id: string; event: RunLogEvent }> = [];
    let serverEnded = false;
    source.onmessage = (message) =>
      received.push({ id: message.lastEventId, event: JSON.parse(message.data) });
    source.onerror = () => {
      // The server ended the stream after the run ended; EventSource would reconnect (and get 204).
      serverEnded = true;
      source.close();
    };
    await eventually(() => serverEnded);
    const events = received.map((r) => r.event);
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'step_started',
      'page_fetched',
      'retry',
      'page_fetched',
      'page_fetched',
      'step_finished',
      'run_finished',
    ]);
    expect(events.find((e) => e.type === 'retry')).toMatchObject({
      level: 'WARN',
      stepId: 'fetch',
      attempt: 2,
      httpStatus: 503,
    });
    expect(events.filter((e) => e.type === 'page_fetched').map((e) => [e.page, e.totalFetched])).toEqual([
      [1, 2],
      [2, 4],
      [3, 4],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_finished', status: 'success', runId, toolId: 'paged' });
    // The SSE id of every event is its id; ids are unique.
    expect(received.map((r) => r.id)).toEqual(events.map((e) => e.id));
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    const text = JSON.stringify(events);
    for (const secret of [TOKEN, INPUT_SECRET, ITEM_SECRET]) expect(text).not.toContain(secret);

    // A reconnect after the final event (Last-Event-ID) is answered 204: EventSource stops there.
    const again = await fetch(`${api.url}/v1/logs/stream?runId=${encodeURIComponent(runId)}`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'last-event-id': `${runId}:end` },
    });
    expect(again.status).toBe(204);
  });

  it('a stream opened after the run ended gets its start and outcome, then ends', async () => {
    const run = await api.call<{ runId: string; status: string }>('POST', '/v1/tools/denied/run', {
      body: {},
    });
    expect(run.body.status).toBe('failed');
    const response = await fetch(`${api.url}/v1/logs/stream?runId=${run.body.runId}`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('x-trace-id')).toEqual(expect.any(String));
    const sse = readSse(response);
    await sse.done;
    const events = sse.events();
    expect(events[0]?.type).toBe('run_started');
    const finished = events.find((e) => e.type === 'run_finished');
    expect(finished).toMatchObject({ status: 'failed', level: 'ERROR' });
    // Errors are redacted: the credential shows as its placeholder.
    const failedStep = events.find((e) => e.type === 'step_finished');
    expect(failedStep?.error).toContain('<<shop_bearerToken>>');
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  });

  it('a trace stream opened before its run starts follows it and ends shortly after it', async () => {
    const traceId = 'trace-before-run-1';
    const response = await fetch(`${api.url}/v1/logs/stream?traceId=${traceId}`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    expect(response.status).toBe(200);
    const sse = readSse(response);
    const run = await api.call<{ runId: string; status: string }>('POST', '/v1/tools/paged/run', {
      body: { options: { traceId } },
    });
    expect(run.body.status).toBe('success');
    const finishedAt = Date.now();
    await sse.done;
    // The stream outlives the answer briefly (superglue's CLI closes it when the answer arrives).
    expect(Date.now() - finishedAt).toBeGreaterThanOrEqual(1_000);
    expect(sse.events().map((e) => e.type)).toContain('run_finished');
    expect(sse.events().every((e) => e.traceId === traceId && e.runId === run.body.runId)).toBe(true);
  });

  it('a key sees only its runs: a key limited to tools sees the runs of its tools only', async () => {
    const limited = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'paged only', toolIds: ['paged'] },
    });
    const key = limited.body.key;
    const denied = await api.call<{ runId: string }>('POST', '/v1/tools/denied/run', {
      body: { options: { traceId: 'shared-trace' } },
    });
    // Another tool's run: 404, as if it did not exist.
    const other = await fetch(`${api.url}/v1/logs/stream?runId=${denied.body.runId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(other.status).toBe(404);
    expect(await other.json()).toMatchObject({ error: { code: 'KG_ERR_RUN_NOT_FOUND' } });

    const response = await fetch(`${api.url}/v1/logs/stream?traceId=shared-trace`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const sse = readSse(response);
    await api.call('POST', '/v1/tools/denied/run', { body: { options: { traceId: 'shared-trace' } } });
    const mine = await api.call<{ runId: string }>('POST', '/v1/tools/paged/run', {
      body: { options: { traceId: 'shared-trace' } },
      key,
    });
    await sse.done;
    const events = sse.events();
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.toolId === 'paged' && e.runId === mine.body.runId)).toBe(true);

    // No key: 401; no filter: 400.
    expect((await fetch(`${api.url}/v1/logs/stream?traceId=x`)).status).toBe(401);
    const unfiltered = await api.call('GET', '/v1/logs/stream');
    expect(unfiltered).toMatchObject({ status: 400, body: { error: { code: 'KG_ERR_VALIDATION' } } });
  });

  it('cancelling a followed run ends its stream with the aborted outcome', async () => {
    target.route('GET', '/hang', { delayMs: 10_000, body: [] });
    await api.call('POST', '/v1/tools', {
      body: { id: 'hang', steps: [{ id: 'wait', config: { url: '/hang', systemId: 'shop' } }] },
    });
    const started = await api.call<{ runId: string }>('POST', '/v1/tools/hang/run', {
      body: { options: { async: true } },
    });
    const response = await fetch(`${api.url}/v1/logs/stream?runId=${started.body.runId}`, {
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    });
    const sse = readSse(response);
    await eventually(() => sse.events().some((e) => e.type === 'step_started'));
    await api.call('POST', `/v1/runs/${started.body.runId}/cancel`);
    await sse.done;
    expect(sse.events().find((e) => e.type === 'run_finished')).toMatchObject({
      status: 'aborted',
      level: 'WARN',
      error: 'Run was cancelled',
    });
    expect((await waitForRun(api, started.body.runId)).status).toBe('aborted');
  });
});

/** A run record as RunService.get returns it. */
function storedRun(ref: RunRef, status: StoredRun['status'] = 'running'): StoredRun {
  return {
    runId: ref.runId,
    toolId: ref.toolId,
    traceId: ref.traceId,
    status,
    requestSource: 'api',
    systemIds: [],
    metadata: {
      startedAt: new Date().toISOString(),
      ...(status === 'running' ? {} : { completedAt: new Date().toISOString(), durationMs: 5 }),
    },
    ...(status === 'failed' ? { error: 'The runner Pod was OOMKilled (memory limit 512Mi)' } : {}),
  };
}

/** The stream route alone, with short timings, a hub and a fake run store. */
async function bareStreamServer(hub: RunEventHub, runs: Map<string, StoredRun>) {
  const app: FastifyInstance = buildServer({
    bodyLimitBytes: 1 << 20,
    logLevel: 'silent',
    ready: () => true,
  });
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    request.principal = {
      id: 'k',
      name: 'k',
      admin: true,
      scopes: ['runs:read'],
      toolIds: null,
      systemIds: null,
    };
  });
  registerOperations(
    app,
    logHandlers(app, {
      events: hub,
      runs: {
        get: async (runId) => {
          const run = runs.get(runId);
          if (!run) throw KG_ERR_RUN_NOT_FOUND(runId);
          return run;
        },
      },
      timings: { heartbeatMs: 50, pollMs: 50, waitMs: 400, lingerMs: 100 },
    }),
  );
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url, open: (query: string) => fetch(`${url}/v1/logs/stream?${query}`).then(readSse) };
}

describe('the stream route with short timings', () => {
  const hub = new RunEventHub();
  const runs = new Map<string, StoredRun>();
  let server: Awaited<ReturnType<typeof bareStreamServer>>;
  const ref: RunRef = { runId: 'run-1', toolId: 'tool-1', traceId: 'trace-1' };

  beforeAll(async () => {
    server = await bareStreamServer(hub, runs);
  });
  afterAll(async () => {
    await server?.app.close();
  });

  it('sends heartbeat comments while nothing happens, and ends a trace nobody runs', async () => {
    const started = Date.now();
    const sse = await server.open('traceId=nobody');
    await sse.done;
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(sse.comments.filter((c) => c === 'ping').length).toBeGreaterThanOrEqual(3);
    expect(sse.comments.at(-1)).toMatch(/^no run with this trace id started within/);
    expect(sse.messages).toEqual([]);
  });

  it('ends a followed run from its record when its outcome was decided elsewhere (the operator)', async () => {
    runs.set(ref.runId, storedRun(ref));
    const sse = await server.open(`runId=${ref.runId}`);
    hub.emit(ref, { type: 'step_started', stepId: 'a' });
    await eventually(() => sse.events().length === 2);
    runs.set(ref.runId, storedRun(ref, 'failed'));
    await sse.done;
    expect(sse.events().map((e) => e.type)).toEqual(['run_started', 'step_started', 'run_finished']);
    expect(sse.events()[2]).toMatchObject({ status: 'failed', error: expect.stringContaining('OOMKilled') });
  });

  it('keeps following a trace whose next run starts while it lingers, and ends after the last', async () => {
    const sse = await server.open('traceId=trace-2');
    const first: RunRef = { runId: 'run-2a', toolId: 't', traceId: 'trace-2' };
    const second: RunRef = { runId: 'run-2b', toolId: 't', traceId: 'trace-2' };
    hub.emit(first, { type: 'run_started' });
    hub.emit(first, { type: 'run_finished', status: 'success', durationMs: 1 });
    hub.emit(second, { type: 'run_started' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    hub.emit(second, { type: 'run_finished', status: 'success', durationMs: 1 });
    await sse.done;
    expect(sse.events().map((e) => e.id)).toEqual([
      'run-2a:start',
      'run-2a:end',
      'run-2b:start',
      'run-2b:end',
    ]);
  });

  it('ends open streams when the server closes', async () => {
    const other = await bareStreamServer(new RunEventHub(), new Map());
    const sse = await other.open('traceId=forever');
    const closing = Date.now();
    await other.app.close();
    await sse.done;
    expect(Date.now() - closing).toBeLessThan(1_000);
  });
});

describe('across API replicas (Postgres LISTEN/NOTIFY through the store)', () => {
  let database: TestDatabase;
  let storeA: Store;
  let storeB: Store;
  let hubA: RunEventHub;
  let hubB: RunEventHub;
  let replicaB: Awaited<ReturnType<typeof bareStreamServer>>;
  const published: string[] = [];
  const bus = (store: Store, record = false): RunEventBus => ({
    publish: (payload) => {
      if (record) published.push(payload);
      return store.publishRunEvent(payload);
    },
    subscribe: (listener) => store.onRunEvent(listener),
  });

  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'));
    storeA = await openStore({ driver: 'pg', url: database.url });
    storeB = await openStore({ driver: 'pg', url: database.url });
    hubA = new RunEventHub({ bus: bus(storeA, true) });
    hubB = new RunEventHub({ bus: bus(storeB) });
    await hubA.start();
    await hubB.start();
    replicaB = await bareStreamServer(hubB, new Map());
  });
  afterAll(async () => {
    await replicaB?.app.close();
    await hubA?.close();
    await hubB?.close();
    await storeA?.close();
    await storeB?.close();
    await database?.drop();
  });

  it('forwards nothing while no replica follows a run', async () => {
    hubA.emit({ runId: 'quiet', toolId: 't', traceId: 'quiet' }, { type: 'run_started' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(published.filter((p) => JSON.parse(p).k === 'e')).toEqual([]);
  });

  it('a stream on replica B sees a run executing on replica A, including events from before it opened', async () => {
    const ref: RunRef = { runId: 'remote-1', toolId: 't', traceId: 'remote-trace' };
    hubA.emit(ref, { type: 'run_started' });
    hubA.emit(ref, { type: 'step_started', stepId: 'a' });
    const sse = await replicaB.open('traceId=remote-trace');
    // B announced what it follows; A sent what it kept of that run.
    await eventually(() => sse.events().length === 2);
    hubA.emit(ref, { type: 'page_fetched', stepId: 'a', page: 1, totalFetched: 10 });
    hubA.emit(ref, {
      type: 'step_finished',
      result: { stepId: 'a', success: true, data: { secret: ITEM_SECRET } },
    });
    hubA.emit(ref, { type: 'run_finished', status: 'success', durationMs: 12 });
    await sse.done;
    expect(sse.events().map((e) => e.type)).toEqual([
      'run_started',
      'step_started',
      'page_fetched',
      'step_finished',
      'run_finished',
    ]);
    expect(JSON.stringify(published)).not.toContain(ITEM_SECRET);
    // Only the followed run crossed over.
    expect(
      published
        .map((p) => JSON.parse(p))
        .filter((m) => m.k === 'e')
        .every((m) => m.e.runId === 'remote-1'),
    ).toBe(true);
  });
});
