import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { z } from 'zod';
import { parseJsonOrUndefined } from '../contract/json.ts';

/** A call to the internal API that did not succeed; `retryable` when asking again may help. */
export class InternalApiError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** What went wrong without the method and path: the API's own message when it answered one. */
  readonly reason: string;
  constructor(message: string, status: number | undefined, retryable?: boolean, reason?: string) {
    super(message);
    this.status = status;
    this.reason = reason ?? message;
    // Unreachable, timed out, overloaded or failing server: worth another try. Any other answer is final.
    this.retryable = retryable ?? (status === undefined || status === 429 || status >= 500);
  }
}

export interface InternalClientOptions {
  baseUrl: string;
  token: string;
  requestTimeoutMs: number;
}

/** The runner's only connection: JSON calls to the internal API with its per-run token. */
export class InternalClient {
  readonly #options: InternalClientOptions;
  // Its own connection pool, closed at the end, so idle keep-alive sockets never hold the process open.
  readonly #agent = new Agent({ keepAliveTimeout: 30_000 });

  constructor(options: InternalClientOptions) {
    this.#options = options;
  }

  async call<T extends z.ZodType>(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    answer: T,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<z.infer<T>> {
    const timeout = AbortSignal.timeout(this.#options.requestTimeoutMs);
    let status: number | undefined;
    let text: string;
    try {
      const response = await request(`${this.#options.baseUrl}${path}`, {
        method,
        dispatcher: this.#agent,
        headers: {
          authorization: `Bearer ${this.#options.token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      const reason = timeout.aborted
        ? `no answer within ${this.#options.requestTimeoutMs} ms`
        : errorText(error);
      throw new InternalApiError(`${method} ${path}: ${reason}`, status, undefined, reason);
    }
    if (status < 200 || status >= 300) {
      const message = apiMessage(text);
      throw new InternalApiError(
        `${method} ${path}: ${status} ${message}`,
        status,
        undefined,
        message || `status ${status}`,
      );
    }
    const parsed = answer.safeParse(parseJsonOrUndefined(text));
    // Asking again would get the same answer: this runner and the API disagree on the contract.
    if (!parsed.success) throw new InternalApiError(`${method} ${path}: unexpected answer`, status, false);
    return parsed.data;
  }

  /** Drops the connections, and any call still under way (a last heartbeat): the run is over. */
  close(): Promise<void> {
    return this.#agent.destroy();
  }
}

export interface RetryOptions {
  /** Give up once this much time has passed since the first try. */
  budgetMs: number;
  signal?: AbortSignal;
  onRetry?: (error: InternalApiError, delayMs: number) => void;
}

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/** Calls fn until it succeeds, fails for good, the budget is spent or signal aborts; backoff with jitter. */
export async function withRetry<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const giveUpAt = Date.now() + options.budgetMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof InternalApiError) || !error.retryable || options.signal?.aborted) throw error;
      const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt);
      const delayMs = Math.min(base / 2 + Math.random() * (base / 2), giveUpAt - Date.now());
      if (delayMs <= 0) throw error;
      options.onRetry?.(error, delayMs);
      await sleep(delayMs, undefined, options.signal ? { signal: options.signal } : {}).catch(() => {});
      if (options.signal?.aborted) throw error;
    }
  }
}

/** The `{error:{message}}` of an internal API answer, or its status alone. */
function apiMessage(text: string): string {
  const message = (parseJsonOrUndefined(text) as { error?: { message?: unknown } } | undefined)?.error
    ?.message;
  return typeof message === 'string' ? message : '';
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
