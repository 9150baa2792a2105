/**
 * The outbox delivery loop: claims due outbox rows (woken at once by the store's notification on enqueue, and
 * by a poll timer as a safety net), runs the handler for each row's kind with bounded concurrency and records
 * the outcome. A claim is a lease: if this process dies mid-delivery the row becomes due again when the lease
 * runs out, so nothing is lost (delivery is at least once; handlers must tolerate a repeat).
 */
import type { OutboxRow } from '../store/index.ts';

export type { OutboxRow };

export type HandlerOutcome =
  | { done: true }
  /** Try again at retryAt; error is kept on the row as its last error. */
  | { retryAt: Date; error: string }
  /** Give up for good, with the reason. */
  | { abandon: string };

export type OutboxHandler = (row: OutboxRow) => Promise<HandlerOutcome>;

/** The part of the store the loop uses. */
export interface OutboxQueue {
  /** Due rows, skipping rows locked by others; pushes their next attempt leaseMs ahead and counts the attempt. */
  claimOutbox(options: { limit: number; leaseMs: number }): Promise<OutboxRow[]>;
  completeOutbox(id: number): Promise<unknown>;
  retryOutbox(id: number, retry: { nextAttemptAt: string; error: string }): Promise<unknown>;
  abandonOutbox(id: number, error: string): Promise<unknown>;
  /** Calls listener whenever rows are enqueued (from any process). Resolves once listening. */
  onOutbox(listener: () => void): Promise<() => Promise<void>>;
}

export interface OutboxDeliveryOptions {
  store: OutboxQueue;
  handlers: Record<string, OutboxHandler>;
  /** Rows handled at the same time (default 8). */
  concurrency?: number;
  /** How long a claimed row stays invisible to other claims (default 60 s). Handlers must finish well within it. */
  leaseMs?: number;
  /** Safety-net poll interval (default 1 s): picks up retries that come due and anything a lost wake-up missed. */
  pollMs?: number;
  /** Delay before retrying a row whose handler threw, by attempts so far (default 1 s doubling, at most 5 min). */
  retryDelayMs?: (attempts: number) => number;
  log?: (line: string) => void;
  now?: () => number;
}

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_LEASE_MS = 60_000;
const DEFAULT_POLL_MS = 1000;
const ERROR_CHARS = 500;

/** 1 s, 2 s, 4 s … capped at 5 min. */
export function defaultRetryDelayMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.max(attempts - 1, 0), 5 * 60_000);
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > ERROR_CHARS ? `${message.slice(0, ERROR_CHARS)}…` : message;
}

export class OutboxDelivery {
  readonly #store: OutboxQueue;
  readonly #handlers: Record<string, OutboxHandler>;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #retryDelayMs: (attempts: number) => number;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  readonly #inFlight = new Set<Promise<void>>();
  #claiming: Promise<void> | undefined;
  /** A wake-up arrived while claiming: claim once more afterwards. */
  #wakePending = false;
  #running = false;
  #pollTimer: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: OutboxDeliveryOptions) {
    this.#store = options.store;
    this.#handlers = options.handlers;
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY);
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.#retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
    this.#log = options.log ?? ((line) => console.log(line));
    this.#now = options.now ?? Date.now;
  }

  /** Starts listening and polling; resolves once listening, after a first claim has been started. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      this.#unlisten = await this.#store.onOutbox(() => this.#wake());
    } catch (error) {
      this.#running = false;
      throw error;
    }
    this.#pollTimer = setInterval(() => this.#wake(), this.#pollMs);
    this.#pollTimer.unref();
    this.#wake();
  }

  /** Stops claiming and waits for the handlers in flight to finish and their outcomes to be recorded. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearInterval(this.#pollTimer);
    this.#pollTimer = undefined;
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) =>
      this.#log(`outbox: unlisten failed: ${describeError(error)}`),
    );
    await this.#claiming;
    await Promise.all(this.#inFlight);
  }

  #wake(): void {
    if (!this.#running) return;
    if (this.#claiming) {
      this.#wakePending = true;
      return;
    }
    this.#claiming = this.#claimWhileFree().finally(() => {
      this.#claiming = undefined;
      if (this.#wakePending) {
        this.#wakePending = false;
        this.#wake();
      }
    });
  }

  async #claimWhileFree(): Promise<void> {
    while (this.#running) {
      const free = this.#concurrency - this.#inFlight.size;
      if (free <= 0) return; // a finishing handler wakes the loop again
      let rows: OutboxRow[];
      try {
        rows = await this.#store.claimOutbox({ limit: free, leaseMs: this.#leaseMs });
      } catch (error) {
        // The poll timer tries again; claimed-but-unreported rows come back when their lease runs out.
        this.#log(`outbox: claiming rows failed: ${describeError(error)}`);
        return;
      }
      for (const row of rows) this.#track(this.#deliver(row));
      if (rows.length < free) return;
    }
  }

  #track(delivery: Promise<void>): void {
    this.#inFlight.add(delivery);
    void delivery.finally(() => {
      this.#inFlight.delete(delivery);
      this.#wake();
    });
  }

  async #deliver(row: OutboxRow): Promise<void> {
    const outcome = await this.#runHandler(row);
    try {
      if ('done' in outcome) {
        await this.#store.completeOutbox(row.id);
      } else if ('abandon' in outcome) {
        this.#log(`outbox: gave up on ${this.#describeRow(row)}: ${outcome.abandon}`);
        await this.#store.abandonOutbox(row.id, outcome.abandon);
      } else {
        await this.#store.retryOutbox(row.id, {
          nextAttemptAt: outcome.retryAt.toISOString(),
          error: outcome.error,
        });
      }
    } catch (error) {
      this.#log(
        `outbox: recording the outcome of ${this.#describeRow(row)} failed (it is retried when its lease ` +
          `runs out): ${describeError(error)}`,
      );
    }
  }

  async #runHandler(row: OutboxRow): Promise<HandlerOutcome> {
    const handler = Object.hasOwn(this.#handlers, row.kind) ? this.#handlers[row.kind] : undefined;
    if (!handler) return { abandon: `no handler for outbox rows of kind "${row.kind}"` };
    try {
      return await handler(row);
    } catch (error) {
      // Never the payload: it may hold URLs with tokens or run data.
      const message = describeError(error);
      const retryAt = new Date(this.#now() + this.#retryDelayMs(row.attempts));
      this.#log(
        `outbox: handler failed for ${this.#describeRow(row)} (attempt ${row.attempts}), retrying at ` +
          `${retryAt.toISOString()}: ${message}`,
      );
      return { retryAt, error: message };
    }
  }

  #describeRow(row: OutboxRow): string {
    return `row ${row.id} (kind ${row.kind}${row.runId ? `, run ${row.runId}` : ''})`;
  }
}
