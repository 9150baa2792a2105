/**
 * Backoff policy for outbound requests. Pure: the caller supplies the clock and the random source,
 * so the decisions can be tested without waiting.
 */

export interface RetryPolicy {
  /** Total attempts including the first one. */
  maxAttempts: number;
  /** Upper bound of the first backoff window; doubled per attempt. */
  baseDelayMs: number;
  /** Upper bound of any backoff window. */
  maxDelayMs: number;
  /** A `Retry-After` longer than this is not waited for: the last error is reported instead. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 3,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 60_000,
};

/** What the last attempt produced, as far as retrying is concerned. */
export type AttemptOutcome =
  | { kind: 'network' }
  | { kind: 'status'; status: number; retryAfter?: string | undefined };

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: string };

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * `Retry-After` as a delay in ms: delta-seconds or an HTTP-date (relative to `nowMs`).
 * Returns undefined when absent or unparseable; a date in the past is a zero delay.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // HTTP-dates always name a weekday and a month; this rejects bare numbers with fractions etc.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^(failures-1))). */
export function backoffDelayMs(failedAttempts: number, policy: RetryPolicy, random: () => number): number {
  const exponent = Math.max(0, failedAttempts - 1);
  const window = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  return Math.floor(random() * window);
}

export interface RetryContext {
  /** Attempts made so far (1 after the first request failed). */
  attempt: number;
  outcome: AttemptOutcome;
  policy: RetryPolicy;
  nowMs: number;
  /** Epoch ms after which no request may be in flight. */
  deadline: number;
  random: () => number;
}

export function decideRetry(ctx: RetryContext): RetryDecision {
  const { attempt, outcome, policy, nowMs, deadline } = ctx;
  if (outcome.kind === 'status' && !isRetryableStatus(outcome.status)) {
    return { retry: false, reason: `status ${outcome.status} is not retryable` };
  }
  if (attempt >= policy.maxAttempts) {
    return { retry: false, reason: `gave up after ${attempt} attempts` };
  }
  let delayMs = backoffDelayMs(attempt, policy, ctx.random);
  if (outcome.kind === 'status') {
    const retryAfterMs = parseRetryAfter(outcome.retryAfter, nowMs);
    if (retryAfterMs !== undefined) {
      if (retryAfterMs > policy.maxRetryAfterMs) {
        return { retry: false, reason: `Retry-After of ${retryAfterMs} ms exceeds the limit` };
      }
      delayMs = retryAfterMs;
    }
  }
  // Waiting up to the deadline would leave no time for the request itself.
  if (nowMs + delayMs >= deadline) {
    return { retry: false, reason: 'the next attempt would start after the deadline' };
  }
  return { retry: true, delayMs };
}
