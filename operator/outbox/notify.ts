/**
 * Completion notifications for an HTTP `options.webhookUrl`: the outbox handler for rows of kind `notify`.
 *
 * The body is the Run as JSON; headers follow the Standard Webhooks convention (https://www.standardwebhooks.com):
 * `webhook-id` (the same on every retry of one notification), `webhook-timestamp` (unix seconds of this attempt)
 * and `webhook-signature: v1,<base64 HMAC-SHA256(key, id.timestamp.body)>`. A 2xx answer delivers it; anything
 * else is retried with backoff until 24 h after the notification was queued. Targets must be public addresses.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { type Dispatcher, request } from 'undici';
import { z } from 'zod';
import { defaultSettings } from '../../config/config.ts';
import type { JsonObject } from '../../contract/json.ts';
import { assertPublicUrl, egressRefusalIn, guardedDispatcher } from '../../engine/protocols/egress.ts';
import type { HandlerOutcome, OutboxRow } from './outbox.ts';

export const NOTIFY_KIND = 'notify';

export interface NotifyDeps {
  /** The Run to send (REST shape, no credentials, `data` on success up to a cap); undefined when it is gone. */
  renderRun: (runId: string) => Promise<JsonObject | undefined>;
  signingKey: Buffer;
  /** Allow private, loopback and link-local targets (KUBEGLUE_NOTIFY_ALLOW_PRIVATE=true; development, tests). */
  allowPrivate: boolean;
  /** Bound on one delivery attempt, connect to end of response (default 10 s). */
  timeoutMs?: number;
  /** Retries stop this long after the notification was queued (default 24 h). */
  maxAgeMs?: number;
  /** Waits between attempts, by attempt number; the last value repeats (default 5 s, 30 s, 2 min, 10 min, 1 h). */
  retryDelaysMs?: readonly number[];
  now?: () => number;
  /** Overrides the SSRF-guarded agent the handler creates. */
  fetchDispatcher?: Dispatcher;
}

export type NotifyHandler = ((row: OutboxRow) => Promise<HandlerOutcome>) & {
  /** Closes the handler's own agent (not a dispatcher passed in). */
  close(): Promise<void>;
};

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_AGE_MS = 24 * 3_600_000;
/** Longest Retry-After honoured. */
const MAX_RETRY_AFTER_MS = 3_600_000;
/** Signatures older or newer than this are refused by verifySignature (the Standard Webhooks default). */
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

const NotifyPayload = z.object({ url: z.string().min(1) });

export function notificationId(runId: string): string {
  return `msg_${runId}`;
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`. */
export function signNotification(key: Buffer, id: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value.join(' ') : value;
}

/**
 * True when the headers carry a valid signature of body by key, with a timestamp within toleranceSeconds of
 * now. The signature header may list several space-separated signatures (key rotation); one match suffices.
 * `body` must be the raw request body, byte for byte.
 */
export function verifySignature(
  key: Buffer,
  headers: HeaderSource,
  body: string | Buffer,
  options: { toleranceSeconds?: number; now?: number } = {},
): boolean {
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures || !/^\d+$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS))
    return false;
  const expected = Buffer.from(signNotification(key, id, timestamp, body));
  return signatures.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = 'code' in error && typeof error.code === 'string' ? ` (${error.code})` : '';
    return `${error.message}${code}`;
  }
  return String(error);
}

function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const ms = /^\d+$/.test(text.trim()) ? Number(text.trim()) * 1000 : Date.parse(text) - now;
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
}

/** Basic auth from `https://user:pass@host/` (undici would drop it); the URL sent has no userinfo. */
function splitCredentials(url: URL): { target: URL; authorization?: string } {
  if (!url.username && !url.password) return { target: url };
  const target = new URL(url);
  target.username = '';
  target.password = '';
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { target, authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

type Attempt = { ok: true } | { ok: false; error: string; retryAfterMs?: number };

export function createNotifyHandler(deps: NotifyDeps): NotifyHandler {
  const now = deps.now ?? Date.now;
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxAgeMs = deps.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const delays = deps.retryDelaysMs?.length
    ? deps.retryDelaysMs
    : defaultSettings('operator').notifyRetryDelaysMs;
  const ownDispatcher = deps.fetchDispatcher
    ? undefined
    : guardedDispatcher({ allowPrivate: deps.allowPrivate, connectTimeoutMs: timeoutMs });
  const dispatcher = deps.fetchDispatcher ?? ownDispatcher;

  async function send(url: URL, runId: string, run: JsonObject): Promise<Attempt> {
    const body = JSON.stringify(run);
    const id = notificationId(runId);
    const timestamp = Math.floor(now() / 1000);
    const { target, authorization } = splitCredentials(url);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'kubeglue',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signNotification(deps.signingKey, id, timestamp, body),
    };
    if (authorization) headers.authorization = authorization;
    const response = await request(target, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      ...(dispatcher ? { dispatcher } : {}),
    });
    // The receiver's answer is not used; read it so the connection can be reused.
    await response.body.dump({ limit: 64 * 1024 }).catch(() => {});
    if (response.statusCode >= 200 && response.statusCode < 300) return { ok: true };
    const wait = retryAfterMs(response.headers['retry-after'], now());
    return {
      ok: false,
      error: `receiver ${url.host} answered HTTP ${response.statusCode}`,
      ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    };
  }

  async function deliver(row: OutboxRow): Promise<HandlerOutcome> {
    const payload = NotifyPayload.safeParse(row.payload);
    if (!payload.success) return { abandon: 'notify row without a url in its payload' };
    if (!row.runId) return { abandon: 'notify row without a run id' };
    let url: URL;
    try {
      url = new URL(payload.data.url);
    } catch {
      return { abandon: 'the notification URL is not a valid URL' };
    }
    const deadline = Date.parse(row.createdAt) + maxAgeMs;

    // A store error here propagates: the delivery loop logs it and retries the row.
    const run = await deps.renderRun(row.runId);
    if (!run) return { abandon: `run ${row.runId} no longer exists` };

    let attempt: Attempt;
    try {
      await assertPublicUrl(url, { allowPrivate: deps.allowPrivate });
      attempt = await send(url, row.runId, run);
    } catch (error) {
      const blocked = egressRefusalIn(error);
      if (blocked) return { abandon: `notification not sent: ${blocked.message}` };
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
        attempt = { ok: false, error: `receiver ${url.host} did not answer within ${timeoutMs} ms` };
      } else {
        attempt = { ok: false, error: `sending to ${url.host} failed: ${errorMessage(error)}` };
      }
    }
    if (attempt.ok) return { done: true };

    const current = now();
    if (!(current < deadline)) {
      return {
        abandon: `gave up after ${row.attempts} attempts over ${maxAgeMs / 3_600_000} h: ${attempt.error}`,
      };
    }
    const delay = Math.max(
      delays[Math.min(Math.max(row.attempts, 1), delays.length) - 1] ?? 0,
      attempt.retryAfterMs ?? 0,
    );
    // The last attempt falls on the deadline itself rather than beyond it.
    return { retryAt: new Date(Math.min(current + delay, deadline)), error: attempt.error };
  }

  return Object.assign(deliver, {
    close: async () => {
      await ownDispatcher?.close();
    },
  });
}
