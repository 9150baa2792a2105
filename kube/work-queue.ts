import { backoffDelay } from '../platform/backoff.ts';

export interface WorkQueueOptions {
  /** Keys processed at once (default 1); one key is never processed twice at once. */
  workers?: number;
  /** A failed key is retried after baseDelayMs, doubling per failure up to maxDelayMs (defaults 100 ms, 5 min). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Tests: a fixed source for the retry jitter. */
  random?: () => number;
}

export interface WorkQueueStats {
  /** Ready and waiting for a worker. */
  queued: number;
  processing: number;
  /** Waiting for their time (addAfter, or a retry after a failure). */
  delayed: number;
  /** Keys whose last processing failed (and that have not succeeded since). */
  failing: number;
}

/** Told of every failure, with the delay until the retry. */
export type WorkQueueErrorHandler = (key: string, error: unknown, retryInMs: number) => void;

interface Delayed {
  at: number;
  timer: NodeJS.Timeout;
  /** Scheduled by a failure: a later success makes it pointless. */
  retry: boolean;
}

/**
 * A keyed work queue as controllers use it: a key added while it is queued is not added twice; a key is
 * never processed by two workers at once (added again while processing, it runs once more afterwards); a
 * processing that throws is retried with per-key exponential backoff and jitter, never dropped; a success
 * resets the key's backoff (so does forget()).
 */
export class WorkQueue {
  readonly #process: (key: string) => Promise<void>;
  readonly #onError: WorkQueueErrorHandler;
  readonly #workers: number;
  readonly #backoff: { initialMs: number; maxMs: number; random?: () => number };
  readonly #order: string[] = [];
  readonly #queued = new Set<string>();
  readonly #processing = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  readonly #delayed = new Map<string, Delayed>();
  readonly #failures = new Map<string, number>();
  #idleWaiters: (() => void)[] = [];
  #shutDown = false;
  #pumpScheduled = false;

  constructor(
    process: (key: string) => Promise<void>,
    onError: WorkQueueErrorHandler = () => {},
    options: WorkQueueOptions = {},
  ) {
    this.#process = process;
    this.#onError = onError;
    this.#workers = Math.max(1, options.workers ?? 1);
    this.#backoff = {
      initialMs: options.baseDelayMs ?? 100,
      maxMs: options.maxDelayMs ?? 5 * 60_000,
      ...(options.random ? { random: options.random } : {}),
    };
  }

  /** Queues key now (a pending addAfter of it stays scheduled). */
  add(key: string): void {
    if (this.#shutDown) return;
    if (this.#processing.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#order.push(key);
    // Workers pick keys up in a microtask, so a burst of adds (one per event of a list) collapses first.
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      queueMicrotask(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
  }

  /** Queues key in ms; when it is already scheduled, the earlier time wins. */
  addAfter(key: string, ms: number): void {
    this.#schedule(key, ms, false);
  }

  /** Resets key's failure count, so its next failure is retried after the base delay again. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** How often in a row key has failed. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Keys ready and waiting for a worker. */
  get length(): number {
    return this.#order.length;
  }

  stats(): WorkQueueStats {
    return {
      queued: this.#order.length,
      processing: this.#processing.size,
      delayed: this.#delayed.size,
      failing: this.#failures.size,
    };
  }

  /** Resolves when nothing is queued or processing (keys waiting for their time do not count). */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops taking keys (queued and delayed ones are dropped) and waits for those being processed. */
  async shutdown(): Promise<void> {
    this.#shutDown = true;
    for (const delayed of this.#delayed.values()) clearTimeout(delayed.timer);
    this.#delayed.clear();
    this.#order.length = 0;
    this.#queued.clear();
    this.#again.clear();
    await Promise.allSettled([...this.#processing.values()]);
    this.#notifyIdle();
  }

  #schedule(key: string, ms: number, retry: boolean): void {
    if (this.#shutDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.#delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    // A controller's process lives on its servers; pending retries alone must not keep it (or a test) alive.
    timer.unref();
    this.#delayed.set(key, { at, timer, retry });
  }

  #pump(): void {
    while (this.#processing.size < this.#workers && this.#order.length > 0) {
      const key = this.#order.shift() as string;
      this.#queued.delete(key);
      this.#processing.set(key, this.#run(key));
    }
  }

  async #run(key: string): Promise<void> {
    try {
      await this.#process(key);
      this.#failures.delete(key);
      const delayed = this.#delayed.get(key);
      if (delayed?.retry) {
        clearTimeout(delayed.timer);
        this.#delayed.delete(key);
      }
    } catch (error) {
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      const delay = backoffDelay(failures - 1, this.#backoff);
      try {
        this.#onError(key, error, delay);
      } catch {
        // A failing error handler must not lose the retry.
      }
      this.#schedule(key, delay, true);
    } finally {
      this.#processing.delete(key);
      if (this.#again.delete(key)) this.add(key);
      this.#pump();
      this.#notifyIdle();
    }
  }

  #isIdle(): boolean {
    return this.#order.length === 0 && this.#processing.size === 0;
  }

  #notifyIdle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
