/** PKCE (RFC 7636, S256) and the state of an authorization request. */
import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes, base64url: 43 characters, within RFC 7636's 43–128. */
export function newCodeVerifier(): string {
  return randomBytes(32).toString('base64url');
}

export function codeChallengeS256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** The state parameter: unguessable, it is the only credential of the callback. */
export function newState(): string {
  return randomBytes(32).toString('base64url');
}

/** States are stored by hash, so a database reader cannot complete someone's authorization. */
export function hashState(state: string): string {
  return createHash('sha256').update(state).digest('hex');
}
