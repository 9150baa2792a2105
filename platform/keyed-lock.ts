/**
 * Runs async work one at a time per key within this process: a call waits for the calls of the same key
 * made before it (whether they succeeded or threw); calls of other keys run alongside. A key's entry goes
 * once its last call ends, so keys cost nothing while idle.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release = () => {};
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => done);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
