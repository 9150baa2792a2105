import { createHash, randomBytes } from 'node:crypto';

/**
 * Per-run tokens of runner Pods. A token is 32 random bytes, so a fast unsalted hash is enough (nothing
 * to guess) and lets the store find the execution by its hash with a unique index; only the hash is stored.
 */
export function newRunToken(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 of the token, hex: what `run_executions.token_hash` holds. */
export function hashRunToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
