import type { JsonValue } from '../../contract/json.ts';
import { SandboxError } from './errors.ts';
import type { FairJob } from './fair-queue.ts';
import type { RunContexts } from './run-contexts.ts';

/** Whose evaluation it is: it waits in this key's and tool's line (fair-queue.ts). */
export interface EvaluationOwner {
  /** The API key (id) that started the run; '' when there is none. */
  key: string;
  /** The run's tool; '' when there is none. */
  tool: string;
}

/** One call of `Sandbox.evaluate`, from the queue to its outcome. It settles exactly once. */
export class EvaluationJob implements FairJob {
  readonly key: string;
  readonly tool: string;
  readonly source: string;
  /** JSON text of the argument array. */
  readonly input: string;
  /** JSON text of the guarded properties of the first argument (see GuardedProperty), if any. */
  readonly guarded: string | undefined;
  /** A property of the first argument answered with the result (EvaluateOptions.capture). */
  readonly capture: string | undefined;
  readonly timeoutMs: number;
  readonly label: string | undefined;
  /** The run whose context this evaluation uses; undefined: a fresh context of its own. */
  readonly run: RunContexts | undefined;
  readonly promise: Promise<JsonValue>;
  /** Resolves (never rejects) once the job has its outcome, whoever gave it. */
  readonly done: Promise<void>;
  /** Set by the lane while the job executes: stops the execution when the caller aborts. */
  interruptRunning: (() => void) | undefined;
  /** Set by the lane when the evaluation ran out of time (its tool is slowed). */
  timedOut = false;

  #settled = false;
  #resolve!: (value: JsonValue) => void;
  #reject!: (error: SandboxError) => void;
  #markDone!: () => void;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => {
    const interrupt = this.interruptRunning;
    this.reject(new SandboxError('aborted', 'aborted', { label: this.label }));
    interrupt?.();
  };

  constructor(
    owner: EvaluationOwner,
    source: string,
    input: string,
    timeoutMs: number,
    label: string | undefined,
    signal: AbortSignal | undefined,
    run: RunContexts | undefined,
    guarded?: string,
    capture?: string,
  ) {
    this.key = owner.key;
    this.tool = owner.tool;
    this.source = source;
    this.input = input;
    this.guarded = guarded;
    this.capture = capture;
    this.timeoutMs = timeoutMs;
    this.label = label;
    this.run = run;
    this.promise = new Promise<JsonValue>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.done = new Promise<void>((resolve) => {
      this.#markDone = resolve;
    });
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get settled(): boolean {
    return this.#settled;
  }

  resolve(value: JsonValue): void {
    if (this.#finish()) this.#resolve(value);
  }

  reject(error: SandboxError): void {
    if (this.#finish()) this.#reject(error);
  }

  #finish(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    this.interruptRunning = undefined;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#markDone();
    return true;
  }
}
