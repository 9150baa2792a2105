/**
 * The pools of one connection protocol in a process, by key: a key holds everything a connection depends
 * on (address, database, user, a digest of the password, TLS settings, the egress rules or gateway it was
 * judged under), so connections are never shared across credentials, databases or egress rules. At most
 * `maxPools` are kept; using one makes it the most recent, and past the bound the least recently used is
 * closed (a pool's close lets its running steps finish).
 */
/**
 * How much a process keeps open to the servers of one pooling protocol (Postgres, MySQL, Redis): at most
 * `maxPools` pools (one per login, database, TLS settings and egress rules), each of at most
 * `connectionsPerPool` connections, an idle one closed after `idleMs` (docs/mysql.md, docs/redis.md).
 */
export const POOL_BOUNDS = { maxPools: 32, connectionsPerPool: 5, idleMs: 30_000 } as const;

export class PoolRegistry<P> {
  /** Insertion order = recency: a used entry is re-inserted at the end; the first one is evicted. */
  readonly #pools = new Map<string, P>();
  readonly #maxPools: number;
  readonly #close: (pool: P) => Promise<void> | void;

  constructor(maxPools: number, close: (pool: P) => Promise<void> | void) {
    this.#maxPools = maxPools;
    this.#close = close;
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
    while (this.#pools.size > this.#maxPools) {
      const [oldestKey, oldest] = this.#pools.entries().next().value as [string, P];
      this.#pools.delete(oldestKey);
      void Promise.resolve(this.#close(oldest)).catch(() => {});
    }
    return pool;
  }

  get size(): number {
    return this.#pools.size;
  }

  values(): P[] {
    return [...this.#pools.values()];
  }

  /** Closes every pool (shutdown, tests). */
  async closeAll(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => Promise.resolve(this.#close(pool)).catch(() => {})));
  }
}
