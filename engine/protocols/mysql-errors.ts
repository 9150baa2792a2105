/**
 * The errors of a MySQL step: what kind each is, and the server's, the client's or the socket's error
 * turned into a message that names the system, never its password.
 */
import { ConnectionStepError } from './connection-step.ts';
import type { ResolvedMysqlConnection } from './mysql-target.ts';
import { scrubSecrets } from './step-bounds.ts';

export type MysqlErrorKind =
  | 'sql'
  | 'read-only'
  | 'timeout'
  | 'aborted'
  | 'connection'
  | 'authentication'
  | 'too-large'
  | 'invalid-request';

/** `code`: the server's error name (ER_NO_SUCH_TABLE…) or the system error code (ECONNREFUSED…). */
export class MysqlStepError extends ConnectionStepError<MysqlErrorKind> {
  override name = 'MysqlStepError';
}

export interface ServerError {
  code?: unknown;
  errno?: unknown;
  sqlMessage?: unknown;
  fatal?: unknown;
}

/** Errors the server sent (they carry its errno and message), as opposed to network or client ones. */
export function isServerError(
  error: unknown,
): error is Error & { code: string; errno: number; sqlMessage: string } {
  const { errno, sqlMessage } = (error ?? {}) as ServerError;
  return typeof errno === 'number' && typeof sqlMessage === 'string';
}

const AUTHENTICATION_ERRORS = new Set([
  'ER_ACCESS_DENIED_ERROR',
  'ER_ACCESS_DENIED_NO_PASSWORD_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_NOT_SUPPORTED_AUTH_MODE',
  'ER_PASSWORD_EXPIRED',
  'ER_MUST_CHANGE_PASSWORD_LOGIN',
]);
/** max_statement_time (MariaDB), max_execution_time (MySQL). */
const STATEMENT_TIMEOUTS = new Set([1969, 3024]);
const READ_ONLY_TRANSACTION = 1792;

export function timedOut(where: string, detail?: string): MysqlStepError {
  return new MysqlStepError(
    'timeout',
    `MySQL query on ${where} timed out: the run deadline was reached${detail ? ` (${detail})` : ''}`,
  );
}

export function aborted(where: string): MysqlStepError {
  return new MysqlStepError('aborted', `MySQL query on ${where} was aborted`);
}

export function describeError(
  error: unknown,
  resolved: ResolvedMysqlConnection,
  connecting: boolean,
): MysqlStepError {
  if (error instanceof MysqlStepError) return error;
  const scrub = (text: string): string => scrubSecrets(text, resolved.secrets);
  const where = resolved.label;
  if (isServerError(error)) {
    const cause = `${error.code} (${error.errno}): ${error.sqlMessage}`;
    if (AUTHENTICATION_ERRORS.has(error.code)) {
      return new MysqlStepError(
        'authentication',
        scrub(`MySQL authentication to ${where} failed: ${cause}`),
        error.code,
      );
    }
    if (error.errno === READ_ONLY_TRANSACTION) {
      return new MysqlStepError(
        'read-only',
        scrub(
          `MySQL error on ${where}: ${cause}; the step has modify: false, so it runs in a READ ONLY transaction (set modify: true to allow writes)`,
        ),
        error.code,
      );
    }
    if (STATEMENT_TIMEOUTS.has(error.errno)) return timedOut(where, scrub(error.sqlMessage));
    if (connecting) {
      return new MysqlStepError(
        'connection',
        scrub(`MySQL connection to ${where} failed: ${cause}`),
        error.code,
      );
    }
    return new MysqlStepError('sql', scrub(`MySQL error on ${where}: ${cause}`), error.code);
  }
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as ServerError | null)?.code;
  return new MysqlStepError(
    'connection',
    scrub(`MySQL connection to ${where} failed: ${message}`),
    typeof code === 'string' ? code : undefined,
  );
}
