import { type ChildProcess, fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { RunOrder } from '../../contract/wire/run-order.ts';
import type { EngineSettings } from '../deps.ts';
import type { GatewayRelayAddress } from '../protocols/gateway-socket.ts';
import type {
  AccessTokenSource,
  BudgetSource,
  BudgetTicket,
  EngineEvent,
  EngineResult,
  IdentityTokenSource,
} from '../types.ts';
import { workerEnvironment } from './env.ts';
import type { FromWorker, ToWorker } from './ipc.ts';

/** The engine settings every worker gets (its sandbox, data bounds and egress policy), and the pool's own. */
export interface PoolOptions extends EngineSettings {
  /** Most worker processes at once (KUBEGLUE_WORKERS); unset: the CPU count. One starts with the pool. */
  workers?: number | undefined;
  /**
   * A worker without runs for this long exits, down to `idleWorkers` (KUBEGLUE_WORKER_IDLE_MS). Another
   * starts again when every live worker is busy, or when none is left.
   */
  workerIdleMs: number;
  /**
   * Workers kept running without runs (KUBEGLUE_IDLE_WORKERS); 0: the last one exits too, and the next run
   * waits for a worker's start. Unset: 1.
   */
  idleWorkers?: number | undefined;
  /** V8 heap cap of each worker process (MB); a worker past it dies and is replaced. */
  workerHeapMb?: number;
  /** The API's gateway relay: workers reach private systems through it (api/gateway/relay.ts). */
  gatewayRelay?: GatewayRelayAddress | undefined;
  /** Called with one line per worker crash or restart (never with run data). */
  log?: ((line: string) => void) | undefined;
}

interface InFlight {
  resolve: (result: EngineResult) => void;
  onEvent: ((event: EngineEvent, at: number) => void) | undefined;
  accessToken: AccessTokenSource | undefined;
  identityToken: IdentityTokenSource | undefined;
  budget: BudgetSource | undefined;
  detach: () => void;
}

interface Worker {
  child: ChildProcess;
  /** Resolves once the process has exited. */
  exited: Promise<void>;
  ready: Promise<void>;
  /** Set once the worker said it is ready: runs go to ready workers first. */
  isReady: boolean;
  inFlight: Map<number, InFlight>;
  /** Retires the worker once it has been without runs for workerIdleMs. */
  idleTimer: NodeJS.Timeout | undefined;
  /**
   * Takes no new runs and is stopped once it has none (idle, or unhealthy); its exit is not a crash.
   * Its slot may already hold its replacement.
   */
  retiring: boolean;
  /** Being stopped (#stop): asked to shut down, then SIGTERM, then SIGKILL. */
  stopping: Promise<void> | undefined;
  /** Messages queued this turn of the event loop: they cross in one IPC write (sendTo). */
  outgoing: ToWorker[];
}

// Compiled (dist/, what `npm start` and bench run) or from source (tests, the image): the worker is
// the same kind of file as this module.
const WORKER_SOURCE = new URL('./worker.ts', import.meta.url);
const WORKER_SCRIPT = fileURLToPath(
  import.meta.url.endsWith('.ts') ? WORKER_SOURCE : new URL('worker.js', import.meta.url),
);
const RESPAWN_DELAY_MS = 200;
/**
 * Stopping a worker: asked to shut down (it aborts its runs and exits at once), SIGTERM after
 * STOP_GRACE_MS (a worker told to shut down exits on it without cleaning up), SIGKILL after
 * KILL_GRACE_MS more (a worker whose main thread is stuck, e.g. in a dying isolate, handles nothing).
 */
const STOP_GRACE_MS = 3_000;
const KILL_GRACE_MS = 2_000;
/**
 * glibc's allocator in a worker: isolated-vm's threads and V8's would each get an arena (up to 8 per
 * core) that keeps what a burst made it; two are enough. Fixed thresholds turn off glibc's dynamic ones,
 * which after a large buffer is freed keep up to 32 MiB of freed memory in the heap for good: an idle
 * worker gives back what the load used (bench/README.md, issue 34's memory row). The server's are in bin/start.
 */
const WORKER_MALLOC = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '131072',
};
/** A worker is busy (another one is worth starting) from this many runs in flight. */
const BUSY_AT = 1;

/**
 * Queues a message to a worker; what is queued in one turn of the event loop crosses in one IPC write
 * (a system call here, a wake-up and a read there: at concurrency they cost more than the messages).
 */
function sendTo(worker: Worker, message: ToWorker): void {
  worker.outgoing.push(message);
  if (worker.outgoing.length === 1) setImmediate(flushTo, worker);
}

/**
 * Sends what waits for a worker that may have died since: `connected` stays true until the channel's
 * close is processed, so a send can still fail (EPIPE). The exit handler deals with the worker and its runs.
 */
function flushTo(worker: Worker): void {
  const messages = worker.outgoing;
  worker.outgoing = [];
  // Sent already (an immediate run flushed what the turn had queued).
  if (messages.length === 0 || !worker.child.connected) return;
  try {
    // With a callback a failed send is reported to it instead of being emitted as 'error'.
    worker.child.send(messages, () => {});
  } catch {
    // ERR_IPC_CHANNEL_CLOSED thrown synchronously: the channel closed between the check and the send.
  }
}

/** Asks the run's token source and sends the answer back; an error travels as its (safe) message. */
function answerToken(
  worker: Worker,
  run: InFlight,
  message: Extract<FromWorker, { type: 'token_request' }>,
): void {
  const reply = (answer: {
    token?: { accessToken: string; expiresAt?: number | undefined };
    error?: string;
  }) => sendTo(worker, { type: 'token', id: message.id, requestId: message.requestId, ...answer });
  if (!run.accessToken) {
    reply({ error: `system '${message.systemId}': this process manages no OAuth tokens` });
    return;
  }
  run.accessToken(message.systemId, message.rejected).then(
    (token) => reply({ token }),
    (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
  );
}

/** Asks the run's identity source and sends the answer back; an error travels as its (safe) message. */
function answerIdentity(
  worker: Worker,
  run: InFlight,
  message: Extract<FromWorker, { type: 'identity_request' }>,
): void {
  const reply = (answer: { grant?: { token: string; expiresAt: number }; error?: string }) =>
    sendTo(worker, { type: 'identity', id: message.id, requestId: message.requestId, ...answer });
  if (!run.identityToken) {
    reply({ error: 'this process signs no identity tokens' });
    return;
  }
  run.identityToken(message.audience).then(
    (grant) => reply({ grant }),
    (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
  );
}

/** A run's rate budget question: the ticket, or why there is none; release and pause are not answered. */
function answerBudget(
  worker: Worker,
  run: InFlight,
  message: Extract<FromWorker, { type: 'budget_request' | 'budget_release' | 'budget_pause' }>,
): void {
  if (message.type === 'budget_release') {
    run.budget?.release(message.systemId, message.lease);
    return;
  }
  if (message.type === 'budget_pause') {
    run.budget?.pause(message.systemId, message.forMs);
    return;
  }
  const reply = (answer: { ticket?: BudgetTicket; error?: string }) =>
    sendTo(worker, { type: 'budget', id: message.id, requestId: message.requestId, ...answer });
  if (!run.budget) {
    // No budget here (an engine run outside the API): the request goes, as for a system without one.
    reply({ ticket: { waitMs: 0 } });
    return;
  }
  run.budget.take(message.systemId, message.take.withinMs).then(
    (ticket) => reply({ ticket }),
    (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
  );
}

function crashMessage(code: number | null, signal: NodeJS.Signals | null): string {
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  return `The worker process executing this run ${how} (possibly out of memory); the run did not complete`;
}

/**
 * Up to `size` long-lived worker processes, each executing many runs at once. One starts with the pool;
 * another starts when every live worker has a run (so CPU-bound load spreads over the cores), and a
 * worker idle for `workerIdleMs` exits, down to `idleWorkers` (one unless set). A run goes to the
 * least-loaded ready worker; a worker that dies (a V8 abort in its sandbox, out of memory) fails its in-flight runs and is replaced.
 */
export class WorkerPool {
  readonly #options: PoolOptions & { workers: number; workerHeapMb: number; idleWorkers: number };
  readonly #workers: Array<Worker | undefined>;
  /** Every worker process not known to have exited, retiring ones whose slot was reused included. */
  readonly #live = new Set<Worker>();
  #nextId = 1;
  #closing = false;

  constructor(options: PoolOptions) {
    this.#options = {
      ...options,
      workers: options.workers ?? availableParallelism(),
      workerHeapMb: options.workerHeapMb ?? 1024,
      idleWorkers: options.idleWorkers ?? 1,
    };
    this.#workers = Array.from({ length: this.#options.workers }, () => undefined);
  }

  /** The most workers the pool runs at once. */
  get size(): number {
    return this.#workers.length;
  }

  /** Worker processes alive now (starting ones included, retiring ones not). */
  workerCount(): number {
    return this.#workers.filter((w) => w !== undefined && !w.retiring).length;
  }

  /** Process ids of the live workers, by slot (for diagnostics and tests). */
  workerPids(): Array<number | undefined> {
    return this.#workers.map((w) => w?.child.pid);
  }

  /** Runs currently executing, per worker. */
  load(): number[] {
    return this.#workers.map((w) => w?.inFlight.size ?? 0);
  }

  /** Starts the first worker (with idleWorkers 0 too: the first runs find it ready); the others on demand. */
  async start(): Promise<void> {
    await (this.#workers[0] ?? this.#spawn(0)).ready;
  }

  #spawn(slot: number): Worker {
    const child = fork(WORKER_SCRIPT, [], {
      execArgv: [
        '--no-node-snapshot',
        `--max-old-space-size=${this.#options.workerHeapMb}`,
        '--max-semi-space-size=1',
      ],
      // Not the parent's environment: it holds the master key, admin key and database URL.
      env: workerEnvironment(process.env, WORKER_MALLOC),
      serialization: 'json',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let markReady: () => void = () => {};
    let failReady: (error: Error) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    const worker: Worker = {
      child,
      exited: new Promise<void>((resolve) => child.once('exit', () => resolve())),
      ready,
      isReady: false,
      inFlight: new Map(),
      idleTimer: undefined,
      retiring: false,
      stopping: undefined,
      outgoing: [],
    };
    this.#workers[slot] = worker;
    this.#live.add(worker);
    // Its settings come as the first message, not through its environment, which holds none of the
    // server's variables (env.ts); named one by one, so nothing else of the options reaches it.
    const o = this.#options;
    sendTo(worker, {
      type: 'init',
      settings: {
        sandboxMemoryMb: o.sandboxMemoryMb,
        sandboxTimeoutMs: o.sandboxTimeoutMs,
        sandboxKeyConcurrency: o.sandboxKeyConcurrency,
        maxStepDataBytes: o.maxStepDataBytes,
        maxResultBytes: o.maxResultBytes,
        maxRecordingBytes: o.maxRecordingBytes,
        egress: o.egress,
        gatewayRelay: o.gatewayRelay,
      },
    });
    // A message sent to a worker that just died (killed with the whole process group, out of memory) fails
    // with EPIPE or ERR_IPC_CHANNEL_CLOSED on this emitter; unhandled, that would crash the API process.
    // The exit handler below fails the worker's runs and replaces it.
    child.on('error', (error) => {
      if (!this.#closing) this.#options.log?.(`worker ${slot}: ${error.message}`);
    });
    child.on('message', (messages: FromWorker[]) => {
      for (const message of messages) this.#receive(worker, slot, message, markReady);
    });
    child.on('exit', (code, signal) => {
      this.#live.delete(worker);
      clearTimeout(worker.idleTimer);
      failReady(new Error(`worker exited before it was ready (${signal ?? code})`));
      if (this.#workers[slot] === worker) this.#workers[slot] = undefined;
      for (const run of worker.inFlight.values()) {
        run.detach();
        run.resolve({
          status: 'failed',
          data: null,
          stepResults: [],
          error: crashMessage(code, signal),
          files: [],
        });
      }
      worker.inFlight.clear();
      if (this.#closing || worker.retiring) return;
      this.#options.log?.(
        `worker ${slot} ${signal ? `killed by ${signal}` : `exited with code ${code}`}; replacing it`,
      );
      setTimeout(() => {
        if (!this.#closing && !this.#workers[slot]) this.#spawn(slot).ready.catch(() => {});
      }, RESPAWN_DELAY_MS).unref();
    });
    return worker;
  }

  /** One message of a worker: its readiness, its health, events and results of its runs, token requests. */
  #receive(worker: Worker, slot: number, message: FromWorker, markReady: () => void): void {
    if (message.type === 'ready') {
      worker.isReady = true;
      if (worker.inFlight.size === 0) this.#armIdleTimer(worker);
      markReady();
      return;
    }
    if (message.type === 'unhealthy') {
      this.#options.log?.(`worker ${slot}: ${message.reason}; replacing it once its runs have ended`);
      this.#retire(worker);
      return;
    }
    if (message.type === 'events') {
      for (const { id, event, at } of message.events) worker.inFlight.get(id)?.onEvent?.(event, at);
      return;
    }
    const run = worker.inFlight.get(message.id);
    if (!run) return;
    if (message.type === 'token_request') {
      answerToken(worker, run, message);
    } else if (message.type === 'identity_request') {
      answerIdentity(worker, run, message);
    } else if (
      message.type === 'budget_request' ||
      message.type === 'budget_release' ||
      message.type === 'budget_pause'
    ) {
      answerBudget(worker, run, message);
    } else {
      worker.inFlight.delete(message.id);
      run.detach();
      if (worker.inFlight.size === 0) {
        if (worker.retiring) void this.#stop(worker);
        else this.#armIdleTimer(worker);
      }
      run.resolve(message.result);
    }
  }

  #pick(): Worker {
    let best: Worker | undefined;
    let starting = false;
    let live = 0;
    for (const worker of this.#workers) {
      if (worker === undefined || worker.retiring) continue;
      live++;
      if (!worker.isReady) {
        starting = true;
        continue;
      }
      if (!best || worker.inFlight.size < best.inFlight.size) best = worker;
    }
    // Every ready worker is busy: start another (one at a time), up to the limit.
    if ((best === undefined || best.inFlight.size >= BUSY_AT) && !starting && live < this.#workers.length) {
      const slot = this.#workers.findIndex((w) => w === undefined || w.retiring);
      if (slot >= 0) {
        const spawned = this.#spawn(slot);
        spawned.ready.catch(() => {});
        best ??= spawned;
      }
    }
    // No worker ready yet: the run waits for the least-loaded starting one.
    if (best === undefined) {
      for (const worker of this.#workers) {
        if (worker === undefined || worker.retiring) continue;
        if (!best || worker.inFlight.size < best.inFlight.size) best = worker;
      }
    }
    if (!best) throw new Error('the worker pool has no workers');
    clearTimeout(best.idleTimer);
    best.idleTimer = undefined;
    return best;
  }

  /** An idle worker exits after workerIdleMs, unless the pool is down to idleWorkers or it gets a run meanwhile. */
  #armIdleTimer(worker: Worker): void {
    clearTimeout(worker.idleTimer);
    worker.idleTimer = setTimeout(() => {
      worker.idleTimer = undefined;
      if (this.#closing || worker.retiring || worker.inFlight.size > 0) return;
      if (this.workerCount() <= this.#options.idleWorkers) return;
      const slot = this.#workers.indexOf(worker);
      this.#options.log?.(`worker ${slot} idle for ${this.#options.workerIdleMs} ms; stopping it`);
      this.#retire(worker);
    }, this.#options.workerIdleMs);
    worker.idleTimer.unref();
  }

  /** The worker takes no new runs; it is stopped now if it has none, else once its last one ends. */
  #retire(worker: Worker): void {
    worker.retiring = true;
    clearTimeout(worker.idleTimer);
    worker.idleTimer = undefined;
    if (worker.inFlight.size === 0) void this.#stop(worker);
  }

  /**
   * Stops a worker for good: asks it to shut down, then SIGTERM, then SIGKILL, each after a grace;
   * resolves once the process has exited, whatever state it was in.
   */
  #stop(worker: Worker): Promise<void> {
    if (worker.stopping) return worker.stopping;
    const { child } = worker;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    worker.retiring = true;
    // The worker may be dying already (a signal to the whole process group): a failed send is expected.
    sendTo(worker, { type: 'shutdown' });
    const signal = (name: NodeJS.Signals) => {
      try {
        child.kill(name);
      } catch {
        // Exited meanwhile.
      }
    };
    const term = setTimeout(() => signal('SIGTERM'), STOP_GRACE_MS);
    const kill = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS + KILL_GRACE_MS);
    worker.stopping = worker.exited.then(() => {
      clearTimeout(term);
      clearTimeout(kill);
    });
    return worker.stopping;
  }

  /** Executes a run in a worker; resolves with its result (never rejects for a failing run). */
  run(
    order: RunOrder,
    options: {
      signal?: AbortSignal;
      /** Each engine event, with when it happened in the worker (epoch ms). */
      onEvent?: (event: EngineEvent, at: number) => void;
      /** Events without step data (step_finished carries success, error and notes only): cheaper IPC. */
      progressOnly?: boolean;
      /** Answers the run's requests for OAuth access tokens (systems with tokenManaged). */
      accessToken?: AccessTokenSource;
      /** Answers the run's requests for outbound identity tokens (`<<kubeglue_identity_jwt>>`). */
      identityToken?: IdentityTokenSource;
      /** Answers the run's takes from systems' rate budgets (systems with a rateLimit). */
      budget?: BudgetSource;
      /**
       * Send the order at once (with whatever this turn queued for the worker) instead of at the end of
       * the turn: for a run nothing else is batched with, whose caller goes on with other work meanwhile.
       */
      immediate?: boolean;
    } = {},
  ): Promise<EngineResult> {
    if (this.#closing) return Promise.reject(new Error('the worker pool is shutting down'));
    // Counted as in flight before anything awaits, so concurrent picks see each other.
    const worker = this.#pick();
    const id = this.#nextId++;
    const send = (message: ToWorker) => sendTo(worker, message);
    const { signal, onEvent } = options;
    const onAbort = () => send({ type: 'cancel', id });
    return new Promise<EngineResult>((resolve) => {
      worker.inFlight.set(id, {
        resolve,
        onEvent,
        accessToken: options.accessToken,
        identityToken: options.identityToken,
        budget: options.budget,
        detach: () => signal?.removeEventListener('abort', onAbort),
      });
      const dispatch = () => {
        send({
          type: 'run',
          id,
          order,
          events: onEvent === undefined ? false : options.progressOnly ? 'progress' : true,
        });
        if (options.immediate) flushTo(worker);
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
      };
      // To a ready worker the order is queued before run() returns, so it crosses ahead of what the caller
      // queues next in this turn (a sync run's start record: runs/execute-sync.ts).
      if (worker.isReady) dispatch();
      else {
        // A worker that dies before it is ready fails its runs through the exit handler.
        worker.ready.then(dispatch, () => {});
      }
    });
  }

  /**
   * Stops every worker process, retiring ones included (shutdown, SIGTERM, SIGKILL: see #stop) and
   * resolves once none is left; runs still executing are failed by the exit handler.
   */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all([...this.#live].map((worker) => this.#stop(worker)));
  }
}
