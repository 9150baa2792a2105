/**
 * The outbox delivery loop: claims due outbox rows (woken at once by the store's notification on enqueue, and
 * by a poll timer as a safety net), runs the handler for each row's kind with bounded concurrency and records
 * the outcome. A claim is a lease: if this process dies mid-delivery the row becomes due again when the lease
 * runs out, so nothing is lost (delivery is at least once; handlers must tolerate a repeat).
 *
 * Both run under the job supervisor (platform/supervisor.ts): a handler that throws is retried after a
 * growing wait; a row whose handler threw (or whose process died during it) KUBEGLUE_JOB_MAX_FAILURES times
 * in a row is dead: done, with the reason in last_error, and its kind's onDead tells the run (a start fails
 * it). Outcomes a handler returns (a notification to retry later) are its own policy and reset that count.
 */

import { SETTINGS } from '../../config/config.ts';
import { type JobFailure, JobSupervisor, type RunningJob } from '../../platform/supervisor.ts';
import type { OutboxRow } from '../../store/index.ts';

export type { OutboxRow };

export type HandlerOutcome =
  | { done: true }
  /** Try again at retryAt; error is kept on the row as its last error. */
  | { retryAt: Date; error: string }
  /** Give up for good, with the reason. */
  | { abandon: string };

export type OutboxHandler = (row: OutboxRow) => Promise<HandlerOutcome>;

/** Told when a row of its kind is dead (given up after failures), with the reason kept on the row. */
export type DeadRowHandler = (row: OutboxRow, reason: string) => Promise<void>;

/** The part of the store the loop uses. */
export interface OutboxQueue {
  /** Due rows, skipping rows locked by others; pushes their next attempt leaseMs ahead and counts the attempt. */
  claimOutbox(options: { limit: number; leaseMs: number }): Promise<OutboxRow[]>;
  completeOutbox(id: number): Promise<unknown>;
  /** `failed`: the handler threw (the row's failure count stays); otherwise the handler asked for it. */
  retryOutbox(
    id: number,
    retry: { nextAttemptAt: string; error: string; failed?: boolean },
  ): Promise<unknown>;
  abandonOutbox(id: number, error: string): Promise<unknown>;
  /** Calls listener whenever rows are enqueued (from any process). Resolves once listening. */
  onOutbox(listener: () => void): Promise<() => Promise<void>>;
}

export interface OutboxDeliveryOptions {
  store: OutboxQueue;
  handlers: Record<string, OutboxHandler>;
  /** By kind: what a dead row means for its run (a start that never happened fails the run). */
  onDead?: Record<string, DeadRowHandler>;
  /** Runs the claims and the handlers (one of its own with the defaults otherwise). */
  jobs?: JobSupervisor;
  /** Rows handled at the same time (default 8). */
  concurrency?: number;
  /** How long a claimed row stays invisible to other claims (default 60 s). Handlers must finish well within it. */
  leaseMs?: number;
  /** Safety-net poll interval (default 1 s): picks up retries that come due and anything a lost wake-up missed. */
  pollMs?: number;
  /** Delay before retrying a row whose handler threw, by failures so far (default: the supervisor's). */
  retryDelayMs?: (failures: number) => number;
  log?: (line: string) => void;
  now?: () => number;
}

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_LEASE_MS = 60_000;
const DEFAULT_POLL_MS = 1000;
const ERROR_CHARS = 500;

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > ERROR_CHARS ? `${message.slice(0, ERROR_CHARS)}…` : message;
}

export class OutboxDelivery {
  readonly #store: OutboxQueue;
  readonly #handlers: Record<string, OutboxHandler>;
  readonly #onDead: Record<string, DeadRowHandler>;
  readonly #jobs: JobSupervisor;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #retryDelayMs: ((failures: number) => number) | undefined;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  readonly #inFlight = new Set<Promise<void>>();
  /** The claim loop: one claim at a time; a wake-up during one claims once more afterwards. */
  #claims: RunningJob | undefined;
  #running = false;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: OutboxDeliveryOptions) {
    this.#store = options.store;
    this.#handlers = options.handlers;
    this.#onDead = options.onDead ?? {};
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY);
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    this.#retryDelayMs = options.retryDelayMs;
    // biome-ignore lint/suspicious/noConsole: the sink of a delivery loop built without a logger (tests, tools)
    this.#log = options.log ?? ((line) => console.log(line));
    this.#now = options.now ?? Date.now;
    this.#jobs = options.jobs ?? new JobSupervisor({ log: this.#log, now: this.#now });
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
    this.#claims = this.#jobs.every({
      job: 'outbox-claim',
      intervalMs: this.#pollMs,
      run: () => this.#claimWhileFree(),
    });
  }

  /** Stops claiming and waits for the handlers in flight to finish and their outcomes to be recorded. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) =>
      this.#log(`outbox: unlisten failed: ${describeError(error)}`),
    );
    await this.#claims?.stop();
    this.#claims = undefined;
    await Promise.all(this.#inFlight);
  }

  #wake(): void {
    if (this.#running) this.#claims?.trigger();
  }

  /** A claim that fails is the supervisor's to log; the poll tries again, leased rows come back. */
  async #claimWhileFree(): Promise<void> {
    while (this.#running) {
      const free = this.#concurrency - this.#inFlight.size;
      if (free <= 0) return; // a finishing handler wakes the loop again
      const rows = await this.#store.claimOutbox({ limit: free, leaseMs: this.#leaseMs });
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
    const handler = Object.hasOwn(this.#handlers, row.kind) ? this.#handlers[row.kind] : undefined;
    const attempt = handler
      ? await this.#jobs.attempt({
          job: 'outbox',
          subject: this.#describeRow(row),
          failuresBefore: row.failures - 1,
          lastError: row.lastError ?? undefined,
          // Never the payload: it may hold URLs with tokens or run data.
          run: () => handler(row),
          record: (failure) => this.#recordFailure(row, failure),
        })
      : ({ ok: true, value: { abandon: `no handler for outbox rows of kind "${row.kind}"` } } as const);
    if (!attempt.ok) return;
    const outcome = attempt.value;
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

  /** A handler that threw: the row is due again later, or dead. */
  async #recordFailure(row: OutboxRow, failure: JobFailure): Promise<void> {
    if (failure.terminal) {
      const reason =
        `dead after ${failure.failures} failed attempts in a row (${SETTINGS.tree.jobs.maxFailures.name}): ` +
        describeError(failure.message);
      await this.#store.abandonOutbox(row.id, reason);
      const onDead = Object.hasOwn(this.#onDead, row.kind) ? this.#onDead[row.kind] : undefined;
      await onDead?.(row, reason);
      return;
    }
    const retryAt = this.#retryDelayMs
      ? new Date(this.#now() + this.#retryDelayMs(failure.failures))
      : (failure.retryAt ?? new Date(this.#now()));
    await this.#store.retryOutbox(row.id, {
      nextAttemptAt: retryAt.toISOString(),
      error: describeError(failure.message),
      failed: true,
    });
  }

  #describeRow(row: OutboxRow): string {
    return `row ${row.id} (kind ${row.kind}${row.runId ? `, run ${row.runId}` : ''})`;
  }
}
