/** Which identity key signs and which the JWKS publishes at a moment (runs/identity/keys.ts). */
import { describe, expect, it } from 'vitest';
import { CLOCK_SKEW_MS, nextKeyStart, publishedKeys, signingKey } from '../../../runs/identity/keys.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const rotation = { everyMs: 30 * DAY, aheadMs: 60 * MINUTE };

describe('identity keys', () => {
  it('creates the first key signing at once, and the next one ahead of its start', () => {
    expect(nextKeyStart([], 1000, rotation)).toBe(1000);
    const first = { generation: 1, signsFrom: 0 };
    expect(nextKeyStart([first], 30 * DAY - 61 * MINUTE, rotation)).toBeUndefined();
    expect(nextKeyStart([first], 30 * DAY - 60 * MINUTE, rotation)).toBe(30 * DAY);
    // Overdue (the rotation setting was lowered): the next key still waits its publish-ahead time.
    expect(nextKeyStart([first], 40 * DAY, rotation)).toBe(40 * DAY + 60 * MINUTE);
    expect(nextKeyStart([first], 400 * DAY, { everyMs: 0, aheadMs: 0 })).toBeUndefined();
  });

  it('signs with the newest key whose time has come; publishes the old one until its tokens expired', () => {
    const keys = [
      { generation: 1, signsFrom: 0 },
      { generation: 2, signsFrom: 30 * DAY },
    ];
    expect(signingKey(keys, 30 * DAY - 1)?.generation).toBe(1);
    expect(signingKey(keys, 30 * DAY)?.generation).toBe(2);
    const gens = (now: number) => publishedKeys(keys, now).map((key) => key.generation);
    expect(gens(30 * DAY - 60 * MINUTE)).toEqual([1, 2]);
    expect(gens(30 * DAY + 5 * MINUTE + CLOCK_SKEW_MS - 1)).toEqual([1, 2]);
    expect(gens(30 * DAY + 5 * MINUTE + CLOCK_SKEW_MS)).toEqual([2]);
  });
});
