/**
 * What becomes of a run whose execution was interrupted before it recorded an outcome: this process shut
 * down past its grace period, a process crashed (found at the next start), or a runner Pod was lost
 * (deleted, evicted, its node gone). One rule for all of them, used by the shutdown of the worker pool,
 * startup recovery and the operator's decide():
 *
 * - a read-only async run (every step `modify: false`) is executed again from the start, as attempt + 1,
 *   up to KUBEGLUE_MAX_RUN_ATTEMPTS attempts; repeating it changes nothing on its systems;
 * - any other run fails, with the cause and why it was not retried: a modifying step may have taken
 *   effect, and a synchronous run's caller was answered (or lost its connection) already.
 *
 * A run whose completion effect (notification, chain) is in the outbox is never executed again; the store
 * enforces that when it hands the run back (store/queries/runs.ts retryRun).
 */
import { SETTINGS } from '../config/config.ts';
import type { JsonObject } from '../contract/json.ts';
import { CANCELLED_MESSAGE } from './completion.ts';

/** The setting bounding the attempts (config/runs.ts). */
const MAX_RUN_ATTEMPTS_SETTING = SETTINGS.tree.maxRunAttempts.name;

/** The error of a run failed because this process shut down while it executed. */
export const SHUTDOWN_MESSAGE = 'kubeglue shut down before this run finished';

/**
 * The abort reason of executions stopped because the process shuts down, as opposed to a user's cancel:
 * their outcome is decided here, never recorded as `aborted` ("Run was cancelled").
 */
export class ShutdownInterrupt extends Error {
  constructor() {
    super(SHUTDOWN_MESSAGE);
    this.name = 'ShutdownInterrupt';
  }
}

/** Whether an execution was stopped by a shutdown (its signal's reason). */
export function stoppedByShutdown(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof ShutdownInterrupt;
}

/** The part of a tool this rule reads: each step's `modify` (absent means false, the schema's default). */
interface StepsOf {
  steps?: ReadonlyArray<{ modify?: boolean | undefined }> | undefined;
}

/** Every step of the tool is `modify: false`: executing it again changes nothing on its systems. */
export function isReadOnly(tool: StepsOf | JsonObject | undefined): boolean {
  const steps = (tool as StepsOf | undefined)?.steps;
  return Array.isArray(steps) && steps.length > 0 && steps.every((step) => step?.modify !== true);
}

export interface Interruption {
  /** What happened, as the error begins: "kubeglue shut down before this run finished", … */
  cause: string;
  tool: StepsOf | JsonObject | undefined;
  /** false: a synchronous run. */
  async: boolean;
  /** The attempt that was interrupted (1 for the first execution). */
  attempt: number;
  maxAttempts: number;
}

export type InterruptedOutcome = { retry: true; attempt: number } | { retry: false; error: string };

/** The error of an interrupted synchronous run: its caller has its answer (or lost it), so it ends here. */
export function syncRunError(cause: string): string {
  return `${cause} (synchronous runs are not retried)`;
}

/** Retry as the next attempt, or fail with the cause and the reason it was not retried. */
export function afterInterruption(i: Interruption): InterruptedOutcome {
  if (!i.async) return { retry: false, error: syncRunError(i.cause) };
  if (!isReadOnly(i.tool)) {
    return { retry: false, error: `${i.cause} (it modifies data, so it was not retried)` };
  }
  if (i.attempt >= i.maxAttempts) {
    return {
      retry: false,
      error: `${i.cause} (it was not retried again: ${i.attempt} of at most ${i.maxAttempts} attempts were made, ${MAX_RUN_ATTEMPTS_SETTING})`,
    };
  }
  return { retry: true, attempt: i.attempt + 1 };
}

/**
 * The engine ends a step it was stopped in with "Run was cancelled" whatever stopped it (its signal carries
 * no reason across the worker boundary): a step interrupted by a shutdown says so instead.
 */
export function interruptedSteps<T extends { error?: string | undefined }>(steps: readonly T[]): T[] {
  return steps.map((step) =>
    step.error === CANCELLED_MESSAGE ? { ...step, error: SHUTDOWN_MESSAGE } : step,
  );
}
