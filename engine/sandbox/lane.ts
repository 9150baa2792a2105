import ivm from 'isolated-vm';
import { compileSandboxError, readCompileError } from './compile-error.ts';
import { DRIVER_FILENAME, DRIVER_SOURCE, normalizeSource, USER_FILENAME, wrapUserSource } from './driver.ts';
import { SandboxError } from './errors.ts';
import type { EvaluationJob } from './job.ts';
import { LruCache } from './lru.ts';
import { PreparedContext } from './prepared-context.ts';
import { decodeReply } from './reply.ts';
import type { RunContexts } from './run-contexts.ts';

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
  /** Fresh contexts with the driver installed, created ahead of use; each serves one evaluation or one run. */
  readonly spares: Spare[];
  dead: boolean;
}

interface Spare {
  readonly context: Promise<PreparedContext | undefined>;
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

  /** Whether the run of these contexts holds a context on this lane's isolate (its job starts sooner here). */
  holdsContextOf(run: RunContexts): boolean {
    const state = this.#state;
    return state !== undefined && !state.dead && run.holds(state);
  }

  /**
   * Runs one job to its outcome; never throws. `onFree` is called once the lane can take the next
   * job, synchronously after the job settles, so a caller that evaluates again at once finds this
   * lane (and its run's context) idle.
   */
  run(job: EvaluationJob, onFree: () => void): void {
    this.#current = job;
    let freed = false;
    const free = (): void => {
      if (freed) return;
      freed = true;
      if (this.#current === job) this.#current = undefined;
      onFree();
    };
    this.#execute(job, free).catch((error: unknown) => {
      job.reject(new SandboxError('runtime', `sandbox failure: ${messageOf(error)}`, { label: job.label }));
      free();
    });
  }

  /**
   * Frees the isolate's heap when the lane is idle (the caller knows no run holds a context on it): an
   * isolate keeps the memory its busiest moment needed. The next job creates a fresh isolate (a few
   * ms); `rewarm` creates it now instead. Answers whether the lane was trimmed.
   */
  trim(rewarm: boolean): boolean {
    const state = this.#state;
    if (this.#current !== undefined || state === undefined || state.dead) return false;
    this.#kill(state);
    if (rewarm) this.warm();
    return true;
  }

  /** Kills the isolate; the job running on it (if any) fails as aborted. */
  dispose(): void {
    this.#current?.reject(
      new SandboxError('aborted', 'the sandbox was disposed', { label: this.#current.label }),
    );
    if (this.#state) this.#kill(this.#state);
  }

  async #execute(job: EvaluationJob, free: () => void): Promise<void> {
    let state: IsolateState | undefined;
    let run: RunContexts | undefined;
    let prepared: PreparedContext | undefined;
    /** Settles the job once the lane is free again (see run()). */
    let settle: (() => void) | undefined;
    try {
      state = this.#ensureState();
      const script = await this.#script(state, job);
      if (script === undefined || job.settled) return;
      run = job.run !== undefined && !job.run.closed ? job.run : undefined;
      const held = run?.acquire(state);
      prepared = held ?? (await this.#takeContext(state));
      if (run !== undefined && held === undefined) run.adopt(state, prepared);
      if (job.settled) return;
      const [driverRun, thunk] = await Promise.all([
        prepared.runFunction(),
        prepared.thunk(job.source, script),
      ]);
      if (job.settled) return;
      settle = await this.#call(state, job, driverRun, thunk);
    } catch (error) {
      settle = () =>
        job.reject(new SandboxError('runtime', `sandbox failure: ${messageOf(error)}`, { label: job.label }));
    } finally {
      if (state !== undefined && prepared !== undefined) {
        if (run !== undefined) run.done(state);
        else if (!state.dead) prepared.release();
      }
      free();
      settle?.();
    }
  }

  /** Calls the driver with the source's thunk and the input; answers how to settle the job. */
  async #call(
    state: IsolateState,
    job: EvaluationJob,
    driverRun: ivm.Reference,
    thunk: ivm.Reference,
  ): Promise<(() => void) | undefined> {
    const args: unknown[] = [thunk.derefInto(), job.input];
    if (job.guarded !== undefined || job.capture !== undefined) args.push(job.guarded ?? '[]');
    if (job.capture !== undefined) args.push(job.capture);
    const running = driverRun.apply(undefined, args, {
      timeout: job.timeoutMs,
      result: { promise: true },
    });
    running.catch(ignore);
    this.#refill(state);
    job.interruptRunning = () => this.#kill(state);
    const backstop = setTimeout(() => {
      job.timedOut = true;
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
      if (outcome === undefined || job.settled) return undefined;
      if (!outcome.ok) {
        const error = this.#runError(outcome.error, job, state);
        return () => job.reject(error);
      }
      try {
        const value = decodeReply(outcome.reply, job.label);
        return () => job.resolve(value);
      } catch (error) {
        return () => job.reject(asSandboxError(error, job));
      }
    } finally {
      clearTimeout(backstop);
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
        // The evaluation running on it would only end at its timeout's backstop: it fails now.
        if (created !== undefined && this.#state === created) {
          this.#current?.reject(
            new SandboxError('memory', `exceeded the memory limit of ${this.#options.memoryLimitMb} MB`, {
              label: this.#current.label,
            }),
          );
        }
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

  async #takeContext(state: IsolateState): Promise<PreparedContext> {
    const spare = state.spares.shift();
    const context = spare ? await spare.context : undefined;
    return context ?? (await PreparedContext.create(state.isolate, state.driver));
  }

  /** Tops up the spare contexts; their creation queues behind the evaluation just submitted. */
  #refill(state: IsolateState): void {
    while (!state.dead && state.spares.length < this.#options.spareContexts) {
      const spare: Spare = {
        context: PreparedContext.create(state.isolate, state.driver).catch(() => undefined),
        ready: false,
      };
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
      job.timedOut = true;
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

function asSandboxError(error: unknown, job: EvaluationJob): SandboxError {
  return error instanceof SandboxError
    ? error
    : new SandboxError('runtime', messageOf(error), { label: job.label });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
