import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import { INTERNAL_PATHS } from '../../../contract/wire/runner.ts';
import type { Store } from '../../../store/index.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { openTestStore } from '../../support/store.ts';

const TOOL: JsonObject = {
  id: 'tool-a',
  steps: [
    { id: 'first', config: { url: 'http://example.test/first' } },
    { id: 'second', config: { url: 'http://example.test/second' } },
  ],
};

const finished = (stepId: string, data: number) => ({
  type: 'step_finished' as const,
  result: { stepId, success: true, data },
});

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  api = createInternalApi(store, { bodyLimitBytes: 64 * 1024 });
  await api.listen();
});

afterAll(async () => {
  await api?.close();
  await closeStore?.();
});

interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

async function call(
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
): Promise<Answer> {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: {
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

const errorOf = (answer: Answer) => (answer.body as { error: { message: string } }).error.message;
const codeOf = (answer: Answer) => (answer.body as { error: { code: string } }).error.code;

describe('internal api: what it serves', () => {
  it('answers /healthz and nothing of the public API', async () => {
    expect((await call('GET', '/healthz', undefined)).body).toEqual({ status: 'ok' });
    for (const path of ['/readyz', '/v1/openapi.json', '/v1/tools', '/metrics']) {
      const answer = await call('GET', path, undefined);
      expect(answer.status).toBe(404);
      expect(codeOf(answer)).toBe('KG_ERR_ROUTE_NOT_FOUND');
    }
  });
});

describe('internal api: who may call', () => {
  let token: string;
  beforeAll(async () => {
    token = await api.startRun('auth-a', TOOL);
    await api.startRun('auth-b', TOOL);
  });

  it('refuses a request without a token, with a malformed header or with an unknown token', async () => {
    const missing = await call('GET', INTERNAL_PATHS.order('auth-a'), undefined);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(codeOf(missing)).toBe('KG_ERR_MISSING_RUN_TOKEN');
    const basic = await fetch(`${api.url}${INTERNAL_PATHS.order('auth-a')}`, {
      headers: { authorization: `Basic ${token}` },
    });
    expect(basic.status).toBe(401);
    const unknown = await call('GET', INTERNAL_PATHS.order('auth-a'), 'not-a-token');
    expect({ status: unknown.status, code: codeOf(unknown) }).toEqual({
      status: 401,
      code: 'KG_ERR_INVALID_RUN_TOKEN',
    });
    expect(unknown.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await call('POST', INTERNAL_PATHS.heartbeat('auth-a'), 'wrong', { attempt: 1 })).status).toBe(
      401,
    );
    expect((await call('PUT', INTERNAL_PATHS.result('auth-a'), 'wrong', {})).status).toBe(401);
  });

  it("refuses a token on another run's paths", async () => {
    const answer = await call('GET', INTERNAL_PATHS.order('auth-b'), token);
    expect(answer.status).toBe(403);
    expect(codeOf(answer)).toBe('KG_ERR_RUN_TOKEN_OTHER_RUN');
    const events = await call('POST', INTERNAL_PATHS.events('auth-b'), token, {
      attempt: 1,
      firstSeq: 1,
      events: [],
    });
    expect(events.status).toBe(403);
  });

  it("refuses the previous attempt's token once a new attempt was issued", async () => {
    const first = await api.startRun('auth-attempt', TOOL);
    const second = await api.newAttempt('auth-attempt', 2);
    expect((await call('GET', INTERNAL_PATHS.order('auth-attempt'), first)).status).toBe(401);
    expect((await call('GET', INTERNAL_PATHS.order('auth-attempt'), second)).status).toBe(200);
    const wrongAttempt = await call('POST', INTERNAL_PATHS.heartbeat('auth-attempt'), second, { attempt: 1 });
    expect({ status: wrongAttempt.status, code: codeOf(wrongAttempt) }).toEqual({
      status: 409,
      code: 'KG_ERR_RUN_ATTEMPT_MISMATCH',
    });
  });
});

describe('internal api: order', () => {
  it('builds the order from the stored run, systems for its mode and its runtime credentials', async () => {
    api.systems.set('crm/dev', {
      id: 'crm',
      url: 'https://crm.dev.test',
      credentials: { apiKey: 'dev-key' },
    });
    api.systems.set('crm/prod', { id: 'crm', url: 'https://crm.test', credentials: { apiKey: 'prod-key' } });
    const token = await api.startRun('order-a', TOOL, {
      inputs: { q: 'x' },
      systemIds: ['crm'],
      mode: 'dev',
      options: { timeout: 60_000 },
      startedAt: new Date(Date.now() - 10_000).toISOString(),
      credentials: { crm_token: 'runtime' },
    });
    const answer = await call('GET', INTERNAL_PATHS.order('order-a'), token);
    expect(answer.status).toBe(200);
    const order = answer.body as Record<string, unknown>;
    expect(order).toMatchObject({
      runId: 'order-a',
      tool: { id: 'tool-a', steps: [{ id: 'first' }, { id: 'second' }] },
      inputs: { q: 'x' },
      systems: [{ id: 'crm', url: 'https://crm.dev.test', credentials: { apiKey: 'dev-key' } }],
      runtimeCredentials: { crm_token: 'runtime' },
      traceId: 'trace-order-a',
    });
    expect(order.timeoutMs).toBeGreaterThan(45_000);
    expect(order.timeoutMs).toBeLessThanOrEqual(50_000);
    // Fetching again (a lost answer) gives the same credentials: they go only once the run ended.
    expect((await call('GET', INTERNAL_PATHS.order('order-a'), token)).body).toMatchObject({
      runtimeCredentials: { crm_token: 'runtime' },
    });
  });

  it('fails the run when its timeout passed before the order was fetched', async () => {
    const token = await api.startRun('order-late', TOOL, {
      options: { timeout: 1_000 },
      startedAt: new Date(Date.now() - 5_000).toISOString(),
      credentials: { secret: 's' },
    });
    const answer = await call('GET', INTERNAL_PATHS.order('order-late'), token);
    expect(answer.status).toBe(409);
    expect(errorOf(answer)).toBe('Run timed out after 1000 ms before it started');
    expect(codeOf(answer)).toBe('KG_ERR_RUN_ORDER_REFUSED');
    expect(await store.getRun('order-late')).toMatchObject({
      status: 'failed',
      error: 'Run timed out after 1000 ms before it started',
    });
    expect(api.dropped).toContain('order-late');
  });

  it('fails the run when one of its systems no longer exists', async () => {
    const token = await api.startRun('order-nosys', TOOL, { systemIds: ['gone'] });
    const answer = await call('GET', INTERNAL_PATHS.order('order-nosys'), token);
    expect(answer.status).toBe(409);
    expect(errorOf(answer)).toBe("system 'gone' does not exist");
    expect((await store.getRun('order-nosys'))?.status).toBe('failed');
    // The token died with the run.
    expect((await call('GET', INTERNAL_PATHS.order('order-nosys'), token)).status).toBe(401);
  });
});

describe('internal api: events and heartbeats', () => {
  it('saves step results as their events arrive and applies a resent batch once', async () => {
    const token = await api.startRun('events-a', TOOL);
    const path = INTERNAL_PATHS.events('events-a');
    const batch = {
      attempt: 1,
      firstSeq: 1,
      events: [{ type: 'step_started', stepId: 'first' }, finished('first', 1)],
    };
    expect(await call('POST', path, token, batch)).toMatchObject({ status: 200, body: { cancel: false } });
    expect(await store.getStepResults('events-a')).toEqual([{ stepId: 'first', success: true, data: 1 }]);

    // The answer was lost: the same numbers again, even with other content, change nothing.
    const resent = { ...batch, events: [batch.events[0], finished('first', 99)] };
    expect(await call('POST', path, token, resent)).toMatchObject({ status: 200, body: { cancel: false } });
    // Overlapping: only seq 3 and 4 are new.
    const overlap = {
      attempt: 1,
      firstSeq: 2,
      events: [finished('first', 98), { type: 'step_started', stepId: 'second' }, finished('second', 2)],
    };
    expect((await call('POST', path, token, overlap)).status).toBe(200);
    expect(await store.getStepResults('events-a')).toEqual([
      { stepId: 'first', success: true, data: 1 },
      { stepId: 'second', success: true, data: 2 },
    ]);
    expect((await store.getRunnerAttempt('events-a'))?.lastSeq).toBe(4);
  });

  it('refuses a batch that leaves a gap, names another attempt or is malformed', async () => {
    const token = await api.startRun('events-bad', TOOL);
    const path = INTERNAL_PATHS.events('events-bad');
    const gap = await call('POST', path, token, { attempt: 1, firstSeq: 3, events: [finished('first', 1)] });
    expect({ status: gap.status, code: codeOf(gap) }).toEqual({ status: 409, code: 'KG_ERR_RUN_EVENTS_GAP' });
    expect(errorOf(gap)).toMatch(/starts at 3, but events were accepted only up to 0/);
    expect((await call('POST', path, token, { attempt: 2, firstSeq: 1, events: [] })).status).toBe(409);
    const malformed = await call('POST', path, token, {
      attempt: 1,
      firstSeq: 1,
      events: [{ type: 'nope' }],
    });
    expect({ status: malformed.status, code: codeOf(malformed) }).toEqual({
      status: 400,
      code: 'KG_ERR_VALIDATION',
    });
    expect(errorOf(malformed)).toMatch(/^Invalid event batch: events\[0\]/);
    expect((await call('POST', path, token, '{"attempt":')).status).toBe(400);
    expect(await store.getStepResults('events-bad')).toEqual([]);
  });

  it('records heartbeats and answers cancel once the run was aborted', async () => {
    const token = await api.startRun('beat-a', TOOL);
    const path = INTERNAL_PATHS.heartbeat('beat-a');
    expect(await call('POST', path, token, { attempt: 1 })).toMatchObject({
      status: 200,
      body: { cancel: false },
    });
    expect((await store.getRunnerAttempt('beat-a'))?.heartbeatAt).not.toBeNull();
    await store.abortRun('beat-a', { error: 'Run was cancelled', completedAt: new Date().toISOString() });
    expect(await call('POST', path, token, { attempt: 1 })).toMatchObject({
      status: 200,
      body: { cancel: true },
    });
    const events = await call('POST', INTERNAL_PATHS.events('beat-a'), token, {
      attempt: 1,
      firstSeq: 1,
      events: [finished('first', 1)],
    });
    expect(events).toMatchObject({ status: 200, body: { cancel: true } });
    expect(await store.getStepResults('beat-a')).toEqual([]);
    // The token no longer gets the order (credentials) once the run ended.
    expect((await call('GET', INTERNAL_PATHS.order('beat-a'), token)).status).toBe(401);
  });
});

describe('internal api: result', () => {
  const result = (status: 'success' | 'failed', data: unknown = { ok: true }) => ({
    attempt: 1,
    result: {
      status,
      data,
      stepResults: [
        { stepId: 'first', success: true, data: 1 },
        { stepId: 'second', success: status === 'success', data: 2 },
      ],
      ...(status === 'failed' ? { error: 'Step second failed' } : {}),
      files: [
        { fileKey: 'out', filename: 'out.txt', contentType: 'text/plain', size: 2, contentBase64: 'aGk=' },
      ],
    },
  });

  it('writes the terminal state once, with files and effects, then drops the runtime credentials', async () => {
    const token = await api.startRun('result-a', TOOL, {
      credentials: { k: 'v' },
      options: { webhookUrl: 'https://hooks.test/done' },
    });
    const path = INTERNAL_PATHS.result('result-a');
    expect(await call('PUT', path, token, result('success'))).toMatchObject({
      status: 200,
      body: { recorded: true, status: 'success' },
    });
    const run = await store.getRun('result-a');
    expect(run).toMatchObject({ status: 'success', fileArtifacts: [{ fileKey: 'out', size: 2 }] });
    expect(await store.getRunResult('result-a')).toMatchObject({ success: true, data: { ok: true } });
    expect(Buffer.from((await store.getRunFile('result-a', 'out'))?.content ?? []).toString()).toBe('hi');
    expect(await store.getStepResults('result-a')).toHaveLength(2);
    expect(api.dropped).toContain('result-a');
    expect(api.credentials.has('result-a')).toBe(false);
    const notify = (await store.claimOutbox({ limit: 100, leaseMs: 1000 })).filter(
      (r) => r.runId === 'result-a',
    );
    expect(notify.map((row) => row.kind)).toEqual(['notify']);

    // A resend (lost answer) or a second result changes nothing.
    expect(await call('PUT', path, token, result('failed'))).toMatchObject({
      status: 200,
      body: { recorded: false, status: 'success' },
    });
    expect((await store.getRun('result-a'))?.status).toBe('success');
  });

  it('leaves a cancelled run aborted', async () => {
    const token = await api.startRun('result-cancelled', TOOL);
    await store.abortRun('result-cancelled', {
      error: 'Run was cancelled',
      completedAt: new Date().toISOString(),
    });
    expect(
      await call('PUT', INTERNAL_PATHS.result('result-cancelled'), token, result('success')),
    ).toMatchObject({
      status: 200,
      body: { recorded: false, status: 'aborted' },
    });
    expect(await store.getRun('result-cancelled')).toMatchObject({
      status: 'aborted',
      error: 'Run was cancelled',
    });
    expect(await store.getRunResult('result-cancelled')).toBeUndefined();
  });

  it('refuses a malformed result and one larger than the body limit', async () => {
    const token = await api.startRun('result-bad', TOOL);
    const path = INTERNAL_PATHS.result('result-bad');
    const malformed = await call('PUT', path, token, { attempt: 1, result: { status: 'done' } });
    expect(malformed.status).toBe(400);
    const large = await call('PUT', path, token, result('success', 'x'.repeat(100 * 1024)));
    expect(large.status).toBe(413);
    expect(codeOf(large)).toBe('KG_ERR_BODY_TOO_LARGE');
    expect((await store.getRun('result-bad'))?.status).toBe('running');
  });
});
