/**
 * What a server role does with an error nothing caught (docs/security.md, "Background jobs"). Background jobs
 * run under the supervisor (platform/supervisor.ts), so what reaches these handlers is a bug:
 *
 * - A promise rejected with nobody listening (`unhandledRejection`): the work that promise stood for has
 *   ended, and nothing is left half-done on the stack. It is logged and the process goes on; ending the
 *   process would turn one forgotten `.catch` into an outage (or a crash loop, when the work resumes at
 *   start). Node's default would end the process.
 * - An exception thrown out of a callback (`uncaughtException`, an 'error' event without a listener): it
 *   left whatever that callback was doing half-done, and Node does not promise that carrying on is safe. It
 *   is logged, then the role shuts down as on SIGTERM (in-flight runs get their grace period, pending work is
 *   handed back) and exits with 1 so that its supervisor (Kubernetes, systemd) restarts it; a shutdown that
 *   hangs is cut short after `hardExitMs`. Work that killed a process is not retried for ever: interrupted
 *   attempts count towards KUBEGLUE_JOB_MAX_FAILURES.
 *
 * The log line has the error's name, its message with URL passwords masked, and the stack frames; never
 * the error's other properties (request options, headers).
 */
import { errorMessage, maskUrlUserinfo } from './supervisor.ts';

export interface LastResortOptions {
  log: (line: string) => void;
  /** The role's graceful shutdown (SIGTERM's). */
  shutdown: (reason: string) => Promise<void>;
  /** A shutdown still running after this long is cut short (exit 1). */
  hardExitMs: number;
  /** The process object (tests pass their own). */
  process?: Pick<NodeJS.Process, 'on' | 'off' | 'exit'> & { exitCode?: number | string | null | undefined };
}

/** `Name: message` with URL passwords masked, and the stack's frames (never its message line again). */
export function describeEscaped(error: unknown): string {
  const name = error instanceof Error ? error.name : typeof error;
  const message = maskUrlUserinfo(errorMessage(error)).slice(0, 2000);
  const frames =
    error instanceof Error && error.stack
      ? error.stack
          .split('\n')
          .filter((line) => /^\s+at /.test(line))
          .slice(0, 20)
          .join('\n')
      : '';
  return frames ? `${name}: ${message}\n${frames}` : `${name}: ${message}`;
}

/** Installs both handlers; returns a function that removes them. */
export function installLastResortHandlers(options: LastResortOptions): () => void {
  const target = options.process ?? process;
  let shuttingDown = false;
  const onRejection = (reason: unknown) => {
    options.log(
      `a promise was rejected and nothing handled it (the process goes on): ${describeEscaped(reason)}`,
    );
  };
  const onException = (error: unknown) => {
    options.log(`an exception escaped (shutting down, exit code 1): ${describeEscaped(error)}`);
    if (shuttingDown) return;
    shuttingDown = true;
    const hard = setTimeout(() => target.exit(1), options.hardExitMs);
    hard.unref();
    options
      .shutdown('uncaught exception')
      .catch((failure: unknown) => options.log(`shutdown failed: ${describeEscaped(failure)}`))
      .finally(() => {
        clearTimeout(hard);
        target.exit(1);
      });
  };
  target.on('unhandledRejection', onRejection);
  target.on('uncaughtException', onException);
  return () => {
    target.off('unhandledRejection', onRejection);
    target.off('uncaughtException', onException);
  };
}
