/**
 * A keyed work queue: a key added while it is queued is not added twice, and a key is never
 * processed by two workers at once (added again while processing, it runs once more afterwards).
 */
export class WorkQueue {
  readonly #process: (key: string) => Promise<void>;
  readonly #onError: (key: string, error: unknown) => void;
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  readonly #again = new Set<string>();
  #draining: Promise<void> | undefined;

  constructor(process: (key: string) => Promise<void>, onError: (key: string, error: unknown) => void) {
    this.#process = process;
    this.#onError = onError;
  }

  add(key: string): void {
    if (this.#active.has(key)) {
      this.#again.add(key);
      return;
    }
    this.#queued.add(key);
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
      if (this.#queued.size > 0) this.#draining = this.#drain();
    });
  }

  /** Resolves when nothing is queued or processing. */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    while (this.#queued.size > 0) {
      const key = this.#queued.values().next().value as string;
      this.#queued.delete(key);
      this.#active.add(key);
      try {
        await this.#process(key);
      } catch (error) {
        this.#onError(key, error);
      } finally {
        this.#active.delete(key);
        if (this.#again.delete(key)) this.#queued.add(key);
      }
    }
  }
}
