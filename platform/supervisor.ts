/**
 * platform/: what every role shares that is not Kubernetes — the supervisor of background jobs and its
 * metrics (job-metrics.ts), the metrics server (metrics.ts), the last-resort handlers of a server role, the
 * keyed lock, the secret box (AES-256-GCM: system credentials, runtime credentials, OAuth tokens, derived
 * keys), backoff, the export of runs' spans (traces.ts: the OpenTelemetry SDK, loaded only when configured). The log line every process writes is a contract (contract/log.ts), written by the engine's
 * workers too, so it stays there.
 *
 * May import: contract, config.
 *
 * This file is the supervisor of background jobs: work a process does on its own, outside any request
 * (documentation processing, outbox delivery, retention and the other sweeps; schedules use the same
 * interface). Whatever a job throws or rejects with is caught here: the failure is logged (redacted),
 * recorded on the job's subject, and the process goes on. A subject whose attempts failed `maxFailures` times
 * in a row, or failed in a way no retry can mend, is given up: it shows a terminal status (recorded by the
 * job, on the subject) and is not retried until a user acts. docs/security.md, "Background jobs", states the
 * promise.
 *
 * Two shapes of job:
 * - attempt(): one attempt on a subject that keeps its own record (a documentation request, an outbox row, a
 *   schedule): the caller says how many attempts failed before, and records the outcome where the subject
 *   lives; the count survives restarts because it is the subject's.
 * - every(): a periodic job (a sweep): one run at a time, every interval, also on demand (trigger). Its
 *   failures are counted in memory; there are no quick retries, the next run is the next tick.
 */

import { defaultSettings, SETTINGS, type Settings } from '../config/config.ts';

/**
 * KUBEGLUE_JOB_MAX_FAILURES: failed attempts in a row after which a subject is given up, and
 * KUBEGLUE_JOB_RETRY_DELAY_MS: the wait before the first retry; each further failure waits 4× longer, at
 * most MAX_RETRY_DELAY_MS (config/runs.ts).
 */
export type SupervisorSettings = Settings<'api'>['jobs'];

export const MAX_RETRY_DELAY_MS = 5 * 60_000;
const MESSAGE_CHARS = 2000;

/** A failed attempt, as the subject records it. */
export interface JobFailure {
  job: string;
  subject: string;
  /** The error's message: redacted, URL passwords masked, cut to 2000 characters. */
  message: string;
  /** Failed attempts of the subject in a row, this one included. */
  failures: number;
  /**
   * No further attempt: `permanent` (a retry cannot help: a 404, a zip bomb) or `exhausted` (the
   * maxFailures-th failure in a row). The subject shows it until a user acts.
   */
  terminal: false | 'permanent' | 'exhausted';
  /** Non-terminal failures: when the next attempt is due. */
  retryAt?: Date;
}

export interface JobAttempt<T> {
  /** The job's name: `documentation`, `outbox`, `schedule`… (logs, metrics). */
  job: string;
  /** What the attempt works on, for logs; never a secret (`system crm (prod)`, `outbox row 12`). */
  subject: string;
  /** Failed attempts of the subject in a row before this one, from the subject's own record. */
  failuresBefore: number;
  /** The subject's last recorded error: the message when it is given up without another attempt. */
  lastError?: string | undefined;
  run(): Promise<T>;
  /** Records the failure on the subject: due again at retryAt, or its terminal status. */
  record(failure: JobFailure): Promise<void>;
  /** Errors no retry can mend: the subject is given up at once. Default: every error may be retried. */
  permanent?(error: unknown): boolean;
  /** Replaces credential values the message may carry (the system's Redactor). */
  redact?(text: string): string;
}

export type AttemptResult<T> = { ok: true; value: T } | { ok: false; failure: JobFailure };

export interface PeriodicJob {
  job: string;
  intervalMs: number;
  /** Runs once at once too (default true). */
  runAtStart?: boolean;
  /** `signal` aborts when the supervisor stops: a long sweep stops between two steps. */
  run(signal: AbortSignal): Promise<void>;
}

export interface RunningJob {
  /** Runs the job now, or once more right after the run under way. */
  trigger(): void;
  /** No more runs; waits for the run under way. */
  stop(): Promise<void>;
}

/** What /metrics shows of a job (platform/job-metrics.ts). */
export interface JobStatus {
  job: string;
  /** Failed attempts (of any subject) and runs since the process started. */
  failures: number;
  /** Subjects given up since the process started. */
  givenUp: number;
  /** Periodic jobs: failed runs in a row (0 after a success). */
  consecutiveFailures: number;
  lastError?: string;
  lastFailureAt?: string;
}

export interface SupervisorOptions {
  settings?: Partial<SupervisorSettings>;
  log: (line: string) => void;
  now?: () => number;
}

/** `scheme://user:password@` and `scheme://token@` in free text: the userinfo is masked. */
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi;

export function maskUrlUserinfo(text: string): string {
  return text.replace(URL_USERINFO, '$1***@');
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' ? error : 'unknown error';
}

export class JobSupervisor {
  readonly settings: SupervisorSettings;
  readonly #log: (line: string) => void;
  readonly #now: () => number;
  readonly #status = new Map<string, JobStatus>();
  readonly #periodic = new Set<RunningJob>();
  readonly #stopping = new AbortController();

  constructor(options: SupervisorOptions) {
    this.settings = { ...defaultSettings('api').jobs, ...options.settings };
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  /** The wait before the attempt after `failures` failures in a row: 1×, 4×, 16×… the base, capped. */
  retryDelayMs(failures: number): number {
    return Math.min(this.settings.retryDelayMs * 4 ** Math.max(failures - 1, 0), MAX_RETRY_DELAY_MS);
  }

  /**
   * One attempt on a subject; never rejects. A subject that already failed maxFailures times in a row is
   * given up without running (it was interrupted each time: the process died mid-attempt).
   */
  async attempt<T>(attempt: JobAttempt<T>): Promise<AttemptResult<T>> {
    if (attempt.failuresBefore >= this.settings.maxFailures) {
      const message = this.#clean(attempt.lastError ?? 'every attempt was interrupted', attempt.redact);
      return { ok: false, failure: await this.#fail(attempt, message, attempt.failuresBefore, 'exhausted') };
    }
    try {
      return { ok: true, value: await attempt.run() };
    } catch (error) {
      const message = this.#clean(errorMessage(error), attempt.redact);
      const failures = attempt.failuresBefore + 1;
      let permanent = false;
      try {
        permanent = attempt.permanent?.(error) ?? false;
      } catch {
        // A classifier that throws leaves the failure retryable.
      }
      const terminal = permanent ? 'permanent' : failures >= this.settings.maxFailures ? 'exhausted' : false;
      return { ok: false, failure: await this.#fail(attempt, message, failures, terminal) };
    }
  }

  /** Starts a periodic job; supervisor.stop() stops it too. */
  every(job: PeriodicJob): RunningJob {
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<void> | undefined;
    let again = false;
    const stopping = new AbortController();
    const signal = AbortSignal.any([stopping.signal, this.#stopping.signal]);
    const runOnce = async () => {
      try {
        await job.run(signal);
        const entry = this.#entry(job.job);
        if (entry.consecutiveFailures > 0)
          this.#log(`${job.job}: succeeded again after ${entry.consecutiveFailures} failed run(s)`);
        entry.consecutiveFailures = 0;
      } catch (error) {
        if (signal.aborted) return;
        const entry = this.#noteFailure(job.job, this.#clean(errorMessage(error)));
        entry.consecutiveFailures += 1;
        const inARow = entry.consecutiveFailures;
        this.#log(
          `${job.job}: failed (${inARow} in a row; it runs again in ${job.intervalMs} ms): ${entry.lastError}`,
        );
        if (inARow === this.settings.maxFailures) {
          this.#log(
            `${job.job}: failed ${inARow} times in a row (${SETTINGS.tree.jobs.maxFailures.name}); it keeps its schedule, ` +
              'and kubeglue_background_job_consecutive_failures shows it until a run succeeds',
          );
        }
      }
    };
    const trigger = () => {
      if (signal.aborted) return;
      if (running) {
        again = true;
        return;
      }
      running = runOnce().finally(() => {
        running = undefined;
        if (again) {
          again = false;
          trigger();
        }
      });
    };
    const handle: RunningJob = {
      trigger,
      stop: async () => {
        stopping.abort();
        clearInterval(timer);
        this.#periodic.delete(handle);
        await running;
      },
    };
    this.#entry(job.job);
    timer = setInterval(trigger, job.intervalMs);
    timer.unref();
    this.#periodic.add(handle);
    if (job.runAtStart ?? true) trigger();
    return handle;
  }

  status(): JobStatus[] {
    return [...this.#status.values()].map((entry) => ({ ...entry }));
  }

  /** Stops every periodic job (their signal aborts) and waits for their runs under way. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await Promise.all([...this.#periodic].map((job) => job.stop()));
  }

  async #fail<T>(
    attempt: JobAttempt<T>,
    message: string,
    failures: number,
    terminal: JobFailure['terminal'],
  ): Promise<JobFailure> {
    const failure: JobFailure = { job: attempt.job, subject: attempt.subject, message, failures, terminal };
    if (!terminal) failure.retryAt = new Date(this.#now() + this.retryDelayMs(failures));
    const entry = this.#noteFailure(attempt.job, message);
    if (terminal) entry.givenUp += 1;
    const what =
      terminal === 'permanent'
        ? 'failed; not retried'
        : terminal === 'exhausted'
          ? `failed ${failures} times in a row (${SETTINGS.tree.jobs.maxFailures.name}); given up`
          : `failed (${failures} in a row), retrying at ${failure.retryAt?.toISOString()}`;
    this.#log(`${attempt.job}: ${attempt.subject} ${what}: ${message}`);
    try {
      await attempt.record(failure);
    } catch (error) {
      // The subject keeps its previous record; its lease or the next sweep brings it back.
      this.#log(
        `${attempt.job}: recording the failure of ${attempt.subject} failed: ${this.#clean(errorMessage(error))}`,
      );
    }
    return failure;
  }

  #noteFailure(job: string, message: string): JobStatus {
    const entry = this.#entry(job);
    entry.failures += 1;
    entry.lastError = message;
    entry.lastFailureAt = new Date(this.#now()).toISOString();
    return entry;
  }

  #entry(job: string): JobStatus {
    let entry = this.#status.get(job);
    if (!entry) {
      entry = { job, failures: 0, givenUp: 0, consecutiveFailures: 0 };
      this.#status.set(job, entry);
    }
    return entry;
  }

  #clean(message: string, redact?: (text: string) => string): string {
    let text = message;
    if (redact) {
      try {
        text = redact(text);
      } catch {
        text = 'the error message could not be redacted, so it is not shown';
      }
    }
    text = maskUrlUserinfo(text);
    return text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}…` : text;
  }
}
