/**
 * Which identity signing key does what at a moment (pure): the one that signs, the ones the JWKS publishes,
 * when the next one is due. A key of generation g signs from its `signsFrom` until generation g+1's; it is
 * published from its creation (ahead of signing: the rotation's publish-ahead time) until every token it
 * signed has expired.
 */
import { MAX_IDENTITY_TOKEN_TTL_MS } from '../../config/identity.ts';

/** What the selection needs of a key. */
export interface KeyTimes {
  generation: number;
  signsFrom: number;
}

/** Clocks of the verifiers differ: a retired key stays published this much longer than its last token. */
export const CLOCK_SKEW_MS = 60_000;

/** The key that signs at `now`: the newest generation whose time has come. */
export function signingKey<K extends KeyTimes>(keys: readonly K[], now: number): K | undefined {
  let signing: K | undefined;
  for (const key of keys) {
    if (key.signsFrom <= now && (!signing || key.generation > signing.generation)) signing = key;
  }
  return signing;
}

/**
 * The keys the JWKS serves at `now`: those about to sign, the signing one, and older ones until the
 * longest-lived token they may have signed has expired (its successor's start + the longest TTL + skew).
 */
export function publishedKeys<K extends KeyTimes>(keys: readonly K[], now: number): K[] {
  const sorted = [...keys].sort((a, b) => a.generation - b.generation);
  return sorted.filter((_key, index) => {
    const next = sorted[index + 1];
    return next === undefined || next.signsFrom + MAX_IDENTITY_TOKEN_TTL_MS + CLOCK_SKEW_MS > now;
  });
}

/**
 * When the next key should start signing, if it is time to create it now (it is created `aheadMs` before it
 * signs); undefined when no new key is due. The first key signs at once: there is no older one to verify by.
 */
export function nextKeyStart(
  keys: readonly KeyTimes[],
  now: number,
  rotation: { everyMs: number; aheadMs: number },
): number | undefined {
  const newest = keys.reduce<KeyTimes | undefined>(
    (found, key) => (!found || key.generation > found.generation ? key : found),
    undefined,
  );
  if (!newest) return now;
  if (rotation.everyMs <= 0) return undefined;
  const due = newest.signsFrom + rotation.everyMs;
  if (now + rotation.aheadMs < due) return undefined;
  return Math.max(due, now + rotation.aheadMs);
}
