/**
 * Live run events for `GET /v1/logs/stream`: an in-process hub that turns what a run reports (engine
 * events, start, outcome) into RunLogEvents, keeps the recent ones of each run for streams that open a
 * moment late, and hands them to the streams of this process. With a bus (Postgres LISTEN/NOTIFY through
 * the store, in the Kubernetes API role) the replicas tell each other which runs their streams follow, and
 * a replica forwards exactly those runs' events, so a stream on any replica sees a run executing on
 * another. Events carry ids, statuses, counts, timings and redacted errors: never step data or credentials.
 */
import { randomBytes } from 'node:crypto';
import { LOOP_FAILURES_IN_EVENTS, type RunLogEvent, type StepLoop } from '../contract/api/run.ts';
import type { EngineEvent } from '../engine/types.ts';

/** Which run an event belongs to: what streams filter on and what access is checked against. */
export interface RunRef {
  runId: string;
  toolId: string;
  traceId: string;
}

/** What can be reported about a run: the engine's events, its start, its outcome. */
export type RunNews =
  /** A span is for traces (runs/execution/report.ts), never a live event. */
  | Exclude<EngineEvent, { type: 'span' }>
  | { type: 'run_started' }
  | { type: 'run_finished'; status: 'success' | 'failed' | 'aborted'; error?: string; durationMs?: number };

/** How replicas reach each other (the store's publishRunEvent / onRunEvent). */
export interface RunEventBus {
  publish(payload: string): Promise<void>;
  /** `''` means messages may have been lost (a reconnect). */
  subscribe(listener: (payload: string) => void): Promise<() => Promise<void>>;
}

export interface RunLogFilter {
  traceId?: string | undefined;
  runId?: string | undefined;
}

export interface RunEventHubOptions {
  bus?: RunEventBus;
  log?: (line: string) => void;
  /** Called once per run that ends in this process (its first run_finished here): the run-end log line. */
  onRunFinished?: (ref: RunRef, news: Extract<RunNews, { type: 'run_finished' }>) => void;
  now?: () => number;
  /** Events kept per run for late streams (the first, run_started, is always kept). */
  eventsPerRun?: number;
  /** Runs kept at most (the oldest go first). */
  maxRuns?: number;
  /** How long a finished run's events stay. */
  keepFinishedMs?: number;
  /** How often a replica repeats which runs its streams follow, and how long others believe it. */
  interestRefreshMs?: number;
  interestTtlMs?: number;
}

const ERROR_LIMIT = 1000;
/** A failed loop item's error in an event: the first ones of a step must fit one bus message with the rest. */
const ITEM_ERROR_LIMIT = 300;
/** How often finished runs past keepFinishedMs are looked for. */
const EXPIRY_SWEEP_MS = 5_000;
/** NOTIFY payloads must stay below 8000 bytes. */
const BUS_PAYLOAD_LIMIT = 7000;

type BusMessage =
  | { k: 'e'; r: string; e: RunLogEvent }
  | { k: 'i'; r: string; keys: string[]; all?: boolean; ttl: number }
  | { k: 'h'; r: string };

interface Entry {
  ref: RunRef;
  events: RunLogEvent[];
  /** Events of this run were produced here (forwarded to other replicas on their interest). */
  local: boolean;
  lastSeq: number;
  stepStarts: Map<string, number>;
  finishedAt?: number;
}

interface Subscriber {
  filter: RunLogFilter;
  deliver: (event: RunLogEvent) => void;
}

interface RemoteInterest {
  keys: Set<string>;
  all: boolean;
  expiresAt: number;
}

function cut(text: string, limit = ERROR_LIMIT): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** A loop step's items as an event carries them: the counts, and only the first failed items. */
function eventLoop(loop: StepLoop): StepLoop {
  return {
    items: loop.items,
    failed: loop.failed,
    failedItems: loop.failedItems
      .slice(0, LOOP_FAILURES_IN_EVENTS)
      .map((item) => ({ index: item.index, error: cut(item.error, ITEM_ERROR_LIMIT) })),
  };
}

function matches(filter: RunLogFilter, ref: RunRef): boolean {
  return (
    (filter.runId === undefined || filter.runId === ref.runId) &&
    (filter.traceId === undefined || filter.traceId === ref.traceId)
  );
}

function interestKeys(filter: RunLogFilter): string[] {
  return [
    ...(filter.runId !== undefined ? [`r:${filter.runId}`] : []),
    ...(filter.traceId !== undefined ? [`t:${filter.traceId}`] : []),
  ];
}

/** A wait as people read it: "1.2 s", "0.05 s". */
function seconds(ms: number): string {
  const s = ms / 1000;
  return `${s >= 10 ? Math.round(s) : Number(s.toPrecision(2))} s`;
}

/** The RunLogEvent of one piece of news (pure; exported for tests). */
export function runLogEvent(
  ref: RunRef,
  news: RunNews,
  at: { seq: number; timestamp: string; durationMs?: number | undefined },
): RunLogEvent {
  const base = { timestamp: at.timestamp, traceId: ref.traceId, runId: ref.runId, toolId: ref.toolId };
  const id = `${ref.runId}:${at.seq}`;
  switch (news.type) {
    case 'run_started':
      return {
        ...base,
        id: `${ref.runId}:start`,
        type: 'run_started',
        level: 'INFO',
        status: 'running',
        message: `Run ${ref.runId} of tool '${ref.toolId}' started`,
      };
    case 'step_started':
      return {
        ...base,
        id,
        type: 'step_started',
        level: 'INFO',
        stepId: news.stepId,
        message: `Step '${news.stepId}' started`,
      };
    case 'page_fetched':
      return {
        ...base,
        id,
        type: 'page_fetched',
        level: 'INFO',
        stepId: news.stepId,
        page: news.page,
        totalFetched: news.totalFetched,
        message: `Step '${news.stepId}': page ${news.page} fetched, ${news.totalFetched} item(s) so far`,
      };
    case 'retry': {
      const why = news.status !== undefined ? `HTTP ${news.status}` : 'a network error';
      return {
        ...base,
        id,
        type: 'retry',
        level: 'WARN',
        stepId: news.stepId,
        attempt: news.attempt,
        delayMs: Math.round(news.delayMs),
        ...(news.status !== undefined ? { httpStatus: news.status } : {}),
        message: `Step '${news.stepId}': ${why}; attempt ${news.attempt} in ${Math.round(news.delayMs)} ms`,
      };
    }
    case 'budget_wait':
      return {
        ...base,
        id,
        type: 'budget_wait',
        level: 'INFO',
        stepId: news.stepId,
        system: news.system,
        delayMs: Math.round(news.waitMs),
        message: `Step '${news.stepId}': waiting for ${news.system}'s budget, ${seconds(news.waitMs)}`,
      };
    case 'step_finished': {
      const { stepId, success, loop } = news.result;
      const error = news.result.error !== undefined ? cut(news.result.error) : undefined;
      const took = at.durationMs !== undefined ? ` in ${at.durationMs} ms` : '';
      // A loop that goes on past failed items (failureBehavior continue) succeeds: say what failed.
      const itemsFailed =
        success && loop && loop.failed > 0 ? `; ${loop.failed} of ${loop.items} items failed` : '';
      return {
        ...base,
        id,
        type: 'step_finished',
        level: !success ? 'ERROR' : itemsFailed ? 'WARN' : 'INFO',
        stepId,
        status: success ? 'success' : 'failed',
        ...(at.durationMs !== undefined ? { durationMs: at.durationMs } : {}),
        ...(error !== undefined ? { error } : {}),
        ...(loop ? { loop: eventLoop(loop) } : {}),
        message:
          news.result.reusedFrom !== undefined
            ? `Step '${stepId}' reused from run ${news.result.reusedFrom} (not executed again)`
            : success
              ? `Step '${stepId}' succeeded${took}${itemsFailed}`
              : `Step '${stepId}' failed${took}: ${error ?? ''}`,
      };
    }
    case 'run_finished': {
      const error = news.error !== undefined ? cut(news.error) : undefined;
      const took = news.durationMs !== undefined ? ` in ${news.durationMs} ms` : '';
      const message =
        news.status === 'success'
          ? `Run ${ref.runId} succeeded${took}`
          : news.status === 'failed'
            ? `Run ${ref.runId} failed${took}: ${error ?? ''}`
            : `Run ${ref.runId} was aborted${took}${error ? `: ${error}` : ''}`;
      return {
        ...base,
        id: `${ref.runId}:end`,
        type: 'run_finished',
        level: news.status === 'success' ? 'INFO' : news.status === 'failed' ? 'ERROR' : 'WARN',
        status: news.status,
        ...(news.durationMs !== undefined ? { durationMs: news.durationMs } : {}),
        ...(error !== undefined ? { error } : {}),
        message,
      };
    }
  }
}

/**
 * The hub of one process. `emit` is cheap and never throws (a failed forward is logged); streams
 * `subscribe` with a filter (a run id or a trace id) and first get what is kept of matching runs.
 */
export class RunEventHub {
  readonly replicaId = randomBytes(8).toString('hex');
  readonly #options: Required<Omit<RunEventHubOptions, 'bus' | 'log' | 'onRunFinished'>>;
  readonly #bus: RunEventBus | undefined;
  readonly #log: (line: string) => void;
  readonly #onRunFinished: RunEventHubOptions['onRunFinished'];
  readonly #entries = new Map<string, Entry>();
  readonly #subscribers = new Set<Subscriber>();
  readonly #remote = new Map<string, RemoteInterest>();
  #swept = 0;
  #sending: Promise<void> = Promise.resolve();
  #announced = '';
  #unsubscribe: (() => Promise<void>) | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: RunEventHubOptions = {}) {
    this.#bus = options.bus;
    this.#log = options.log ?? (() => {});
    this.#onRunFinished = options.onRunFinished;
    this.#options = {
      now: options.now ?? Date.now,
      eventsPerRun: options.eventsPerRun ?? 100,
      maxRuns: options.maxRuns ?? 2000,
      keepFinishedMs: options.keepFinishedMs ?? 60_000,
      interestRefreshMs: options.interestRefreshMs ?? 15_000,
      interestTtlMs: options.interestTtlMs ?? 45_000,
    };
  }

  /** Joins the bus (when there is one) and asks the other replicas what their streams follow. */
  async start(): Promise<void> {
    if (!this.#bus) return;
    this.#unsubscribe = await this.#bus.subscribe((payload) => this.#receive(payload));
    this.#timer = setInterval(() => this.#refresh(), this.#options.interestRefreshMs);
    this.#timer.unref();
    this.#send({ k: 'h', r: this.replicaId });
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#subscribers.clear();
    if (this.#bus && this.#announced !== '') {
      this.#announced = '';
      this.#send({ k: 'i', r: this.replicaId, keys: [], ttl: 0 });
    }
    await this.#sending;
    await this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /**
   * Reports news about a run produced in this process. `seq` numbers engine events where the producer
   * numbers them (runner Pods); `timed: false` when events arrive in batches, so step durations measured
   * here would be wrong; `at` is when it happened (epoch ms, the engine worker's clock), when the producer
   * says: the event's timestamp and step durations are then its own, not its arrival's.
   */
  emit(ref: RunRef, news: RunNews, opts: { seq?: number; timed?: boolean; at?: number } = {}): void {
    try {
      const now = opts.at ?? this.#options.now();
      const entry = this.#entry(ref, true);
      let seq = 0;
      if (news.type !== 'run_started' && news.type !== 'run_finished') {
        seq = opts.seq ?? entry.lastSeq + 1;
        entry.lastSeq = Math.max(entry.lastSeq, seq);
      }
      let durationMs: number | undefined;
      if (news.type === 'step_started') entry.stepStarts.set(news.stepId, now);
      if (news.type === 'step_finished' && opts.timed !== false) {
        const started = entry.stepStarts.get(news.result.stepId);
        if (started !== undefined) durationMs = Math.max(0, Math.round(now - started));
      }
      const event = runLogEvent(ref, news, { seq, timestamp: new Date(now).toISOString(), durationMs });
      // A run's end may be reported twice (a cancel, then the execution it stopped): the first counts.
      if (news.type === 'run_finished' && entry.finishedAt === undefined) this.#onRunFinished?.(ref, news);
      this.#keep(entry, event, now);
      this.#deliver(ref, event);
      if (this.#remoteWants(ref)) this.#send({ k: 'e', r: this.replicaId, e: event });
    } catch (error) {
      this.#log(`run events: ${(error as Error).message}`);
    }
  }

  /**
   * Streams call this with their filter; `deliver` first gets the kept events of matching runs, then new
   * ones (from this process and, with a bus, from the others). Duplicates are possible (same id): the
   * stream drops them.
   */
  subscribe(filter: RunLogFilter, deliver: (event: RunLogEvent) => void): { close(): void } {
    const subscriber: Subscriber = { filter, deliver };
    this.#subscribers.add(subscriber);
    this.#announce();
    for (const entry of [...this.#entries.values()]) {
      if (!matches(filter, entry.ref)) continue;
      for (const event of [...entry.events]) deliver(event);
    }
    return {
      close: () => {
        if (this.#subscribers.delete(subscriber)) this.#announce();
      },
    };
  }

  /** Streams open in this process (metrics, tests). */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  #entry(ref: RunRef, local: boolean): Entry {
    let entry = this.#entries.get(ref.runId);
    if (!entry) {
      entry = { ref, events: [], local, lastSeq: 0, stepStarts: new Map() };
      this.#entries.set(ref.runId, entry);
      this.#prune();
    } else if (local) {
      entry.local = true;
    }
    return entry;
  }

  #keep(entry: Entry, event: RunLogEvent, now: number): void {
    if (entry.events.some((kept) => kept.id === event.id)) return;
    entry.events.push(event);
    if (entry.events.length > this.#options.eventsPerRun) {
      // The oldest event after run_started goes.
      entry.events.splice(entry.events[0]?.type === 'run_started' ? 1 : 0, 1);
    }
    if (event.type === 'run_finished') {
      entry.finishedAt = now;
      entry.stepStarts.clear();
    }
  }

  /** At most maxRuns runs (the oldest go first); finished runs expire after keepFinishedMs. */
  #prune(): void {
    for (const runId of this.#entries.keys()) {
      if (this.#entries.size <= this.#options.maxRuns) break;
      this.#entries.delete(runId);
    }
    const now = this.#options.now();
    if (now - this.#swept < EXPIRY_SWEEP_MS) return;
    this.#swept = now;
    for (const [runId, entry] of this.#entries) {
      if (entry.finishedAt !== undefined && now - entry.finishedAt > this.#options.keepFinishedMs) {
        this.#entries.delete(runId);
      }
    }
  }

  #deliver(ref: RunRef, event: RunLogEvent): void {
    for (const subscriber of this.#subscribers) {
      if (!matches(subscriber.filter, ref)) continue;
      try {
        subscriber.deliver(event);
      } catch (error) {
        this.#log(`run events: a stream failed: ${(error as Error).message}`);
      }
    }
  }

  // --- Between replicas ---

  #remoteWants(ref: RunRef): boolean {
    if (!this.#bus || this.#remote.size === 0) return false;
    const now = this.#options.now();
    for (const [replica, interest] of this.#remote) {
      if (interest.expiresAt < now) {
        this.#remote.delete(replica);
        continue;
      }
      if (interest.all || interest.keys.has(`r:${ref.runId}`) || interest.keys.has(`t:${ref.traceId}`))
        return true;
    }
    return false;
  }

  #ownKeys(): string[] {
    const keys = new Set<string>();
    for (const subscriber of this.#subscribers)
      for (const key of interestKeys(subscriber.filter)) keys.add(key);
    return [...keys].sort();
  }

  /** Tells the other replicas what this one's streams follow, when that changed (or when forced). */
  #announce(force = false): void {
    if (!this.#bus) return;
    const keys = this.#ownKeys();
    const ttl = this.#options.interestTtlMs;
    let message: BusMessage = { k: 'i', r: this.replicaId, keys, ttl };
    // Too many to name: ask for everything and filter here.
    if (JSON.stringify(message).length > BUS_PAYLOAD_LIMIT) message = { ...message, keys: [], all: true };
    const signature = keys.length === 0 ? '' : JSON.stringify(message);
    if (!force && signature === this.#announced) return;
    this.#announced = signature;
    this.#send(message);
  }

  #refresh(): void {
    if (this.#announced !== '') this.#announce(true);
    const now = this.#options.now();
    for (const [replica, interest] of this.#remote)
      if (interest.expiresAt < now) this.#remote.delete(replica);
    this.#prune();
  }

  /**
   * One message at a time: notifications sent over different pooled connections could arrive in another
   * order than they were sent, and a stream should show a run's events in order.
   */
  #send(message: BusMessage): void {
    const bus = this.#bus;
    if (!bus) return;
    const payload = JSON.stringify(message);
    if (payload.length > BUS_PAYLOAD_LIMIT) {
      this.#log('run events: an event too large to forward was dropped');
      return;
    }
    this.#sending = this.#sending
      .then(() => bus.publish(payload))
      .catch((error: unknown) => {
        this.#log(`run events: could not reach the other replicas: ${(error as Error).message}`);
      });
  }

  #receive(payload: string): void {
    if (payload === '') {
      // The listening connection was restored: what the others follow (and we) may have been missed.
      this.#announce(true);
      this.#send({ k: 'h', r: this.replicaId });
      return;
    }
    let message: BusMessage;
    try {
      message = JSON.parse(payload) as BusMessage;
    } catch {
      return;
    }
    if (!message || message.r === this.replicaId) return;
    if (message.k === 'h') {
      if (this.#announced !== '') this.#announce(true);
    } else if (message.k === 'i') {
      this.#interest(message);
    } else if (message.k === 'e' && message.e && typeof message.e.runId === 'string') {
      const event = message.e;
      const ref = { runId: event.runId, toolId: event.toolId, traceId: event.traceId };
      this.#keep(this.#entry(ref, false), event, this.#options.now());
      this.#deliver(ref, event);
    }
  }

  /** Another replica's streams follow these runs: remember it, and send what is kept of newly followed runs. */
  #interest(message: Extract<BusMessage, { k: 'i' }>): void {
    const keys = new Set(Array.isArray(message.keys) ? message.keys.map(String) : []);
    const all = message.all === true;
    const previous = this.#remote.get(message.r);
    if (keys.size === 0 && !all) {
      this.#remote.delete(message.r);
      return;
    }
    this.#remote.set(message.r, { keys, all, expiresAt: this.#options.now() + Number(message.ttl || 0) });
    for (const entry of this.#entries.values()) {
      if (!entry.local) continue;
      const { runId, traceId } = entry.ref;
      const wanted = all || keys.has(`r:${runId}`) || keys.has(`t:${traceId}`);
      const known =
        previous !== undefined &&
        (previous.all || previous.keys.has(`r:${runId}`) || previous.keys.has(`t:${traceId}`));
      if (!wanted || known) continue;
      for (const event of entry.events) this.#send({ k: 'e', r: this.replicaId, e: event });
    }
  }
}
