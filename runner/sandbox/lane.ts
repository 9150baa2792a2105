import ivm from 'isolated-vm';
import { compileSandboxError, readCompileError } from './compile-error.ts';
import {
  DRIVER_FILENAME,
  DRIVER_SOURCE,
  INPUT_GLOBAL,
  normalizeSource,
  USER_FILENAME,
  wrapUserSource,
} from './driver.ts';
import { SandboxError } from './errors.ts';
import type { EvaluationJob } from './job.ts';
import { LruCache } from './lru.ts';
import { decodeReply } from './reply.ts';

export interface LaneOptions {
  memoryLimitMb: number;
  scriptCacheSize: number;
  spareContexts: number;
  onCatastrophicError: (message: string) => void;
}

/**
 * How long after its timeout an evaluation may still be running before the lane gives up on the
 * isolate. isolated-vm's own timeout normally answers first; the backstop catches a returned promise
 * that never settles (nothing in the sandbox can settle it later: there are no timers or I/O).
 */
const BACKSTOP_GRACE_MS = 500;

/** One isolate generation: replaced wholesale when the isolate dies or is disposed. */
interface IsolateState {
  readonly isolate: ivm.Isolate;
  readonly driver: Promise<ivm.Script>;
  readonly scripts: LruCache<string, Promise<ivm.Script>>;
  /** Fresh contexts with the driver installed, created ahead of use; each serves one evaluation. */
  readonly spares: Spare[];
  dead: boolean;
}

interface Spare {
  readonly context: Promise<ivm.Context | undefined>;
  ready: boolean;
}

const ignore = (): void => {};

/**
 * One isolate and the evaluations it runs, one at a time. Evaluations cannot overlap inside an
 * isolate anyway (an isolate runs on one thread, and with no timers or I/O an async function
 * finishes within its own task), so running them one by one costs no throughput and gives each a
 * clean CPU timeout, and when the isolate must be killed (memory, abort, stuck promise) only that
 * one evaluation is affected.
 */
export class IsolateLane {
  readonly #options: LaneOptions;
  #state: IsolateState | undefined;
  #current: EvaluationJob | undefined;

  constructor(options: LaneOptions) {
    this.#options = options;
  }

  /** Creates the isolate and its spare contexts ahead of the first evaluation. */
  warm(): void {
    this.#ensureState();
  }

  /** True when a prepared context is waiting, so a job starts without creating one. */
  get ready(): boolean {
    const state = this.#state;
    return state !== undefined && !state.dead && state.spares[0]?.ready === true;
  }

  /** Runs one job to its outcome; never throws. */
  async run(job: EvaluationJob): Promise<void> {
    this.#current = job;
    try {
      await this.#execute(job);
    } catch (error) {
      job.reject(new SandboxError('runtime', `sandbox failure: ${messageOf(error)}`, { label: job.label }));
    } finally {
      this.#current = undefined;
    }
  }

  /** Kills the isolate; the job running on it (if any) fails as aborted. */
  dispose(): void {
    this.#current?.reject(
      new SandboxError('aborted', 'the sandbox was disposed', { label: this.#current.label }),
    );
    if (this.#state) this.#kill(this.#state);
  }

  async #execute(job: EvaluationJob): Promise<void> {
    const state = this.#ensureState();
    const script = await this.#script(state, job);
    if (script === undefined || job.settled) return;
    const context = await this.#takeContext(state);
    if (job.settled) {
      if (!state.dead) state.spares.unshift({ context: Promise.resolve(context), ready: true });
      return;
    }
    try {
      context.global.setIgnored(INPUT_GLOBAL, job.input);
      const running = script.run(context, { timeout: job.timeoutMs, promise: true });
      running.catch(ignore);
      this.#refill(state);
      job.interruptRunning = () => this.#kill(state);
      const backstop = setTimeout(() => {
        job.reject(
          new SandboxError(
            'timeout',
            `timed out after ${job.timeoutMs} ms (the returned promise did not settle; the sandbox has no timers or I/O)`,
            { label: job.label },
          ),
        );
        this.#kill(state);
      }, job.timeoutMs + BACKSTOP_GRACE_MS);
      try {
        const outcome = await Promise.race([running.then(succeeded, failed), job.done]);
        if (outcome === undefined || job.settled) return;
        if (outcome.ok) {
          try {
            job.resolve(decodeReply(outcome.reply, job.label));
          } catch (error) {
            job.reject(asSandboxError(error, job));
          }
        } else {
          job.reject(this.#runError(outcome.error, job, state));
        }
      } finally {
        clearTimeout(backstop);
      }
    } finally {
      if (!state.dead) context.release();
    }
  }

  #ensureState(): IsolateState {
    const existing = this.#state;
    if (existing && !existing.dead && !existing.isolate.isDisposed) return existing;
    if (existing) this.#kill(existing);
    let created: IsolateState | undefined;
    const isolate: ivm.Isolate = new ivm.Isolate({
      memoryLimit: this.#options.memoryLimitMb,
      onCatastrophicError: (message) => {
        if (created) this.#kill(created);
        this.#options.onCatastrophicError(message);
      },
    });
    const driver = isolate.compileScript(DRIVER_SOURCE, { filename: DRIVER_FILENAME });
    driver.catch(ignore);
    const state: IsolateState = {
      isolate,
      driver,
      scripts: new LruCache(this.#options.scriptCacheSize, (evicted) => {
        evicted.then(releaseScript, ignore);
      }),
      spares: [],
      dead: false,
    };
    created = state;
    this.#state = state;
    this.#refill(state);
    return state;
  }

  /** The compiled script of a source, from the cache; undefined once the job has failed. */
  async #script(state: IsolateState, job: EvaluationJob): Promise<ivm.Script | undefined> {
    let compiled = state.scripts.get(job.source);
    if (compiled === undefined) {
      compiled = state.isolate.compileScript(wrapUserSource(job.source), {
        filename: USER_FILENAME,
        lineOffset: -1,
      });
      compiled.catch(ignore);
      state.scripts.set(job.source, compiled);
    }
    try {
      return await compiled;
    } catch (error) {
      if (state.dead || state.isolate.isDisposed) {
        state.scripts.delete(job.source);
        job.reject(
          new SandboxError('runtime', 'the sandbox isolate stopped while compiling', { label: job.label }),
        );
      } else {
        job.reject(compileSandboxError(readCompileError(error, normalizeSource(job.source)), job.label));
      }
      return undefined;
    }
  }

  async #takeContext(state: IsolateState): Promise<ivm.Context> {
    const spare = state.spares.shift();
    const context = spare ? await spare.context : undefined;
    return context ?? (await prepareContext(state));
  }

  /** Tops up the spare contexts; their creation queues behind the evaluation just submitted. */
  #refill(state: IsolateState): void {
    while (!state.dead && state.spares.length < this.#options.spareContexts) {
      const spare: Spare = { context: prepareContext(state).catch(() => undefined), ready: false };
      spare.context.then((context) => {
        spare.ready = context !== undefined;
      }, ignore);
      state.spares.push(spare);
    }
  }

  #runError(error: unknown, job: EvaluationJob, state: IsolateState): SandboxError {
    const message = messageOf(error);
    if (/memory limit/i.test(message)) {
      this.#kill(state);
      return new SandboxError('memory', `exceeded the memory limit of ${this.#options.memoryLimitMb} MB`, {
        label: job.label,
      });
    }
    if (/timed out/i.test(message)) {
      return new SandboxError('timeout', `timed out after ${job.timeoutMs} ms`, { label: job.label });
    }
    if (state.isolate.isDisposed) {
      this.#kill(state);
      return new SandboxError('runtime', `the sandbox isolate stopped: ${message}`, { label: job.label });
    }
    return new SandboxError('runtime', message, { label: job.label });
  }

  #kill(state: IsolateState): void {
    state.dead = true;
    state.spares.length = 0;
    state.scripts.clear();
    if (this.#state === state) this.#state = undefined;
    try {
      if (!state.isolate.isDisposed) state.isolate.dispose();
    } catch {
      // Already gone: isolated-vm disposes an isolate itself when it hits the memory limit.
    }
  }
}

type RunOutcome = { ok: true; reply: unknown } | { ok: false; error: unknown };

function succeeded(reply: unknown): RunOutcome {
  return { ok: true, reply };
}

function failed(error: unknown): RunOutcome {
  return { ok: false, error };
}

function releaseScript(script: ivm.Script): void {
  try {
    script.release();
  } catch {
    // The isolate is gone, and the script with it.
  }
}

async function prepareContext(state: IsolateState): Promise<ivm.Context> {
  const driver = await state.driver;
  const context = await state.isolate.createContext();
  // Queued before anything else on this context, so the driver is in place when user code runs.
  driver.runIgnored(context);
  return context;
}

function asSandboxError(error: unknown, job: EvaluationJob): SandboxError {
  return error instanceof SandboxError
    ? error
    : new SandboxError('runtime', messageOf(error), { label: job.label });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
