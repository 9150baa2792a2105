import { createHash } from 'node:crypto';

/**
 * SHA-256 (hex) of an access token: what the store keeps to tell a rejected token from a newer one, and
 * what a runner Pod sends to name the token a target refused, so the token itself never travels back.
 */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
