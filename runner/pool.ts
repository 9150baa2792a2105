import { type ChildProcess, fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { EngineEvent, EngineResult } from './engine/types.ts';
import type { FromWorker, RunOrder, ToWorker } from './ipc.ts';
import { type EgressPolicy, egressPolicyToEnv } from './protocols/egress-policy.ts';
import { type GatewayRelayAddress, gatewayRelayToEnv } from './protocols/gateway-socket.ts';
import { workerEnvironment } from './worker-env.ts';

export interface PoolOptions {
  /** Worker processes; default: CPU count. */
  size?: number;
  /** Sandbox memory limit per isolate (MB) and CPU timeout per evaluation (ms). */
  sandboxMemoryMb?: number;
  sandboxTimeoutMs?: number;
  /** V8 heap cap of each worker process (MB); a worker past it dies and is replaced. */
  workerHeapMb?: number;
  /**
   * What steps may connect to. Default: private addresses allowed (the embedded deployment: a laptop
   * talks to localhost), metadata addresses refused.
   */
  egress?: EgressPolicy;
  /** The API's gateway relay: workers reach private systems through it (api/gateway/relay.ts). */
  gatewayRelay?: GatewayRelayAddress | undefined;
  /** Called with one line per worker crash or restart (never with run data). */
  log?: (line: string) => void;
}

interface InFlight {
  resolve: (result: EngineResult) => void;
  onEvent: ((event: EngineEvent) => void) | undefined;
  detach: () => void;
}

interface Worker {
  child: ChildProcess;
  ready: Promise<void>;
  inFlight: Map<number, InFlight>;
}

const WORKER_SCRIPT = fileURLToPath(new URL('./worker.ts', import.meta.url));
const RESPAWN_DELAY_MS = 200;

/**
 * Sends to a worker that may have died since it was picked: `connected` stays true until the channel's
 * close is processed, so a send can still fail (EPIPE). The exit handler deals with the worker and its runs.
 */
function sendTo(worker: Worker, message: ToWorker): void {
  if (!worker.child.connected) return;
  try {
    // With a callback a failed send is reported to it instead of being emitted as 'error'.
    worker.child.send(message, () => {});
  } catch {
    // ERR_IPC_CHANNEL_CLOSED thrown synchronously: the channel closed between the check and the send.
  }
}

function crashMessage(code: number | null, signal: NodeJS.Signals | null): string {
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  return `The worker process executing this run ${how} (possibly out of memory); the run did not complete`;
}

/**
 * N long-lived worker processes, each executing many runs at once. A run goes to the least-loaded
 * worker; a worker that dies fails its in-flight runs and is replaced.
 */
export class WorkerPool {
  readonly #options: Required<Omit<PoolOptions, 'log' | 'gatewayRelay'>> &
    Pick<PoolOptions, 'log' | 'gatewayRelay'>;
  readonly #workers: Array<Worker | undefined>;
  #nextId = 1;
  #closing = false;

  constructor(options: PoolOptions = {}) {
    this.#options = {
      size: options.size ?? availableParallelism(),
      sandboxMemoryMb: options.sandboxMemoryMb ?? 128,
      sandboxTimeoutMs: options.sandboxTimeoutMs ?? 10_000,
      workerHeapMb: options.workerHeapMb ?? 1024,
      egress: options.egress ?? { privateDefault: 'allow', allow: [], deny: [] },
      log: options.log,
      gatewayRelay: options.gatewayRelay,
    };
    this.#workers = Array.from({ length: this.#options.size }, () => undefined);
  }

  get size(): number {
    return this.#workers.length;
  }

  /** Process ids of the live workers, by slot (for diagnostics and tests). */
  workerPids(): Array<number | undefined> {
    return this.#workers.map((w) => w?.child.pid);
  }

  /** Runs currently executing, per worker. */
  load(): number[] {
    return this.#workers.map((w) => w?.inFlight.size ?? 0);
  }

  async start(): Promise<void> {
    await Promise.all(this.#workers.map((_, slot) => this.#spawn(slot).ready));
  }

  #spawn(slot: number): Worker {
    const child = fork(WORKER_SCRIPT, [], {
      execArgv: ['--no-node-snapshot', `--max-old-space-size=${this.#options.workerHeapMb}`],
      // Not the parent's environment: it holds the master key, admin key and database URL.
      env: workerEnvironment(process.env, {
        KUBEGLUE_SANDBOX_MEMORY_MB: String(this.#options.sandboxMemoryMb),
        KUBEGLUE_SANDBOX_TIMEOUT_MS: String(this.#options.sandboxTimeoutMs),
        ...egressPolicyToEnv(this.#options.egress),
        ...gatewayRelayToEnv(this.#options.gatewayRelay),
      }),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let markReady: () => void = () => {};
    let failReady: (error: Error) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    const worker: Worker = { child, ready, inFlight: new Map() };
    this.#workers[slot] = worker;
    // A message sent to a worker that just died (killed with the whole process group, out of memory) fails
    // with EPIPE or ERR_IPC_CHANNEL_CLOSED on this emitter; unhandled, that would crash the API process.
    // The exit handler below fails the worker's runs and replaces it.
    child.on('error', (error) => {
      if (!this.#closing) this.#options.log?.(`worker ${slot}: ${error.message}`);
    });
    child.on('message', (message: FromWorker) => {
      if (message.type === 'ready') return markReady();
      const run = worker.inFlight.get(message.id);
      if (!run) return;
      if (message.type === 'event') {
        run.onEvent?.(message.event);
      } else {
        worker.inFlight.delete(message.id);
        run.detach();
        run.resolve(message.result);
      }
    });
    child.on('exit', (code, signal) => {
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
      if (this.#closing) return;
      this.#options.log?.(
        `worker ${slot} ${signal ? `killed by ${signal}` : `exited with code ${code}`}; replacing it`,
      );
      setTimeout(() => {
        if (!this.#closing && !this.#workers[slot]) this.#spawn(slot).ready.catch(() => {});
      }, RESPAWN_DELAY_MS).unref();
    });
    return worker;
  }

  #pick(): Worker {
    let best: Worker | undefined;
    for (let slot = 0; slot < this.#workers.length; slot++) {
      const worker = this.#workers[slot] ?? this.#spawn(slot);
      if (!best || worker.inFlight.size < best.inFlight.size) best = worker;
    }
    if (!best) throw new Error('the worker pool has no workers');
    return best;
  }

  /** Executes a run in a worker; resolves with its result (never rejects for a failing run). */
  run(
    order: RunOrder,
    options: {
      signal?: AbortSignal;
      onEvent?: (event: EngineEvent) => void;
      /** Events without step data (step_finished carries success, error and notes only): cheaper IPC. */
      progressOnly?: boolean;
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
        detach: () => signal?.removeEventListener('abort', onAbort),
      });
      worker.ready.then(
        () => {
          send({
            type: 'run',
            id,
            order,
            events: onEvent === undefined ? false : options.progressOnly ? 'progress' : true,
          });
          if (signal?.aborted) onAbort();
          else signal?.addEventListener('abort', onAbort, { once: true });
        },
        // A worker that dies before it is ready fails its runs through the exit handler.
        () => {},
      );
    });
  }

  /** Stops the workers; runs still executing are failed by the exit handler. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(
      this.#workers.map(async (worker) => {
        if (!worker || worker.child.exitCode !== null || worker.child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => worker.child.once('exit', () => resolve()));
        // The worker may be dying already (a signal to the whole process group): a failed send is expected.
        sendTo(worker, { type: 'shutdown' });
        const timer = setTimeout(() => worker.child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
