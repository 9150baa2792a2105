import { describe, expect, it } from 'vitest';
import { FairQueue, RECOVERY_EVALUATIONS } from '../../../../engine/sandbox/fair-queue.ts';

interface TestJob {
  key: string;
  tool: string;
  settled: boolean;
  name: string;
}

function job(key: string, tool: string, name = `${key}/${tool}`): TestJob {
  return { key, tool, settled: false, name };
}

/** Takes jobs until the caps hold the rest back; answers their names. */
function takeAll(queue: FairQueue<TestJob>): string[] {
  const names: string[] = [];
  for (let next = queue.take(); next !== undefined; next = queue.take()) names.push(next.name);
  return names;
}

describe('FairQueue (the sandbox scheduler)', () => {
  it('serves keys round-robin: one key’s backlog does not stand in front of another key’s job', () => {
    const queue = new FairQueue<TestJob>(100);
    for (let i = 0; i < 5; i++) queue.push(job('a', 't', `a${i}`));
    queue.push(job('b', 't', 'b0'));
    queue.push(job('c', 't', 'c0'));
    expect(takeAll(queue)).toEqual(['a0', 'b0', 'c0', 'a1', 'a2', 'a3', 'a4']);
  });

  it('counts a key’s running jobs while none of its jobs waits', () => {
    const queue = new FairQueue<TestJob>(2);
    for (const name of ['a0', 'a1', 'a2']) {
      queue.push(job('a', 't', name));
      takeAll(queue);
    }
    // a0 and a1 run; a2 waits although it was alone in the queue.
    expect(queue.size).toBe(1);
  });

  it('serves the tools of a key round-robin', () => {
    const queue = new FairQueue<TestJob>(100);
    for (let i = 0; i < 3; i++) queue.push(job('a', 'loop', `loop${i}`));
    queue.push(job('a', 'quick', 'quick0'));
    expect(takeAll(queue)).toEqual(['loop0', 'quick0', 'loop1', 'loop2']);
  });

  it('runs at most keyConcurrency jobs of one key at once, and lets other keys past it', () => {
    const queue = new FairQueue<TestJob>(2);
    const a = [job('a', 't', 'a0'), job('a', 't', 'a1'), job('a', 't', 'a2'), job('a', 't', 'a3')];
    for (const j of a) queue.push(j);
    expect(takeAll(queue)).toEqual(['a0', 'a1']);
    queue.push(job('b', 't', 'b0'));
    // a2 and a3 wait for a's running jobs; b0 does not wait for them.
    expect(takeAll(queue)).toEqual(['b0']);
    queue.finished(a[0] as TestJob, false);
    expect(takeAll(queue)).toEqual(['a2']);
    expect(queue.size).toBe(1);
  });

  it('slows a tool whose evaluation timed out to one at a time, and not the key’s other tools', () => {
    const queue = new FairQueue<TestJob>(2);
    const first = job('a', 'loop', 'loop0');
    const second = job('a', 'loop', 'loop1');
    queue.push(first);
    queue.push(second);
    expect(takeAll(queue)).toEqual(['loop0', 'loop1']);
    queue.finished(first, true);
    expect(queue.toolLimit('a', 'loop')).toBe(1);
    queue.push(job('a', 'loop', 'loop2'));
    queue.push(job('a', 'quick', 'quick0'));
    // loop1 still runs: loop2 waits although the key could run one more; quick0 takes that place.
    expect(takeAll(queue)).toEqual(['quick0']);
    queue.finished(second, true);
    expect(takeAll(queue)).toEqual(['loop2']);
    // Another key's evaluations of a tool with the same id are not slowed.
    expect(queue.toolLimit('b', 'loop')).toBe(Number.POSITIVE_INFINITY);
  });

  it(`lets a slowed tool recover after ${RECOVERY_EVALUATIONS} evaluations in time per step`, () => {
    const queue = new FairQueue<TestJob>(3);
    const timedOut = job('a', 't');
    queue.push(timedOut);
    queue.take();
    queue.finished(timedOut, true);
    const limits: number[] = [];
    for (let i = 0; i < 2 * RECOVERY_EVALUATIONS; i++) {
      const next = job('a', 't');
      queue.push(next);
      expect(queue.take()).toBe(next);
      queue.finished(next, false);
      limits.push(queue.toolLimit('a', 't'));
    }
    // 1 at once, then 2, then only the key's cap (3) again.
    const expected = [
      ...Array<number>(RECOVERY_EVALUATIONS - 1).fill(1),
      ...Array<number>(RECOVERY_EVALUATIONS).fill(2),
      Number.POSITIVE_INFINITY,
    ];
    expect(limits).toEqual(expected);
  });

  it('drops jobs settled while waiting (aborted) without running them', () => {
    const queue = new FairQueue<TestJob>(1);
    const aborted = job('a', 't', 'aborted');
    queue.push(aborted);
    queue.push(job('a', 't', 'next'));
    aborted.settled = true;
    expect(takeAll(queue)).toEqual(['next']);
    expect(queue.size).toBe(0);
  });

  it('hands back every waiting job on clear', () => {
    const queue = new FairQueue<TestJob>(1);
    queue.push(job('a', 't', 'a0'));
    queue.push(job('a', 'u', 'a1'));
    queue.push(job('b', 't', 'b0'));
    expect(queue.clear().map((j) => j.name)).toEqual(['a0', 'a1', 'b0']);
    expect(queue.size).toBe(0);
    expect(queue.take()).toBeUndefined();
  });
});
