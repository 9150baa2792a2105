/** Exponential backoff with jitter, and an abortable sleep: what every retry loop of the kit shares. */

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /**
   * Spread as a fraction of the delay (default 0.2: ±20 %), so many clients failing together (all watches
   * cut by one API server restart) do not come back together.
   */
  jitter?: number;
  /** Tests: a fixed source of randomness. */
  random?: () => number;
}

/** The delay before retry number `attempt` (0 = first retry). */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const { initialMs, maxMs, factor = 2, jitter = 0.2, random = Math.random } = options;
  const base = Math.min(initialMs * factor ** Math.max(0, attempt), maxMs);
  return Math.max(0, Math.round(Math.min(base * (1 + jitter * (random() * 2 - 1)), maxMs)));
}

/** A backoff that remembers how often in a row it was used. */
export class Backoff {
  readonly #options: BackoffOptions;
  #attempt = 0;

  constructor(options: BackoffOptions) {
    this.#options = options;
  }

  /** The next delay; each call lengthens the one after. */
  next(): number {
    return backoffDelay(this.#attempt++, this.#options);
  }

  reset(): void {
    this.#attempt = 0;
  }

  get attempts(): number {
    return this.#attempt;
  }
}

/** Resolves after ms, or at once when signal aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
