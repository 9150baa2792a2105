import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../../platform/keyed-lock.ts';

/** A promise the test resolves by hand. */
function gate() {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('KeyedLock', () => {
  it('runs the calls of one key one at a time, in the order they were made', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const first = gate();
    const a = lock.run('k', async () => {
      order.push('a start');
      await first.promise;
      order.push('a end');
    });
    const b = lock.run('k', async () => {
      order.push('b');
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(order).toEqual(['a start']);
    first.open();
    await Promise.all([a, b]);
    expect(order).toEqual(['a start', 'a end', 'b']);
  });

  it('runs calls of other keys alongside', async () => {
    const lock = new KeyedLock();
    const held = gate();
    const a = lock.run('a', () => held.promise);
    await expect(lock.run('b', async () => 'b done')).resolves.toBe('b done');
    held.open();
    await a;
  });

  it('lets the next call of a key run after one that threw, and hands each call its own outcome', async () => {
    const lock = new KeyedLock();
    const failed = lock.run('k', async () => {
      throw new Error('boom');
    });
    const next = lock.run('k', async () => 42);
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe(42);
  });
});
