/**
 * HTTP/HTTPS request steps over undici: keep-alive agents whose connections pass the egress guard, each
 * request bounded by the run's deadline and abortable, redirects followed per `http-redirect.ts`,
 * retried per `retry.ts`, body parsed per `http-parse.ts`; its errors are `http-errors.ts`'s, with URLs
 * masked per `url-mask.ts`.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { Agent, type Dispatcher, request } from 'undici';
import type { JsonValue } from '../../contract/json.ts';
import type { GatewayRoute, RequestBudget } from '../types.ts';
import { AgentCache } from './agent-cache.ts';
import { decompress } from './decompress.ts';
import { discardBody } from './discard-body.ts';
import { EgressGuard, type EgressPolicy, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { egressConnector, type ResolveAll } from './egress-socket.ts';
import { gatewayAgentFor } from './gateway-http.ts';
import type { GatewayRelayAddress } from './gateway-socket.ts';
import {
  errorCode,
  HttpRequestError,
  HttpStatusError,
  NON_RETRYABLE_CODES,
  SELF_EXPLAINING_CODES,
} from './http-errors.ts';
import { parseResponseBody } from './http-parse.ts';
import {
  type CredentialCarriers,
  type Hop,
  nextHop,
  REDIRECT_STATUSES,
  RedirectError,
} from './http-redirect.ts';
import {
  type AttemptOutcome,
  DEFAULT_RETRY_POLICY,
  decideRetry,
  parseRetryAfter,
  type RetryPolicy,
} from './retry.ts';
import { newSpanId } from './traceparent.ts';
import { isSensitiveQueryName, maskUrl } from './url-mask.ts';

export { HttpRequestError, type HttpRequestErrorKind, HttpStatusError } from './http-errors.ts';

export type HttpBody = string | Uint8Array | JsonValue;

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Appended to the URL's own query string, in order; repeated keys allowed. */
  query: Array<[string, string]>;
  body?: HttpBody | undefined;
  signal: AbortSignal;
  /** Epoch ms: no request may run past it. */
  deadline: number;
  retry: { enabled: boolean; maxAttempts?: number | undefined };
  traceparent?: string | undefined;
  /** Header names that carry credentials: dropped on a redirect to another origin. */
  credentialHeaders?: readonly string[] | undefined;
  /** Query parameter names that carry credentials: removed on a redirect to another origin. */
  credentialQueryParams?: readonly string[] | undefined;
  /** The body carries a credential: a 307/308 to another origin is then not followed. */
  credentialBody?: boolean | undefined;
  /** Allow rules of the step's system, on top of the egress policy's. */
  allowedNetworks?: readonly string[] | undefined;
  /** The step's system is behind a gateway: connections to its origin go through the tunnel. */
  gateway?: GatewayRoute | undefined;
  /** Scrubs credentials from text; applied to error bodies before they are cut to a snippet. */
  redact?: ((text: string) => string) | undefined;
  /** Told before each retry (live progress). */
  onRetry?: ((retry: { attempt: number; delayMs: number; status?: number | undefined }) => void) | undefined;
  /**
   * The system's rate budget: each attempt takes from it, and a 429 or 503 with Retry-After pauses all of
   * it (every run's requests to the system wait, not only this one's).
   */
  budget?: RequestBudget | undefined;
}

/** Statuses whose Retry-After is the system asking everyone to slow down, not only this request. */
const PAUSING_STATUSES = new Set([429, 503]);

export interface HttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** Parsed body, a file reference for binary content, or null when empty. */
  data: JsonValue;
}

export interface HttpClientOptions {
  /** Largest response body accepted, in bytes. */
  maxResponseBytes?: number;
  retryPolicy?: Partial<RetryPolicy>;
  /** Which addresses may be reached (default: everything but the cloud metadata addresses). */
  egress?: EgressPolicy;
  /** Resolver for host names (tests fake DNS answers with it). */
  resolve?: ResolveAll;
  /** Overrides the guarded agents (tests); the egress policy is then not applied. */
  dispatcher?: Dispatcher;
  /** The API's gateway relay (pool workers); without it private systems cannot be reached. */
  gatewayRelay?: GatewayRelayAddress | undefined;
  /** Injectable for tests: waits `ms` unless the signal aborts first. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  now?: () => number;
  random?: () => number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024;
export const MAX_REDIRECTS = 5;
/** Bytes of an error response read for its message; the rest is discarded. */
const ERROR_BODY_READ_BYTES = 16 * 1024;

/** One compiled guard per policy object (a protocol table keeps its policy for the process's life). */
const guards = new WeakMap<EgressPolicy, EgressGuard>();

function guardFor(policy: EgressPolicy): EgressGuard {
  let guard = guards.get(policy);
  if (!guard) {
    guard = new EgressGuard(policy);
    guards.set(policy, guard);
  }
  return guard;
}

/** Keep-alive agents by egress rules (almost always one: the policy without a system's extra rules). */
const agents = new AgentCache(16);

/** Injected resolvers (tests) get agents of their own: a fake DNS answer must not leak into real ones. */
const resolverIds = new WeakMap<ResolveAll, number>();
let nextResolverId = 1;

function resolverId(resolve: ResolveAll): number {
  const known = resolverIds.get(resolve);
  if (known !== undefined) return known;
  const id = nextResolverId++;
  resolverIds.set(resolve, id);
  return id;
}

/** An agent per guard: pools per origin, bounded connections each, idle sockets closed. */
function agentFor(guard: EgressGuard, resolve: ResolveAll | undefined): Dispatcher {
  const key = resolve ? `${guard.key}#${resolverId(resolve)}` : guard.key;
  return agents.get(key, () =>
    new Agent({
      connections: 32,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 300_000,
      connect: egressConnector(guard, { timeoutMs: 30_000, ...(resolve ? { resolve } : {}) }),
    }).compose(decompress),
  );
}

/** Closes the agents' sockets (shutdown, tests). The next request opens a new agent. */
export async function closeHttpAgent(): Promise<void> {
  await agents.closeAll();
}

/** Headers undici manages itself or refuses. */
const DROPPED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'content-length',
]);

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function isJsonContainerText(text: string): boolean {
  const trimmed = text.trim();
  if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}

interface PreparedRequest {
  method: string;
  url: URL;
  maskedUrl: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

function prepare(req: HttpRequest): PreparedRequest {
  const method = (req.method || 'GET').toUpperCase();
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    throw new HttpRequestError('invalid-request', `Invalid URL: ${maskUrl(req.url)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HttpRequestError('invalid-request', `Not an HTTP(S) URL: ${maskUrl(req.url)}`);
  }
  for (const [name, value] of req.query) url.searchParams.append(name, value);
  // Masked before userinfo is moved into a header, and with the step's query pairs, as it was sent.
  const maskedUrl = maskUrl(url.toString());

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (DROPPED_HEADERS.has(lower) || lower === 'traceparent') continue;
    headers[name] = value;
  }
  if (url.username || url.password) {
    // undici does not turn userinfo into Basic auth; an explicit Authorization header wins.
    if (!hasHeader(headers, 'authorization')) {
      const user = decodeURIComponent(url.username);
      const pass = decodeURIComponent(url.password);
      headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    }
    url.username = '';
    url.password = '';
  }
  if (!hasHeader(headers, 'accept-encoding')) headers['accept-encoding'] = 'gzip, deflate, br';
  const userTraceparent = Object.entries(req.headers).find(([name]) => name.toLowerCase() === 'traceparent');
  headers.traceparent =
    req.traceparent ?? userTraceparent?.[1] ?? `00-${newSpanId()}${newSpanId()}-${newSpanId()}-01`;

  let body: string | Uint8Array | undefined;
  const bodyAllowed = method !== 'GET' && method !== 'HEAD';
  if (bodyAllowed && req.body !== undefined && req.body !== null) {
    if (typeof req.body === 'string') {
      body = req.body;
      if (!hasHeader(headers, 'content-type') && isJsonContainerText(req.body)) {
        headers['content-type'] = 'application/json';
      }
    } else if (req.body instanceof Uint8Array) {
      body = req.body;
    } else {
      body = JSON.stringify(req.body);
      if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'application/json';
    }
  }
  return { method, url, maskedUrl, headers, body };
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

interface AttemptContext {
  prepared: PreparedRequest;
  carriers: CredentialCarriers;
  redact: (text: string) => string;
  runSignal: AbortSignal;
  deadline: number;
  startedAt: number;
  dispatcher: Dispatcher;
  maxResponseBytes: number;
  now: () => number;
}

type AttemptResult =
  | { ok: true; response: HttpResponse }
  | { ok: false; error: Error; outcome: AttemptOutcome };

/** Reads at most `limit` bytes; `onOverflow` decides whether passing it is an error or a cut. */
async function readBody(
  body: AsyncIterable<Uint8Array> & Parameters<typeof discardBody>[0],
  limit: number,
  onOverflow: 'throw' | 'truncate',
): Promise<Buffer | 'too-large'> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) {
      discardBody(body);
      if (onOverflow === 'throw') return 'too-large';
      chunks.push(chunk.subarray(0, chunk.byteLength - (size - limit)));
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Headers and query parameters that must not follow a redirect to another origin: those the request
 * names as credentials, and any query parameter whose name conventionally carries one (api_key, token…).
 */
function credentialCarriers(req: HttpRequest, prepared: PreparedRequest): CredentialCarriers {
  const named = new Set(req.credentialQueryParams ?? []);
  const query = [...prepared.url.searchParams].filter(
    ([name]) => named.has(name) || isSensitiveQueryName(name),
  );
  return {
    headers: new Set((req.credentialHeaders ?? []).map((name) => name.toLowerCase())),
    query,
    body: req.credentialBody === true,
  };
}

function describe(prepared: PreparedRequest): string {
  return `HTTP ${prepared.method} ${prepared.maskedUrl}`;
}

function abortedError(ctx: AttemptContext, timedOut: boolean, cause?: unknown): HttpRequestError {
  if (timedOut || (!ctx.runSignal.aborted && ctx.now() >= ctx.deadline)) {
    const elapsed = ctx.now() - ctx.startedAt;
    return new HttpRequestError(
      'timeout',
      `${describe(ctx.prepared)} timed out: the run deadline was reached after ${elapsed} ms`,
      undefined,
      { cause },
    );
  }
  return new HttpRequestError('aborted', `${describe(ctx.prepared)} was aborted`, undefined, { cause });
}

/** The masked URL of a hop, for messages about where a redirect led. */
function describeHop(ctx: AttemptContext, hop: Hop): string {
  const url = hop.url.toString();
  return url === ctx.prepared.url.toString()
    ? describe(ctx.prepared)
    : `${describe(ctx.prepared)} (redirected to ${maskUrl(url)})`;
}

/** Sends the request and follows redirects (each hop a new request through the guarded agent). */
async function follow(
  ctx: AttemptContext,
  signal: AbortSignal,
  remaining: number,
): Promise<{ response: Dispatcher.ResponseData; hop: Hop }> {
  const { prepared } = ctx;
  let hop: Hop = {
    method: prepared.method,
    url: prepared.url,
    headers: prepared.headers,
    body: prepared.body,
  };
  for (let redirects = 0; ; redirects++) {
    const response = await request(hop.url, {
      method: hop.method as Dispatcher.HttpMethod,
      headers: hop.headers,
      body: hop.body ?? null,
      dispatcher: ctx.dispatcher,
      signal,
      // Our own timer bounds the request; undici's inactivity timers must not fire first.
      headersTimeout: remaining + 1000,
      bodyTimeout: remaining + 1000,
    });
    const location = response.headers.location;
    if (!REDIRECT_STATUSES.has(response.statusCode) || typeof location !== 'string') return { response, hop };
    await response.body.dump().catch(() => {});
    if (redirects >= MAX_REDIRECTS) {
      throw new RedirectError(`more than ${MAX_REDIRECTS} redirects`);
    }
    hop = nextHop(hop, response.statusCode, location, ctx.carriers);
  }
}

async function attempt(ctx: AttemptContext): Promise<AttemptResult> {
  const { prepared } = ctx;
  const remaining = ctx.deadline - ctx.now();
  if (ctx.runSignal.aborted) throw abortedError(ctx, false);
  if (remaining <= 0) throw abortedError(ctx, true);

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('deadline'));
  }, remaining);
  const onRunAbort = (): void => controller.abort(ctx.runSignal.reason);
  ctx.runSignal.addEventListener('abort', onRunAbort, { once: true });
  try {
    let response: Dispatcher.ResponseData;
    let hop: Hop;
    try {
      ({ response, hop } = await follow(ctx, controller.signal, remaining));
    } catch (error) {
      if (controller.signal.aborted) throw abortedError(ctx, timedOut, error);
      if (error instanceof RedirectError) {
        throw new HttpRequestError('invalid-request', `${describe(prepared)} failed: ${error.message}`);
      }
      const code = errorCode(error);
      if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
        throw abortedError(ctx, true, error);
      const detail = error instanceof Error ? error.message : String(error);
      const wrapped = new HttpRequestError(
        'network',
        `${describe(prepared)} failed: ${detail}${code && !SELF_EXPLAINING_CODES.has(code) && !detail.includes(code) ? ` (${code})` : ''}`,
        code,
        { cause: error },
      );
      if (code !== undefined && NON_RETRYABLE_CODES.has(code)) throw wrapped;
      return { ok: false, error: wrapped, outcome: { kind: 'network' } };
    }

    const headers = flattenHeaders(response.headers);
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    let bytes: Buffer | 'too-large';
    try {
      const declared = Number(headers['content-length']);
      if (ok && Number.isFinite(declared) && declared > ctx.maxResponseBytes) bytes = 'too-large';
      else
        bytes = await readBody(
          response.body,
          ok ? ctx.maxResponseBytes : ERROR_BODY_READ_BYTES,
          ok ? 'throw' : 'truncate',
        );
    } catch (error) {
      if (controller.signal.aborted) throw abortedError(ctx, timedOut, error);
      const detail = error instanceof Error ? error.message : String(error);
      const code = errorCode(error);
      const wrapped = new HttpRequestError(
        'network',
        `${describeHop(ctx, hop)} failed while reading the response: ${detail}`,
        code,
        { cause: error },
      );
      return { ok: false, error: wrapped, outcome: { kind: 'network' } };
    }
    if (bytes === 'too-large') {
      discardBody(response.body);
      throw new HttpRequestError(
        'too-large',
        `${describeHop(ctx, hop)}: the response body exceeds the limit of ${ctx.maxResponseBytes} bytes`,
      );
    }

    if (!ok) {
      const error = new HttpStatusError(
        response.statusCode,
        prepared.method,
        prepared.maskedUrl,
        headers,
        new TextDecoder().decode(bytes),
        ctx.redact,
      );
      return {
        ok: false,
        error,
        outcome: { kind: 'status', status: response.statusCode, retryAfter: headers['retry-after'] },
      };
    }
    const data = parseResponseBody({
      body: bytes,
      contentType: headers['content-type'],
      contentDisposition: headers['content-disposition'],
      url: hop.url.toString(),
    });
    return { ok: true, response: { status: response.statusCode, headers, data } };
  } finally {
    clearTimeout(timer);
    ctx.runSignal.removeEventListener('abort', onRunAbort);
  }
}

/** Waits for the system's budget, if it has one; a wait the run cannot afford fails like a timeout. */
async function takeBudget(req: HttpRequest, ctx: AttemptContext): Promise<(() => void) | undefined> {
  if (!req.budget) return undefined;
  try {
    return await req.budget.take(ctx.runSignal, ctx.deadline);
  } catch (error) {
    if (ctx.runSignal.aborted) throw abortedError(ctx, false, error);
    throw new HttpRequestError(
      'timeout',
      `${describe(ctx.prepared)} was not sent: ${error instanceof Error ? error.message : String(error)}`,
      undefined,
      { cause: error },
    );
  }
}

async function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  await sleepFor(ms, undefined, { signal });
}

/**
 * Sends one request step. Resolves on any 2xx; rejects with `HttpStatusError` for other statuses
 * and `HttpRequestError` when no status was obtained. Retries (when `req.retry.enabled`) network
 * errors, 408, 429 and 5xx with exponential backoff and full jitter, honouring Retry-After, never
 * past the deadline.
 */
export async function httpRequest(req: HttpRequest, options: HttpClientOptions = {}): Promise<HttpResponse> {
  const now = options.now ?? Date.now;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retryPolicy };
  if (req.retry.maxAttempts !== undefined)
    policy.maxAttempts = Math.max(1, Math.floor(req.retry.maxAttempts));
  const sleep = options.sleep ?? defaultSleep;
  const prepared = prepare(req);
  const guard = guardFor(options.egress ?? PERMISSIVE_EGRESS).withAllow(req.allowedNetworks);
  const ctx: AttemptContext = {
    prepared,
    carriers: credentialCarriers(req, prepared),
    redact: req.redact ?? ((text) => text),
    runSignal: req.signal,
    deadline: req.deadline,
    startedAt: now(),
    dispatcher:
      options.dispatcher ??
      (req.gateway
        ? gatewayAgentFor(req.gateway, options.gatewayRelay, guard, options.resolve)
        : agentFor(guard, options.resolve)),
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    now,
  };

  for (let attemptNumber = 1; ; attemptNumber++) {
    const release = await takeBudget(req, ctx);
    let result: AttemptResult;
    try {
      result = await attempt(ctx);
    } finally {
      release?.();
    }
    if (result.ok) return result.response;
    if (req.budget && result.outcome.kind === 'status' && PAUSING_STATUSES.has(result.outcome.status)) {
      const pauseMs = parseRetryAfter(result.outcome.retryAfter, now());
      if (pauseMs !== undefined && pauseMs > 0) req.budget.pause(pauseMs);
    }
    if (!req.retry.enabled) throw result.error;
    const decision = decideRetry({
      attempt: attemptNumber,
      outcome: result.outcome,
      policy,
      nowMs: now(),
      deadline: req.deadline,
      random: options.random ?? Math.random,
    });
    if (!decision.retry) throw result.error;
    req.onRetry?.({
      attempt: attemptNumber + 1,
      delayMs: decision.delayMs,
      ...(result.outcome.kind === 'status' ? { status: result.outcome.status } : {}),
    });
    try {
      await sleep(decision.delayMs, req.signal);
    } catch (error) {
      throw abortedError(ctx, false, error);
    }
  }
}
