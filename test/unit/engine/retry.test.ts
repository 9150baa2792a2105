import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  decideRetry,
  isRetryableStatus,
  parseRetryAfter,
  type RetryContext,
} from '../../../engine/protocols/retry.ts';

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);
const FAR = NOW + 3_600_000;

function context(overrides: Partial<RetryContext>): RetryContext {
  return {
    attempt: 1,
    outcome: { kind: 'network' },
    policy: DEFAULT_RETRY_POLICY,
    nowMs: NOW,
    deadline: FAR,
    random: () => 0.5,
    ...overrides,
  };
}

describe('isRetryableStatus', () => {
  it('retries 408, 429 and every 5xx', () => {
    for (const status of [408, 429, 500, 502, 503, 504, 599]) expect(isRetryableStatus(status)).toBe(true);
  });

  it('never retries other 4xx, 2xx or 3xx', () => {
    for (const status of [200, 301, 400, 401, 403, 404, 409, 422])
      expect(isRetryableStatus(status)).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3', NOW)).toBe(3000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP-date relative to now', () => {
    expect(parseRetryAfter(new Date(NOW + 5000).toUTCString(), NOW)).toBe(5000);
  });

  it('treats a date in the past as no wait', () => {
    expect(parseRetryAfter(new Date(NOW - 60_000).toUTCString(), NOW)).toBe(0);
  });

  it('ignores absent or malformed values', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('', NOW)).toBeUndefined();
    expect(parseRetryAfter('-1', NOW)).toBeUndefined();
    expect(parseRetryAfter('1.5', NOW)).toBeUndefined();
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
  });
});

describe('backoffDelayMs', () => {
  const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };

  it('doubles the jitter window per failed attempt', () => {
    expect(backoffDelayMs(1, policy, () => 0.999)).toBe(99);
    expect(backoffDelayMs(2, policy, () => 0.999)).toBe(199);
    expect(backoffDelayMs(3, policy, () => 0.999)).toBe(399);
  });

  it('caps the window at maxDelayMs', () => {
    expect(backoffDelayMs(10, policy, () => 0.999)).toBe(999);
  });

  it('uses full jitter down to zero', () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
  });
});

describe('decideRetry', () => {
  it('retries a network error with a jittered backoff', () => {
    expect(decideRetry(context({ random: () => 0.5 }))).toEqual({
      retry: true,
      delayMs: DEFAULT_RETRY_POLICY.baseDelayMs / 2,
    });
  });

  it('retries 503 after the Retry-After delay instead of the backoff', () => {
    const decision = decideRetry(context({ outcome: { kind: 'status', status: 503, retryAfter: '2' } }));
    expect(decision).toEqual({ retry: true, delayMs: 2000 });
  });

  it('does not retry a 404', () => {
    const decision = decideRetry(context({ outcome: { kind: 'status', status: 404 } }));
    expect(decision.retry).toBe(false);
  });

  it('stops after maxAttempts', () => {
    expect(decideRetry(context({ attempt: 2 })).retry).toBe(true);
    expect(decideRetry(context({ attempt: 3 })).retry).toBe(false);
  });

  it('stops when the wait would reach the deadline', () => {
    const decision = decideRetry(
      context({ outcome: { kind: 'status', status: 429, retryAfter: '5' }, deadline: NOW + 4000 }),
    );
    expect(decision).toEqual({ retry: false, reason: 'the next attempt would start after the deadline' });
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs', () => {
    const decision = decideRetry(context({ outcome: { kind: 'status', status: 503, retryAfter: '3600' } }));
    expect(decision.retry).toBe(false);
  });

  it('retries immediately for Retry-After: 0', () => {
    const decision = decideRetry(context({ outcome: { kind: 'status', status: 429, retryAfter: '0' } }));
    expect(decision).toEqual({ retry: true, delayMs: 0 });
  });
});
