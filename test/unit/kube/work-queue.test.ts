import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue } from '../../../kube/work-queue.ts';

/** A promise the test resolves by hand. */
function gate() {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const noJitter = () => 0.5;

describe('WorkQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('processes a key added many times while queued once', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => {
      seen.push(key);
    });
    queue.add('a');
    queue.add('a');
    queue.add('b');
    queue.add('a');
    await queue.idle();
    expect(seen).toEqual(['a', 'b']);
  });

  it('never processes one key twice at once; added while processing, it runs once more after', async () => {
    const running = new Set<string>();
    const gates = [gate(), gate()];
    let calls = 0;
    let overlapped = false;
    const queue = new WorkQueue(
      async (key) => {
        if (running.has(key)) overlapped = true;
        running.add(key);
        await gates[calls++]?.promise;
        running.delete(key);
      },
      undefined,
      { workers: 4 },
    );
    queue.add('k');
    await vi.advanceTimersByTimeAsync(0);
    queue.add('k');
    queue.add('k');
    expect(queue.stats()).toMatchObject({ processing: 1, queued: 0 });
    gates[0]?.open();
    await vi.advanceTimersByTimeAsync(0);
    gates[1]?.open();
    await queue.idle();
    expect(calls).toBe(2);
    expect(overlapped).toBe(false);
  });

  it('runs up to N keys at once', async () => {
    let active = 0;
    let most = 0;
    const release = gate();
    const queue = new WorkQueue(
      async () => {
        active++;
        most = Math.max(most, active);
        await release.promise;
        active--;
      },
      undefined,
      { workers: 3 },
    );
    for (const key of ['a', 'b', 'c', 'd', 'e']) queue.add(key);
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.stats()).toMatchObject({ processing: 3, queued: 2 });
    release.open();
    await queue.idle();
    expect(most).toBe(3);
  });

  it('retries a failing key with exponential backoff, never dropping it, and resets after success', async () => {
    const delays: number[] = [];
    let failuresLeft = 4;
    let successes = 0;
    const queue = new WorkQueue(
      async () => {
        if (failuresLeft-- > 0) throw new Error('not yet');
        successes++;
      },
      (_key, _error, retryInMs) => delays.push(retryInMs),
      { baseDelayMs: 100, maxDelayMs: 300, random: noJitter },
    );
    queue.add('k');
    await vi.advanceTimersByTimeAsync(0);
    expect(delays).toEqual([100]);
    expect(queue.failures('k')).toBe(1);
    expect(queue.stats()).toMatchObject({ delayed: 1, failing: 1 });
    await vi.advanceTimersByTimeAsync(99);
    expect(delays).toEqual([100]);
    await vi.advanceTimersByTimeAsync(1);
    expect(delays).toEqual([100, 200]);
    await vi.advanceTimersByTimeAsync(200);
    // Capped at maxDelayMs.
    expect(delays).toEqual([100, 200, 300]);
    await vi.advanceTimersByTimeAsync(300);
    expect(delays).toEqual([100, 200, 300, 300]);
    await vi.advanceTimersByTimeAsync(300);
    expect(successes).toBe(1);
    expect(queue.failures('k')).toBe(0);
    expect(queue.stats()).toEqual({ queued: 0, processing: 0, delayed: 0, failing: 0 });
  });

  it('spreads retries with jitter', async () => {
    const delays: number[] = [];
    const random = [0, 0.99];
    const queue = new WorkQueue(
      async () => {
        throw new Error('always');
      },
      (_key, _error, retryInMs) => delays.push(retryInMs),
      { baseDelayMs: 1000, random: () => random.shift() ?? 0.5 },
    );
    queue.add('a');
    queue.add('b');
    await vi.advanceTimersByTimeAsync(0);
    expect(delays[0]).toBeLessThan(1000);
    expect(delays[1]).toBeGreaterThan(1000);
    await queue.shutdown();
  });

  it('forget() makes the next failure wait the base delay again', async () => {
    const delays: number[] = [];
    const queue = new WorkQueue(
      async () => {
        throw new Error('always');
      },
      (_key, _error, retryInMs) => delays.push(retryInMs),
      { baseDelayMs: 100, random: noJitter },
    );
    queue.add('k');
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(delays).toEqual([100, 200]);
    queue.forget('k');
    queue.add('k');
    await vi.advanceTimersByTimeAsync(0);
    expect(delays).toEqual([100, 200, 100]);
    await queue.shutdown();
  });

  it('addAfter: runs the key later; the earlier of two times wins; an add is not delayed', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => {
      seen.push(key);
    });
    queue.addAfter('later', 1000);
    queue.addAfter('later', 5000);
    queue.addAfter('sooner', 1000);
    queue.addAfter('sooner', 200);
    await vi.advanceTimersByTimeAsync(199);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toEqual(['sooner']);
    await vi.advanceTimersByTimeAsync(800);
    expect(seen).toEqual(['sooner', 'later']);
    await vi.advanceTimersByTimeAsync(5000);
    expect(seen).toEqual(['sooner', 'later']);

    queue.addAfter('both', 1000);
    queue.add('both');
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual(['sooner', 'later', 'both']);
    // The scheduled run still comes: a deadline asked for is never lost.
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual(['sooner', 'later', 'both', 'both']);
  });

  it('keeps the old two-argument form: errors are reported and the key is retried', async () => {
    const errors: string[] = [];
    let calls = 0;
    const queue = new WorkQueue(
      async () => {
        if (++calls === 1) throw new Error('first');
      },
      (key, error) => errors.push(`${key}: ${(error as Error).message}`),
    );
    queue.add('k');
    await vi.advanceTimersByTimeAsync(1000);
    expect(errors).toEqual(['k: first']);
    expect(calls).toBe(2);
  });

  it('shutdown() waits for keys in flight and drops the rest', async () => {
    const release = gate();
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => {
      seen.push(`start ${key}`);
      await release.promise;
      seen.push(`end ${key}`);
    });
    queue.add('a');
    queue.add('b');
    queue.addAfter('c', 10);
    await vi.advanceTimersByTimeAsync(0);
    const stopped = queue.shutdown();
    let done = false;
    void stopped.then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(50);
    expect(done).toBe(false);
    release.open();
    await stopped;
    queue.add('d');
    await vi.advanceTimersByTimeAsync(50);
    expect(seen).toEqual(['start a', 'end a']);
  });
});
