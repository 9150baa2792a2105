import { z } from 'zod';
import type { JsonValue } from '../../contract/json.ts';
import { type CheckResult, SourceChecker } from './check.ts';
import { EMPTY_SOURCE_MESSAGE, normalizeSource } from './driver.ts';
import { SandboxError } from './errors.ts';
import { FairQueue } from './fair-queue.ts';
import { EvaluationJob, type EvaluationOwner } from './job.ts';
import { IsolateLane } from './lane.ts';
import { LruCache } from './lru.ts';
import { RunContexts } from './run-contexts.ts';
import { compileSelector, type Selector } from './selector.ts';

export type { CheckResult } from './check.ts';
export { SandboxError, type SandboxErrorKind } from './errors.ts';
export type { EvaluationOwner } from './job.ts';

export const SandboxOptions = z.object({
  /** Per isolate, in MB (isolated-vm's minimum is 8; KUBEGLUE_SANDBOX_MEMORY_MB). */
  memoryLimitMb: z.number().int().min(8),
  /** CPU time one evaluation may use; a call may ask for less, never more (KUBEGLUE_SANDBOX_TIMEOUT_MS). */
  timeoutMs: z.number().int().positive(),
  /**
   * Evaluations one API key runs at once (fair-queue.ts; KUBEGLUE_SANDBOX_KEY_CONCURRENCY). Keys and their
   * tools are served round-robin; a tool whose evaluation timed out is slowed to one at a time until it
   * recovers.
   */
  keyConcurrency: z.number().int().positive(),
  /**
   * Isolates evaluating in parallel; default `keyConcurrency + 1`, so whatever one key runs, another
   * key finds an isolate. Each one past the first is created only while the others are busy.
   */
  maxIsolates: z.number().int().positive().optional(),
  /** Compiled sources kept per isolate. */
  scriptCacheSize: z.number().int().positive().default(256),
  /**
   * Answer selectors (sources that only read fields and arrange them in literals, selector.ts) on the
   * host, without entering an isolate: no user code runs for them. Off only to compare with the isolate.
   */
  hostSelectors: z.boolean().default(true),
  /** Fresh contexts prepared ahead of use per isolate (each serves one evaluation, or one run). */
  spareContexts: z.number().int().min(0).default(2),
  /**
   * isolated-vm lost control of an isolate (e.g. it could not stop a script). The isolate is
   * replaced, but its thread stays stuck: the worker should finish its runs and exit.
   */
  onCatastrophicError: z.custom<(message: string) => void>((value) => typeof value === 'function').optional(),
});
export type SandboxOptions = z.input<typeof SandboxOptions>;

/**
 * A property of the first argument (an object) that code may know exists but not read: reading it
 * throws an Error with `message`, and so does anything that reads every value (JSON.stringify, spread,
 * Object.values). The value never enters the sandbox. Objects missing on the path are created.
 * Used for credentials withheld from code (engine/credentials.ts).
 */
export interface GuardedProperty {
  path: readonly string[];
  message: string;
}

export interface EvaluateOptions {
  /** Lowers the sandbox timeout for this call, e.g. to the time left before the run's deadline. */
  timeoutMs?: number | undefined;
  /** Stops the evaluation promptly (its isolate is replaced) and rejects with kind `aborted`. */
  signal?: AbortSignal | undefined;
  /** Names the source in error messages, e.g. `step fetchUsers transformCode`. */
  label?: string | undefined;
  /** Properties of the first argument that throw when read (see GuardedProperty). */
  guarded?: readonly GuardedProperty[] | undefined;
  /**
   * A property of the first argument (an object) to answer as well, as the call left it: the evaluation
   * then resolves to the pair `[result, value]` (value null when absent). Must be JSON like the result.
   */
  capture?: string | undefined;
}

/** Evaluations outside a run, or of a run opened without an owner, share one line. */
const NO_OWNER: EvaluationOwner = { key: '', tool: '' };

let sharedChecker: SourceChecker | undefined;

/**
 * Save-time validation without a Sandbox (for the API and the operator, which never evaluate user
 * code): the source compiles and is a function expression. Runs nothing.
 */
export function checkSource(source: string, label?: string): CheckResult {
  sharedChecker ??= new SourceChecker();
  return sharedChecker.check(source, label);
}

/**
 * The evaluations of one run (`Sandbox.openRun`): they share one context per isolate, which no other
 * run ever sees; `close()` releases it when the run ends.
 */
export interface SandboxRun {
  evaluate(source: string, args: JsonValue[], options?: EvaluateOptions): Promise<JsonValue>;
  close(): void;
}

/**
 * Runs user JavaScript function sources in isolated-vm: one per worker process. Scripts are compiled
 * once per isolate. `evaluate` gives each evaluation a fresh context; the evaluations of a run opened
 * with `openRun` share the run's context (nothing leaks between runs). Arguments go in and the result
 * comes out as JSON.
 */
export class Sandbox {
  readonly #options: z.output<typeof SandboxOptions>;
  readonly #maxIsolates: number;
  readonly #lanes: IsolateLane[] = [];
  /** Lanes free to take a job; the most recently used first, as its caches are warm. */
  readonly #idle: IsolateLane[] = [];
  /** Evaluations waiting for an isolate, per key and tool. */
  readonly #queue: FairQueue<EvaluationJob>;
  readonly #checker = new SourceChecker();
  /** Sources parsed as selectors (null: not one), so a source is parsed once. */
  readonly #selectors: LruCache<string, Selector | null>;
  #disposed = false;
  /** Runs opened and not closed yet: their contexts live in the isolates. */
  #openRuns = 0;

  constructor(options: SandboxOptions) {
    this.#options = SandboxOptions.parse(options);
    this.#maxIsolates = this.#options.maxIsolates ?? this.#options.keyConcurrency + 1;
    this.#queue = new FairQueue(this.#options.keyConcurrency);
    this.#selectors = new LruCache(this.#options.scriptCacheSize);
    const lane = this.#addLane();
    lane.warm();
    this.#idle.push(lane);
  }

  /**
   * Calls the function that `source` evaluates to with copies of `args`, awaits a returned promise
   * and returns a JSON copy of the result (`undefined` becomes null). Rejects with a SandboxError.
   */
  evaluate(source: string, args: JsonValue[], options: EvaluateOptions = {}): Promise<JsonValue> {
    return this.#evaluate(source, args, options, undefined, NO_OWNER);
  }

  /**
   * A run's evaluator: its evaluations share one context (globals one sets are seen by the next ones
   * of the same run, never by another run's). Close it when the run ends. `owner` (the run's API key
   * and tool) decides in which line its evaluations wait for an isolate.
   */
  openRun(owner: EvaluationOwner = NO_OWNER): SandboxRun {
    const contexts = new RunContexts();
    this.#openRuns++;
    return {
      evaluate: (source, args, options = {}) => this.#evaluate(source, args, options, contexts, owner),
      close: () => {
        if (contexts.closed) return;
        this.#openRuns--;
        contexts.close();
      },
    };
  }

  /**
   * Gives back the memory of a busy period: while nothing is open or queued, every isolate is
   * replaced by nothing (the extra lanes) or by a fresh, small one (the first lane, kept warm). An
   * isolate's heap otherwise stays as large as its busiest moment made it. Answers the lanes trimmed.
   */
  trim(): number {
    if (this.#disposed || this.#openRuns > 0 || this.#queue.size > 0) return 0;
    if (this.#idle.length !== this.#lanes.length) return 0;
    let trimmed = 0;
    this.#lanes.forEach((lane, index) => {
      if (lane.trim(index === 0)) trimmed++;
    });
    return trimmed;
  }

  #evaluate(
    source: string,
    args: JsonValue[],
    options: EvaluateOptions,
    run: RunContexts | undefined,
    owner: EvaluationOwner,
  ): Promise<JsonValue> {
    const { label, signal } = options;
    if (this.#disposed)
      return Promise.reject(new SandboxError('aborted', 'the sandbox is disposed', { label }));
    if (signal?.aborted) return Promise.reject(new SandboxError('aborted', 'aborted', { label }));
    if (normalizeSource(source).trim() === '') {
      return Promise.reject(new SandboxError('compile', EMPTY_SOURCE_MESSAGE, { label }));
    }
    const timeoutMs = Math.ceil(
      Math.min(this.#options.timeoutMs, options.timeoutMs ?? Number.POSITIVE_INFINITY),
    );
    if (!(timeoutMs >= 1)) {
      return Promise.reject(new SandboxError('timeout', 'no time left to run the function', { label }));
    }
    // Guarded and captured properties need the driver; a selector reads neither. The host answers as a
    // fresh context would: not once the run has a context of its own, which its code may have changed.
    if (
      this.#options.hostSelectors &&
      !options.guarded?.length &&
      options.capture === undefined &&
      run?.touched !== true
    ) {
      const answer = this.#selector(source)?.(args);
      if (answer !== undefined) return Promise.resolve(answer.value);
    }
    let input: string;
    let guarded: string | undefined;
    try {
      input = JSON.stringify(args);
      if (options.guarded?.length) guarded = JSON.stringify(options.guarded);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return Promise.reject(new SandboxError('runtime', `the arguments are not JSON: ${reason}`, { label }));
    }
    const job = new EvaluationJob(
      owner,
      source,
      input,
      timeoutMs,
      label,
      signal,
      run,
      guarded,
      options.capture,
    );
    if (run !== undefined) run.touched = true;
    this.#queue.push(job);
    this.#pump();
    return job.promise;
  }

  #selector(source: string): Selector | undefined {
    let selector = this.#selectors.get(source);
    if (selector === undefined) {
      selector = compileSelector(source) ?? null;
      this.#selectors.set(source, selector);
    }
    return selector ?? undefined;
  }

  /** Save-time validation: the source compiles and is a function expression. Runs nothing. */
  check(source: string, label?: string): CheckResult {
    return this.#checker.check(source, label);
  }

  /** Fails queued and running evaluations as `aborted` and frees the isolates. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const job of this.#queue.clear()) {
      job.reject(new SandboxError('aborted', 'the sandbox was disposed', { label: job.label }));
    }
    for (const lane of this.#lanes) lane.dispose();
    this.#checker.dispose();
  }

  #pump(): void {
    while (!this.#disposed) {
      if (this.#idle.length === 0 && this.#lanes.length >= this.#maxIsolates) return;
      const job = this.#queue.take();
      if (job === undefined) return;
      const lane = this.#takeIdleLane(job.run) ?? this.#addLane();
      lane.run(job, () => {
        this.#queue.finished(job, job.timedOut);
        if (this.#disposed) return;
        this.#idle.push(lane);
        this.#pump();
      });
    }
  }

  /**
   * The idle lane holding the job's run context, else the most recently used idle lane that has a
   * context ready, else the most recently used one.
   */
  #takeIdleLane(run: RunContexts | undefined): IsolateLane | undefined {
    if (run !== undefined) {
      const index = this.#idle.findIndex((lane) => lane.holdsContextOf(run));
      if (index >= 0) return this.#idle.splice(index, 1)[0];
    }
    for (let i = this.#idle.length - 1; i >= 0; i--) {
      const lane = this.#idle[i];
      if (lane?.ready) return this.#idle.splice(i, 1)[0];
    }
    return this.#idle.pop();
  }

  #addLane(): IsolateLane {
    const lane = new IsolateLane({
      memoryLimitMb: this.#options.memoryLimitMb,
      scriptCacheSize: this.#options.scriptCacheSize,
      spareContexts: this.#options.spareContexts,
      onCatastrophicError:
        this.#options.onCatastrophicError ??
        ((message) => process.emitWarning(`isolated-vm catastrophic error: ${message}`)),
    });
    this.#lanes.push(lane);
    return lane;
  }
}
