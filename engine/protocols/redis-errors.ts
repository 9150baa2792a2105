/**
 * The errors of a Redis step: what kind each is, and the server's or the socket's error turned into a
 * message that names the system, never its password.
 */
import { ConnectionStepError } from './connection-step.ts';
import type { RedisCommand } from './redis-body.ts';
import type { RedisTarget } from './redis-target.ts';
import { scrubSecrets } from './step-bounds.ts';

export type RedisErrorKind =
  | 'invalid-request'
  | 'connection'
  | 'auth'
  | 'unknown-command'
  | 'read-only'
  | 'command'
  | 'too-large'
  | 'timeout'
  | 'aborted';

/** `code`: the server's error code (WRONGPASS, NOPERM, WRONGTYPE…) or the socket's (ECONNREFUSED…). */
export class RedisStepError extends ConnectionStepError<RedisErrorKind> {
  override name = 'RedisStepError';
}

export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}

/** The server's error without the arguments it echoes (`…, with args beginning with: 'x'`). */
export function serverMessage(error: Error): string {
  return error.message.replace(/,? with args beginning with:.*$/s, '');
}

export function firstWord(message: string): string {
  return /^[A-Z]+/.exec(message)?.[0] ?? '';
}

export function connectError(error: unknown, target: RedisTarget): RedisStepError {
  if (error instanceof RedisStepError) return error;
  const message = error instanceof Error ? serverMessage(error) : String(error);
  const scrub = (text: string) => scrubSecrets(text, target.secrets);
  if (isReplyError(error)) {
    const word = firstWord(message);
    if (word === 'NOAUTH' || (word === 'ERR' && /AUTH|password/i.test(message))) {
      return new RedisStepError(
        'auth',
        scrub(
          `Redis at ${target.label}: authentication failed: ${message} (give the password in the system's credentials or the URL)`,
        ),
        word,
      );
    }
    if (word === 'WRONGPASS' || word === 'NOPERM') {
      return new RedisStepError(
        'auth',
        scrub(`Redis at ${target.label}: authentication failed: ${message}`),
        word,
      );
    }
    return new RedisStepError(
      'connection',
      scrub(`Redis at ${target.label}: cannot connect: ${message}`),
      word,
    );
  }
  return new RedisStepError(
    'connection',
    scrub(`Redis at ${target.label}: cannot connect: ${message}`),
    codeOf(error),
  );
}

export function commandError(
  error: unknown,
  target: RedisTarget,
  command: RedisCommand,
  where: string,
): RedisStepError {
  if (error instanceof RedisStepError) return error;
  const scrub = (text: string) => scrubSecrets(text, target.secrets);
  if (!isReplyError(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new RedisStepError(
      'connection',
      scrub(`Redis at ${target.label}: the connection failed during ${where}${command.name}: ${message}`),
      codeOf(error),
    );
  }
  const message = serverMessage(error);
  const word = firstWord(message);
  if (/^ERR unknown (sub)?command/i.test(message)) {
    return new RedisStepError('unknown-command', scrub(`Redis at ${target.label}: ${where}${message}`), word);
  }
  return new RedisStepError(
    'command',
    scrub(`Redis at ${target.label}: ${where}${command.name} failed: ${message}`),
    word,
  );
}
