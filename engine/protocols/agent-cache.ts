import type { Dispatcher } from 'undici';

/**
 * Keep-alive agents by key, at most `capacity` of them: when one more is needed the oldest is closed
 * (close() lets its requests in flight finish first).
 */
export class AgentCache {
  readonly #agents = new Map<string, Dispatcher>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get(key: string, create: () => Dispatcher): Dispatcher {
    const existing = this.#agents.get(key);
    if (existing) return existing;
    const created = create();
    this.#agents.set(key, created);
    while (this.#agents.size > this.#capacity) {
      const [oldestKey, oldest] = this.#agents.entries().next().value as [string, Dispatcher];
      this.#agents.delete(oldestKey);
      void oldest.close().catch(() => {});
    }
    return created;
  }

  /** Closes every agent's sockets (shutdown, tests); the next get opens a new agent. */
  async closeAll(): Promise<void> {
    const current = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(current.map((agent) => agent.close()));
  }
}
