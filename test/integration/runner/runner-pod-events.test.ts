import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_PATHS, RunnerAck } from '../../../contract/wire/runner.ts';
import type { EngineEvent } from '../../../engine/types.ts';
import { InternalClient } from '../../../runner/pod-client.ts';
import { EventShipper } from '../../../runner/pod-events.ts';
import type { Store } from '../../../store/index.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { openTestStore } from '../../support/store.ts';

const TOOL = { id: 'tool-a', steps: [{ id: 'first', config: { url: 'http://example.test/' } }] };

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;
/** Per run id: what the test does to its event posts. */
const loseAnswer = new Set<string>();
const delayMs = new Map<string, number>();
const posts = new Map<string, number>();

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  api = createInternalApi(store);
  api.app.addHook('onRequest', async (request) => {
    const { runId } = request.params as { runId?: string };
    if (!runId || request.method !== 'POST' || request.url !== INTERNAL_PATHS.events(runId)) return;
    posts.set(runId, (posts.get(runId) ?? 0) + 1);
    await sleep(delayMs.get(runId) ?? 0);
  });
  // The batch is applied, then its answer is lost on the way back.
  api.app.addHook('onSend', async (request, reply, payload) => {
    const { runId } = request.params as { runId?: string };
    if (!runId || !loseAnswer.delete(runId) || request.url !== INTERNAL_PATHS.events(runId)) return payload;
    void reply.status(503);
    return JSON.stringify({ error: { message: 'lost' } });
  });
  await api.listen();
});

afterAll(async () => {
  await api?.close();
  await closeStore?.();
});

function shipper(
  runId: string,
  token: string,
  opts: { maxBuffered?: number; onStop?: (reason: string) => void } = {},
) {
  const client = new InternalClient({ baseUrl: api.url, token, requestTimeoutMs: 5_000 });
  const lines: string[] = [];
  const events = new EventShipper({
    attempt: 1,
    post: (batch) => client.call('POST', INTERNAL_PATHS.events(runId), RunnerAck, batch),
    maxBuffered: opts.maxBuffered ?? 100,
    onStop: opts.onStop ?? (() => {}),
    log: (line) => lines.push(line),
  });
  return { events, lines, close: () => client.close() };
}

const stepFinished = (stepId: string): EngineEvent => ({
  type: 'step_finished',
  result: { stepId, success: true, data: { stepId } },
});

describe('runner pod events', () => {
  it('resends a batch whose answer was lost with the same numbers, and it is applied once', async () => {
    const token = await api.startRun('ev-lost', TOOL);
    loseAnswer.add('ev-lost');
    const { events, close } = shipper('ev-lost', token);
    // Applied twice, the step result would appear twice (at the next seq).
    events.push(stepFinished('first'));
    expect(await events.close(5_000)).toBe(true);
    await close();
    expect(posts.get('ev-lost')).toBe(2);
    expect(await store.getStepResults('ev-lost')).toEqual([
      { stepId: 'first', success: true, data: { stepId: 'first' } },
    ]);
    expect((await store.getRunnerAttempt('ev-lost'))?.lastSeq).toBe(1);
  });

  it('never waits for the API: while it lags the oldest progress events go, step results stay', async () => {
    const token = await api.startRun('ev-lag', TOOL);
    delayMs.set('ev-lag', 300);
    const { events, lines, close } = shipper('ev-lag', token, { maxBuffered: 5 });
    const started = performance.now();
    events.push({ type: 'step_started', stepId: 'first' });
    for (let page = 1; page <= 30; page++)
      events.push({ type: 'page_fetched', stepId: 'first', page, totalFetched: page });
    events.push(stepFinished('first'));
    events.push(stepFinished('second'));
    expect(performance.now() - started).toBeLessThan(50);
    expect(await events.close(5_000)).toBe(true);
    await close();
    expect(lines).toEqual(['the internal API lags; dropping progress events']);
    // The first event went at once; of the 30 pages only the newest 5 waited, beside both step results.
    expect((await store.getRunnerAttempt('ev-lag'))?.lastSeq).toBe(1 + 5 + 2);
    expect((await store.getStepResults('ev-lag')).map((step) => step.stepId)).toEqual(['first', 'second']);
  });

  it('asks to stop the run when an answer says cancel, and sends nothing more', async () => {
    const token = await api.startRun('ev-cancel', TOOL);
    await store.abortRun('ev-cancel', { error: 'Run was cancelled', completedAt: new Date().toISOString() });
    const reasons: string[] = [];
    const { events, close } = shipper('ev-cancel', token, { onStop: (reason) => reasons.push(reason) });
    events.push(stepFinished('first'));
    await events.close(5_000);
    events.push(stepFinished('second'));
    await close();
    expect(reasons).toEqual(['the run was cancelled']);
    expect(posts.get('ev-cancel')).toBe(1);
    expect(await store.getStepResults('ev-cancel')).toEqual([]);
  });

  it('gives up on delivery at close when the API does not answer in time', async () => {
    const token = await api.startRun('ev-slow', TOOL);
    delayMs.set('ev-slow', 2_000);
    const { events, close } = shipper('ev-slow', token);
    events.push(stepFinished('first'));
    expect(await events.close(200)).toBe(false);
    await close();
  });
});
