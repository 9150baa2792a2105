/**
 * The connection pools of one protocol in one process, by key (the connection settings, the credentials,
 * the egress rules or gateway: connections are never shared across any of them), at most `max` of them:
 * the least recently used pool is ended when another is needed. Each pool closes its own idle connections.
 */
export class PoolRegistry<P> {
  readonly #max: number;
  readonly #end: (pool: P) => Promise<void>;
  /** Insertion order = recency: a used entry is re-inserted at the end; the first one is evicted. */
  readonly #pools = new Map<string, P>();

  constructor(max: number, end: (pool: P) => Promise<void>) {
    this.#max = max;
    this.#end = end;
  }

  /** The pool of `key`, made by `create` when there is none. */
  get(key: string, create: () => P): P {
    const existing = this.#pools.get(key);
    if (existing !== undefined) {
      this.#pools.delete(key);
      this.#pools.set(key, existing);
      return existing;
    }
    const pool = create();
    this.#pools.set(key, pool);
    while (this.#pools.size > this.#max) {
      const [oldestKey, oldest] = this.#pools.entries().next().value as [string, P];
      this.#pools.delete(oldestKey);
      // Ending waits for checked-out connections to come back, so a running step is not cut off.
      void this.#end(oldest).catch(() => {});
    }
    return pool;
  }

  /** Ends every pool (shutdown, tests). */
  async closeAll(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => this.#end(pool).catch(() => {})));
  }

  get size(): number {
    return this.#pools.size;
  }
}
