/** A bounded map that evicts the least recently used entry (Map keeps insertion order). */
export class LruCache<K, V> {
  readonly #capacity: number;
  readonly #entries = new Map<K, V>();
  readonly #onEvict: ((value: V) => void) | undefined;

  constructor(capacity: number, onEvict?: (value: V) => void) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('LRU capacity must be a positive integer');
    this.#capacity = capacity;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    const previous = this.#entries.get(key);
    this.#entries.delete(key);
    if (previous !== undefined && previous !== value) this.#onEvict?.(previous);
    this.#entries.set(key, value);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      const evicted = this.#entries.get(oldest.value);
      this.#entries.delete(oldest.value);
      if (evicted !== undefined) this.#onEvict?.(evicted);
    }
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  /** Forgets every entry without calling onEvict (the owner discards them wholesale). */
  clear(): void {
    this.#entries.clear();
  }
}
