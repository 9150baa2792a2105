import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * An object that stands for what `current()` returns at each use: property reads and writes go there,
 * methods bound.
 */
export function standIn<T extends object>(current: () => T): T {
  return new Proxy({} as T, {
    get(_target, property) {
      const target = current();
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set: (_target, property, value) => Reflect.set(current(), property, value),
    has: (_target, property) => Reflect.has(current(), property),
  });
}

/**
 * Something the tests of the enclosing block share: started before them, stopped after them. A block is
 * declared before its hooks run, so what this returns stands for the started thing (see standIn). Call it
 * before the block's own hooks, so those run after the start and before the stop.
 */
export function useStarted<T extends object>(
  start: () => Promise<T> | T,
  stop: (started: T) => Promise<void> | void,
  startTimeoutMs?: number,
): T {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  }, startTimeoutMs);
  afterAll(async () => {
    if (started) await stop(started);
  });
  return standIn(() => {
    if (!started) throw new Error('started in beforeAll: use it in hooks and tests');
    return started;
  });
}

/** A fresh temporary folder for the tests of the enclosing block, removed after them. */
export function useTempDir(prefix: string): { readonly path: string } {
  return useStarted(
    async () => ({ path: await mkdtemp(join(tmpdir(), prefix)) }),
    (dir) => rm(dir.path, { recursive: true, force: true }),
  );
}
