import { setTimeout as sleep } from 'node:timers/promises';
import type { EventBatch, RunnerAck } from '../contract/wire/runner.ts';
import type { EngineEvent } from '../engine/types.ts';
import type { InternalApiError } from './pod-client.ts';

export interface EventShipperOptions {
  attempt: number;
  /** Posts one batch; resolves with the answer, rejects with an InternalApiError. */
  post(batch: EventBatch): Promise<RunnerAck>;
  /** Progress events kept while the API lags (the oldest are dropped beyond it). */
  maxBuffered: number;
  /** The run was cancelled, or the API refuses this runner's token: the engine must stop. */
  onStop(reason: string): void;
  log(line: string): void;
}

/** The contract's limit on events per batch. */
const MAX_BATCH_EVENTS = 1000;
/** Keeps a batch of step results well within the internal API's body limit. */
const MAX_BATCH_BYTES = 1024 * 1024;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * Ships engine events to the internal API in order, in batches, numbered per attempt, one batch in flight:
 * whatever arrives while a batch is posted goes into the next one. `push` never waits, so the engine never
 * waits for the network. Step results are always kept (there are at most as many as steps, and they are
 * the partial results a cancel or crash must leave behind); progress events are dropped, oldest first,
 * beyond `maxBuffered`. A batch that failed is resent with the same numbers until it is acknowledged:
 * the API applies each number once.
 */
export class EventShipper {
  readonly #options: EventShipperOptions;
  readonly #pending: EngineEvent[] = [];
  #progressPending = 0;
  #nextSeq = 1;
  /** Whether the send loop runs; cleared by the loop itself in the same turn it sees nothing left. */
  #busy = false;
  #sending: Promise<void> = Promise.resolve();
  /** Aborted when shipping ends: after close, or when the API said stop or refused for good. */
  readonly #stopped = new AbortController();
  #dropped = 0;

  constructor(options: EventShipperOptions) {
    this.#options = options;
  }

  push(event: EngineEvent): void {
    if (this.#stopped.signal.aborted) return;
    this.#pending.push(event);
    if (event.type !== 'step_finished' && ++this.#progressPending > this.#options.maxBuffered) {
      this.#pending.splice(
        this.#pending.findIndex((e) => e.type !== 'step_finished'),
        1,
      );
      this.#progressPending--;
      if (this.#dropped++ === 0) this.#options.log('the internal API lags; dropping progress events');
    }
    if (!this.#busy) {
      this.#busy = true;
      this.#sending = this.#sendAll();
    }
  }

  /** Waits up to timeoutMs for every event to be delivered, then stops shipping; true if all were. */
  async close(timeoutMs: number): Promise<boolean> {
    const timer = new AbortController();
    await Promise.race([
      this.#sending,
      sleep(timeoutMs, undefined, { signal: timer.signal }).catch(() => {}),
    ]);
    timer.abort();
    const delivered = this.#pending.length === 0 && !this.#busy;
    this.#stopped.abort();
    return delivered;
  }

  async #sendAll(): Promise<void> {
    try {
      while (this.#pending.length > 0 && !this.#stopped.signal.aborted) {
        const events = this.#takeBatch();
        const batch: EventBatch = { attempt: this.#options.attempt, firstSeq: this.#nextSeq, events };
        this.#nextSeq += events.length;
        const ack = await this.#deliver(batch);
        if (ack?.cancel) this.#end('the run was cancelled');
      }
    } finally {
      this.#busy = false;
    }
  }

  #end(reason: string): void {
    this.#options.onStop(reason);
    this.#stopped.abort();
  }

  #takeBatch(): EngineEvent[] {
    const batch: EngineEvent[] = [];
    let bytes = 0;
    while (this.#pending.length > 0 && batch.length < MAX_BATCH_EVENTS) {
      const next = this.#pending[0] as EngineEvent;
      const size = next.type === 'step_finished' ? JSON.stringify(next).length : 100;
      if (batch.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      bytes += size;
      batch.push(next);
      this.#pending.shift();
      if (next.type !== 'step_finished') this.#progressPending--;
    }
    return batch;
  }

  /** The answer, or undefined when shipping stopped before the batch got through. */
  async #deliver(batch: EventBatch): Promise<RunnerAck | undefined> {
    for (let attempt = 0; !this.#stopped.signal.aborted; attempt++) {
      try {
        return await this.#options.post(batch);
      } catch (error) {
        const failure = error as InternalApiError;
        if (failure.status === 401 || failure.status === 403) {
          this.#end('the internal API no longer accepts this runner');
        } else if (!failure.retryable) {
          // Numbers are spent and the API will not take them: later batches would only be refused too.
          this.#options.log(`events refused (${failure.status}); no further events are sent`);
          this.#stopped.abort();
        } else {
          const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt);
          await sleep(delay, undefined, { signal: this.#stopped.signal }).catch(() => {});
        }
      }
    }
    return undefined;
  }
}
