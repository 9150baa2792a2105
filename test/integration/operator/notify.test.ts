import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import {
  createNotifyHandler,
  type NotifyDeps,
  type NotifyHandler,
  verifySignature,
} from '../../../operator/outbox/notify.ts';
import type { OutboxRow } from '../../../operator/outbox/outbox.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

const KEY = Buffer.from('test signing key, 32 bytes long!');
const RUN: JsonObject = {
  runId: 'run-1',
  toolId: 'tool-a',
  status: 'success',
  data: { greeting: 'hello' },
  metadata: {
    startedAt: '2026-03-01T10:00:00.000Z',
    completedAt: '2026-03-01T10:00:01.000Z',
    durationMs: 1000,
  },
};

function notifyRow(url: string, overrides: Partial<OutboxRow> = {}): OutboxRow {
  return {
    id: 1,
    kind: 'notify',
    runId: 'run-1',
    payload: { url },
    attempts: 1,
    failures: 1,
    createdAt: new Date().toISOString(),
    lastError: null,
    ...overrides,
  };
}

describe('notify handler', () => {
  let target: HttpTarget;
  const handlers: NotifyHandler[] = [];

  beforeAll(async () => {
    target = await startHttpTarget();
  });
  afterEach(async () => {
    await Promise.all(handlers.splice(0).map((handler) => handler.close()));
    target.reset();
  });
  afterAll(async () => {
    await target.stop();
  });

  function handler(overrides: Partial<NotifyDeps> = {}): NotifyHandler {
    const created = createNotifyHandler({
      renderRun: async (runId) => (runId === 'run-1' ? RUN : undefined),
      signingKey: KEY,
      allowPrivate: true,
      ...overrides,
    });
    handlers.push(created);
    return created;
  }

  it('posts the run as JSON with Standard Webhooks headers and a valid signature', async () => {
    target.route('POST', '/hook', { status: 204 });
    const outcome = await handler()(notifyRow(`${target.url}/hook`));
    expect(outcome).toEqual({ done: true });
    expect(target.requests).toHaveLength(1);
    const request = target.requests[0]!;
    expect(request.json).toEqual(RUN);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('kubeglue');
    expect(request.headers['webhook-id']).toBe('msg_run-1');
    expect(request.headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifySignature(KEY, request.headers, request.body)).toBe(true);
    expect(verifySignature(Buffer.from('wrong key'), request.headers, request.body)).toBe(false);
  });

  it('retries a non-2xx answer with growing delays, keeping the error free of the URL path', async () => {
    target.route('POST', '/hooks/secret-path', { status: 500, body: 'down' });
    const now = Date.parse('2026-03-01T12:00:00.000Z');
    const notify = handler({ now: () => now });
    const url = `${target.url}/hooks/secret-path?token=hunter22`;
    const createdAt = new Date(now - 1000).toISOString();
    const delays = [];
    for (const attempts of [1, 2, 3, 4, 5, 6, 9]) {
      const outcome = await notify(notifyRow(url, { attempts, createdAt }));
      if (!('retryAt' in outcome)) throw new Error(`expected a retry, got ${JSON.stringify(outcome)}`);
      expect(outcome.error).toContain('HTTP 500');
      expect(outcome.error).not.toContain('secret-path');
      expect(outcome.error).not.toContain('hunter22');
      delays.push(outcome.retryAt.getTime() - now);
    }
    expect(delays).toEqual([5_000, 30_000, 120_000, 600_000, 3_600_000, 3_600_000, 3_600_000]);
    expect(target.count('/hooks/secret-path')).toBe(7);
  });

  it('waits at least as long as Retry-After asks', async () => {
    target.route('POST', '/busy', { status: 429, headers: { 'retry-after': '120' } });
    const now = Date.now();
    const outcome = await handler({ now: () => now })(notifyRow(`${target.url}/busy`));
    expect(outcome).toMatchObject({ error: expect.stringContaining('HTTP 429') });
    expect('retryAt' in outcome && outcome.retryAt.getTime() - now).toBe(120_000);
  });

  it('makes the last retry at the 24 h mark and then gives up', async () => {
    target.route('POST', '/down', { status: 503 });
    const createdAt = Date.parse('2026-03-01T00:00:00.000Z');
    const nearlyADayLater = createdAt + 24 * 3_600_000 - 60_000;
    const late = await handler({ now: () => nearlyADayLater })(
      notifyRow(`${target.url}/down`, { attempts: 20, createdAt: new Date(createdAt).toISOString() }),
    );
    expect('retryAt' in late && late.retryAt.getTime()).toBe(createdAt + 24 * 3_600_000);

    const dayLater = createdAt + 24 * 3_600_000;
    const last = await handler({ now: () => dayLater })(
      notifyRow(`${target.url}/down`, { attempts: 21, createdAt: new Date(createdAt).toISOString() }),
    );
    expect(last).toEqual({ abandon: expect.stringContaining('HTTP 503') });
    expect('abandon' in last && last.abandon).toContain('gave up after 21 attempts');
  });

  it('retries when the receiver does not answer in time', async () => {
    target.route('POST', '/hang', () => undefined);
    const outcome = await handler({ timeoutMs: 200 })(notifyRow(`${target.url}/hang`));
    expect(outcome).toMatchObject({ error: expect.stringContaining('did not answer within 200 ms') });
    expect('retryAt' in outcome).toBe(true);
  });

  it('retries when nothing listens at the address', async () => {
    const closed = await startHttpTarget();
    const url = `${closed.url}/hook`;
    await closed.stop();
    const outcome = await handler()(notifyRow(url));
    expect(outcome).toMatchObject({ error: expect.stringContaining('ECONNREFUSED') });
  });

  it('abandons a private target without sending unless private targets are allowed', async () => {
    target.route('POST', '/hook', { status: 200 });
    const outcome = await handler({ allowPrivate: false })(notifyRow(`${target.url}/hook?token=hunter22`));
    expect(outcome).toEqual({ abandon: expect.stringContaining('loopback') });
    expect(JSON.stringify(outcome)).not.toContain('hunter22');
    expect(target.requests).toHaveLength(0);
  });

  it('abandons non-http URLs, rows without a url and runs that are gone', async () => {
    const notify = handler();
    expect(await notify(notifyRow('ftp://example.com/x'))).toEqual({
      abandon: expect.stringContaining('only http and https'),
    });
    expect(await notify(notifyRow('::not a url::'))).toEqual({
      abandon: expect.stringContaining('not a valid URL'),
    });
    expect(await notify({ ...notifyRow(''), payload: {} })).toEqual({
      abandon: expect.stringContaining('url'),
    });
    target.route('POST', '/hook', { status: 200 });
    expect(await notify(notifyRow(`${target.url}/hook`, { runId: 'run-gone' }))).toEqual({
      abandon: 'run run-gone no longer exists',
    });
    expect(target.requests).toHaveLength(0);
  });

  it('sends URL user info as Basic authorization', async () => {
    target.route('POST', '/auth', { status: 200 });
    const url = new URL(`${target.url}/auth`);
    url.username = 'hook';
    url.password = 'p@ss';
    expect(await handler()(notifyRow(url.toString()))).toEqual({ done: true });
    expect(target.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('hook:p@ss').toString('base64')}`,
    );
  });

  it('does not follow redirects', async () => {
    target.route('POST', '/moved', { status: 307, headers: { location: '/hook' } });
    target.route('POST', '/hook', { status: 200 });
    const outcome = await handler()(notifyRow(`${target.url}/moved`));
    expect(outcome).toMatchObject({ error: expect.stringContaining('HTTP 307') });
    expect(target.count('/hook')).toBe(0);
  });
});
