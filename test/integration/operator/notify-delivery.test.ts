import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import {
  createNotifyHandler,
  type NotifyDeps,
  type NotifyHandler,
  verifySignature,
} from '../../../operator/outbox/notify.ts';
import { OutboxDelivery } from '../../../operator/outbox/outbox.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

const KEY = Buffer.from('another test key for deliveries!');
const WAIT = { timeout: 10_000, interval: 10 };

function renderedRun(runId: string): JsonObject {
  return { runId, toolId: 'tool-a', status: 'failed', error: 'step x failed', metadata: {} };
}

describe('notifications through the outbox', () => {
  let target: HttpTarget;
  let store: Store;
  let loop: OutboxDelivery | undefined;
  let notify: NotifyHandler | undefined;
  let lines: string[];

  beforeAll(async () => {
    target = await startHttpTarget();
  });
  beforeEach(async () => {
    store = await openStore({ driver: 'sqlite', path: ':memory:' });
    lines = [];
  });
  afterEach(async () => {
    await loop?.stop();
    await notify?.close();
    await store.close();
    target.reset();
  });
  afterAll(async () => {
    await target.stop();
  });

  async function startDelivery(deps: Partial<NotifyDeps> = {}): Promise<void> {
    notify = createNotifyHandler({
      renderRun: async (runId) => renderedRun(runId),
      signingKey: KEY,
      allowPrivate: true,
      retryDelaysMs: [20],
      ...deps,
    });
    loop = new OutboxDelivery({ store, handlers: { notify }, pollMs: 20, log: (line) => lines.push(line) });
    await loop.start();
  }

  it('delivers a signed notification once', async () => {
    target.route('POST', '/hook', { status: 200 });
    await startDelivery();
    await store.enqueueOutbox([{ kind: 'notify', runId: 'run-7', payload: { url: `${target.url}/hook` } }]);
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
    expect(target.requests).toHaveLength(1);
    const request = target.requests[0]!;
    expect(request.json).toEqual(renderedRun('run-7'));
    expect(request.headers['webhook-id']).toBe('msg_run-7');
    expect(verifySignature(KEY, request.headers, request.body)).toBe(true);
  });

  it('retries after a 500 and delivers with the same webhook-id', async () => {
    let calls = 0;
    target.route('POST', '/flaky', () => (++calls === 1 ? { status: 500, body: 'oops' } : { status: 204 }));
    await startDelivery();
    await store.enqueueOutbox([{ kind: 'notify', runId: 'run-8', payload: { url: `${target.url}/flaky` } }]);
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
    expect(target.requests).toHaveLength(2);
    for (const request of target.requests) {
      expect(request.headers['webhook-id']).toBe('msg_run-8');
      expect(verifySignature(KEY, request.headers, request.body)).toBe(true);
    }
  });

  it('gives up on a loopback receiver when private targets are not allowed', async () => {
    target.route('POST', '/hook', { status: 200 });
    await startDelivery({ allowPrivate: false });
    await store.enqueueOutbox([{ kind: 'notify', runId: 'run-9', payload: { url: `${target.url}/hook` } }]);
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
    expect(target.requests).toHaveLength(0);
    expect(lines.join('\n')).toContain('loopback');
  });
});
