import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type HandlerOutcome,
  OutboxDelivery,
  type OutboxDeliveryOptions,
  type OutboxQueue,
  type OutboxRow,
} from '../../../operator/outbox/outbox.ts';
import { JobSupervisor } from '../../../platform/supervisor.ts';
import { openStore, type Store } from '../../../store/index.ts';

interface Recorded {
  completed: number[];
  retried: Array<{ id: number; error: string }>;
  abandoned: Array<{ id: number; error: string }>;
}

/** The real store, with the outcomes the loop records kept for the assertions. */
function recording(store: Store): { queue: OutboxQueue; recorded: Recorded } {
  const recorded: Recorded = { completed: [], retried: [], abandoned: [] };
  const queue: OutboxQueue = {
    claimOutbox: (opts) => store.claimOutbox(opts),
    onOutbox: (listener) => store.onOutbox(listener),
    completeOutbox: async (id) => {
      await store.completeOutbox(id);
      recorded.completed.push(id);
    },
    retryOutbox: async (id, retry) => {
      await store.retryOutbox(id, retry);
      recorded.retried.push({ id, error: retry.error });
    },
    abandonOutbox: async (id, error) => {
      await store.abandonOutbox(id, error);
      recorded.abandoned.push({ id, error });
    },
  };
  return { queue, recorded };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const WAIT = { timeout: 10_000, interval: 10 };

describe('outbox delivery loop', () => {
  let store: Store;
  const loops: OutboxDelivery[] = [];

  // A fresh database per test: rows a test leaves behind (retries scheduled later) never reach the next one.
  beforeEach(async () => {
    store = await openStore({ driver: 'sqlite', path: ':memory:' });
  });
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((loop) => loop.stop()));
    await store.close();
  });

  function startLoop(
    options: Omit<OutboxDeliveryOptions, 'store'> & { store?: OutboxQueue },
  ): OutboxDelivery {
    const loop = new OutboxDelivery({ store, log: () => {}, ...options });
    loops.push(loop);
    return loop;
  }

  it('is woken by an enqueue without waiting for its poll', async () => {
    const seen: OutboxRow[] = [];
    const loop = startLoop({
      pollMs: 3_600_000,
      handlers: {
        test: async (row) => {
          seen.push(row);
          return { done: true };
        },
      },
    });
    await loop.start();
    const [id] = await store.enqueueOutbox([{ kind: 'test', runId: 'run-1', payload: { n: 1 } }]);
    await vi.waitFor(() => expect(seen).toHaveLength(1), WAIT);
    expect(seen[0]).toMatchObject({ id, kind: 'test', runId: 'run-1', payload: { n: 1 }, attempts: 1 });
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
  });

  it('keeps delivering after a handler throws, retrying that row, and logs without payload data', async () => {
    const lines: string[] = [];
    const calls: Array<{ n: number; attempts: number }> = [];
    const { queue, recorded } = recording(store);
    const loop = startLoop({
      store: queue,
      pollMs: 20,
      retryDelayMs: () => 0,
      log: (line) => lines.push(line),
      handlers: {
        test: async (row) => {
          calls.push({ n: Number(row.payload.n), attempts: row.attempts });
          if (row.payload.n === 1 && row.attempts === 1) throw new Error('handler bug');
          return { done: true };
        },
      },
    });
    const [first, second] = await store.enqueueOutbox([
      { kind: 'test', payload: { n: 1, secret: 'payload-secret-value' } },
      { kind: 'test', payload: { n: 2 } },
    ]);
    await loop.start();
    await vi.waitFor(() => expect(recorded.completed.sort()).toEqual([first, second]), WAIT);
    expect(calls).toContainEqual({ n: 1, attempts: 1 });
    expect(calls).toContainEqual({ n: 1, attempts: 2 });
    expect(recorded.retried).toEqual([{ id: first, error: 'handler bug' }]);
    expect(lines.some((line) => line.includes('failed (1 in a row)') && line.includes('handler bug'))).toBe(
      true,
    );
    expect(lines.join('\n')).not.toContain('payload-secret-value');
  });

  it('gives a row up as dead after KUBEGLUE_JOB_MAX_FAILURES failures in a row, and tells its kind', async () => {
    const lines: string[] = [];
    const { queue, recorded } = recording(store);
    const dead: Array<{ id: number; reason: string }> = [];
    let calls = 0;
    const loop = startLoop({
      store: queue,
      pollMs: 20,
      jobs: new JobSupervisor({
        settings: { maxFailures: 3, retryDelayMs: 1 },
        log: (line) => lines.push(line),
      }),
      log: (line) => lines.push(line),
      handlers: {
        start: async () => {
          calls += 1;
          throw new Error('the API server refused the ToolRun');
        },
      },
      onDead: {
        start: async (row, reason) => {
          dead.push({ id: row.id, reason });
        },
      },
    });
    const [id] = await store.enqueueOutbox([{ kind: 'start', runId: 'run-1', payload: {} }]);
    await loop.start();
    const reason =
      'dead after 3 failed attempts in a row (KUBEGLUE_JOB_MAX_FAILURES): the API server refused the ToolRun';
    await vi.waitFor(() => expect(dead).toEqual([{ id, reason }]), WAIT);
    expect(recorded.abandoned).toEqual([{ id, error: reason }]);
    expect(recorded.retried.map((retry) => retry.error)).toEqual([
      'the API server refused the ToolRun',
      'the API server refused the ToolRun',
    ]);
    expect(calls).toBe(3);
    expect(await store.outboxBacklog()).toBe(0);
    expect(lines).toContainEqual(
      expect.stringContaining('failed 3 times in a row (KUBEGLUE_JOB_MAX_FAILURES); given up'),
    );
  });

  it('abandons rows of a kind it has no handler for', async () => {
    const { queue, recorded } = recording(store);
    const lines: string[] = [];
    const loop = startLoop({ store: queue, pollMs: 20, log: (line) => lines.push(line), handlers: {} });
    const [id] = await store.enqueueOutbox([{ kind: 'mystery', payload: {} }]);
    await loop.start();
    await vi.waitFor(() => expect(recorded.abandoned).toHaveLength(1), WAIT);
    expect(recorded.abandoned[0]).toEqual({ id, error: 'no handler for outbox rows of kind "mystery"' });
    expect(lines.join('\n')).toContain('mystery');
    expect(await store.outboxBacklog()).toBe(0);
  });

  it('records retry and abandon outcomes returned by handlers', async () => {
    const { queue, recorded } = recording(store);
    const later = new Date(Date.now() + 3_600_000);
    const loop = startLoop({
      store: queue,
      pollMs: 20,
      handlers: {
        later: async (): Promise<HandlerOutcome> => ({ retryAt: later, error: 'not yet' }),
        never: async (): Promise<HandlerOutcome> => ({ abandon: 'pointless' }),
      },
    });
    const [laterId, neverId] = await store.enqueueOutbox([
      { kind: 'later', payload: {} },
      { kind: 'never', payload: {} },
    ]);
    await loop.start();
    await vi.waitFor(() => expect(recorded.abandoned).toEqual([{ id: neverId, error: 'pointless' }]), WAIT);
    await vi.waitFor(() => expect(recorded.retried).toEqual([{ id: laterId, error: 'not yet' }]), WAIT);
    expect(await store.outboxBacklog()).toBe(1);
    // Not due before retryAt: a claim now finds nothing.
    expect(await store.claimOutbox({ limit: 10, leaseMs: 1000 })).toEqual([]);
  });

  it('redelivers a row whose claimer died once its lease runs out', async () => {
    const [id] = await store.enqueueOutbox([{ kind: 'test', payload: {} }]);
    // A process claims the row and dies without reporting.
    const leaseMs = 300;
    const claimedAt = Date.now();
    const claimed = await store.claimOutbox({ limit: 10, leaseMs });
    expect(claimed.map((row) => row.id)).toEqual([id]);

    const seen: Array<{ row: OutboxRow; at: number }> = [];
    const loop = startLoop({
      pollMs: 20,
      handlers: {
        test: async (row) => {
          seen.push({ row, at: Date.now() });
          return { done: true };
        },
      },
    });
    await loop.start();
    await vi.waitFor(() => expect(seen).toHaveLength(1), WAIT);
    expect(seen[0]?.row).toMatchObject({ id, attempts: 2 });
    expect(seen[0]!.at - claimedAt).toBeGreaterThanOrEqual(leaseMs - 50);
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
  });

  it('runs at most `concurrency` handlers at a time and delivers every row', async () => {
    const gate = deferred();
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    const loop = startLoop({
      pollMs: 20,
      concurrency: 3,
      handlers: {
        test: async (row) => {
          active++;
          peak = Math.max(peak, active);
          await gate.promise;
          active--;
          done.push(row.id);
          return { done: true };
        },
      },
    });
    const ids = await store.enqueueOutbox(
      Array.from({ length: 10 }, (_, n) => ({ kind: 'test', payload: { n } })),
    );
    await loop.start();
    await vi.waitFor(() => expect(active).toBe(3), WAIT);
    gate.resolve();
    await vi.waitFor(() => expect(done.sort((a, b) => a - b)).toEqual(ids), WAIT);
    expect(peak).toBe(3);
    await vi.waitFor(async () => expect(await store.outboxBacklog()).toBe(0), WAIT);
  });

  it('stop waits for handlers in flight and records their outcome', async () => {
    const gate = deferred();
    let started = false;
    const loop = startLoop({
      pollMs: 20,
      handlers: {
        test: async () => {
          started = true;
          await gate.promise;
          return { done: true };
        },
      },
    });
    await store.enqueueOutbox([{ kind: 'test', payload: {} }]);
    await loop.start();
    await vi.waitFor(() => expect(started).toBe(true), WAIT);
    let stopped = false;
    const stopping = loop.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(await store.outboxBacklog()).toBe(0);
  });
});
