import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, type Dispatcher, ProxyAgent, request, Socks5ProxyAgent } from 'undici';
import { backoffDelay, sleep } from '../../platform/backoff.ts';
import { statusError } from './status-error.ts';

/**
 * HTTP to the API server: authentication and TLS from a client-node KubeConfig, JSON in and out, retries
 * of throttled and failed reads, and newline-delimited JSON streams for watches.
 *
 * client-node's own request path builds a new undici Agent (a new TLS connection pool) for every call it
 * authenticates, and its Watch cannot be aborted from outside or told how long to wait; so only the
 * KubeConfig is used (credentials, CA, proxy settings), and connections are pooled here.
 */

export interface TransportOptions {
  /** Tries per request when answered 429 (any verb), or 5xx / a network error (reads only). Default 4. */
  attempts?: number;
  /** Longest single wait between tries, whatever Retry-After asks (default 10 s). */
  maxRetryDelayMs?: number;
  /** Time to wait for an answer's headers and between its body chunks (default 30 s). */
  requestTimeoutMs?: number;
  userAgent?: string;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface TransportRequest {
  method: HttpMethod;
  /** Absolute path on the server, e.g. /apis/kubeglue.dev/v1alpha1/namespaces/x/tools. */
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  /** Content type of body (default application/json). */
  contentType?: string;
  signal?: AbortSignal;
}

export interface StreamRequest extends Omit<TransportRequest, 'method' | 'body' | 'contentType'> {
  /** Longest silence on the stream before the connection counts as dead; 0: no limit. */
  idleTimeoutMs: number;
}

const JSON_TYPE = 'application/json';

export class ClusterTransport {
  readonly #config: KubeConfig;
  readonly #server: string;
  readonly #attempts: number;
  readonly #maxRetryDelayMs: number;
  readonly #timeoutMs: number;
  readonly #userAgent: string;
  #dispatcher: { key: string; dispatcher: Dispatcher } | undefined;

  constructor(config: KubeConfig, options: TransportOptions = {}) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.#config = config;
    this.#server = cluster.server.replace(/\/+$/, '');
    this.#attempts = Math.max(1, options.attempts ?? 4);
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 10_000;
    this.#timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#userAgent = options.userAgent ?? 'kubeglue';
  }

  /** The parsed JSON answer of a 2xx; any other answer throws its ResourceError. */
  async json(req: TransportRequest): Promise<unknown> {
    const response = await this.#send(req, this.#timeoutMs);
    const text = await response.body.text();
    if (!text) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw statusError(502, `the API server answered ${req.method} ${req.path} with something not JSON`);
    }
  }

  /**
   * Each line of a 200 answer, parsed, until the server ends the stream (the iteration ends), the
   * connection fails (throws) or req.signal aborts (the iteration ends).
   */
  async *stream(req: StreamRequest): AsyncGenerator<unknown> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#send({ ...req, method: 'GET' }, req.idleTimeoutMs);
    } catch (error) {
      if (req.signal?.aborted) return;
      throw error;
    }
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline = buffer.indexOf('\n');
        while (newline >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (line) yield parseLine(line);
          newline = buffer.indexOf('\n');
        }
      }
      const rest = (buffer + decoder.decode()).trim();
      if (rest) yield parseLine(rest);
    } catch (error) {
      if (req.signal?.aborted) return;
      throw error;
    } finally {
      response.body.destroy();
    }
  }

  async #send(req: TransportRequest, timeoutMs: number): Promise<Dispatcher.ResponseData> {
    // A request the server did not run (429) can always be repeated; others only when they are reads.
    const idempotent = req.method === 'GET';
    const url = new URL(this.#server + req.path);
    for (const [key, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    for (let attempt = 1; ; attempt++) {
      const { headers, dispatcher } = await this.#connection();
      headers.accept = JSON_TYPE;
      if (body !== undefined) headers['content-type'] = req.contentType ?? JSON_TYPE;
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method: req.method,
          headers,
          body,
          dispatcher,
          signal: req.signal,
          headersTimeout: this.#timeoutMs,
          bodyTimeout: timeoutMs,
        });
      } catch (error) {
        if (req.signal?.aborted || !idempotent || attempt >= this.#attempts) throw error;
        await sleep(this.#retryDelay(attempt, undefined), req.signal);
        continue;
      }
      if (response.statusCode >= 200 && response.statusCode < 300) return response;
      const text = await response.body.text().catch(() => '');
      const error = statusError(response.statusCode, parseOrText(text), response.headers['retry-after']);
      const retryable = response.statusCode === 429 || (idempotent && response.statusCode >= 500);
      if (!retryable || attempt >= this.#attempts || req.signal?.aborted) throw error;
      await sleep(this.#retryDelay(attempt, error.retryAfterSeconds), req.signal);
      if (req.signal?.aborted) throw error;
    }
  }

  #retryDelay(attempt: number, retryAfterSeconds: number | undefined): number {
    if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, this.#maxRetryDelayMs);
    return backoffDelay(attempt - 1, { initialMs: 200, maxMs: this.#maxRetryDelayMs });
  }

  /**
   * Headers and TLS material come from the KubeConfig on every request, so rotated tokens (exec plugins,
   * the in-cluster token file) are picked up; the pool is rebuilt only when the TLS material changes.
   */
  async #connection(): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher }> {
    const options: RequestOptions = {};
    await this.#config.applyToHTTPSOptions(options);
    const headers: Record<string, string> = { 'user-agent': this.#userAgent };
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined)
        headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const tls = {
      ...(options.ca ? { ca: options.ca as Buffer } : {}),
      ...(options.cert ? { cert: options.cert as Buffer } : {}),
      ...(options.key ? { key: options.key as Buffer } : {}),
      ...(options.rejectUnauthorized !== undefined ? { rejectUnauthorized: options.rejectUnauthorized } : {}),
      ...(options.servername ? { servername: options.servername } : {}),
    };
    const key = [tls.ca, tls.cert, tls.key, tls.rejectUnauthorized, tls.servername]
      .map((part) => (Buffer.isBuffer(part) ? part.toString('base64') : String(part)))
      .join('|');
    if (this.#dispatcher?.key !== key) {
      const previous = this.#dispatcher?.dispatcher;
      this.#dispatcher = { key, dispatcher: this.#makeDispatcher(tls) };
      previous?.close().catch(() => {});
    }
    return { headers, dispatcher: this.#dispatcher.dispatcher };
  }

  #makeDispatcher(tls: Record<string, unknown>): Dispatcher {
    // client-node's own mapping of a kubeconfig cluster (proxy-url, TLS) onto undici options.
    const options = this.#config.createDispatcherOptions(this.#config.getCurrentCluster(), tls);
    switch (options.type) {
      case 'proxy':
        return new ProxyAgent({ uri: options.uri, requestTls: options.requestTls, connect: options.connect });
      case 'socks':
        return new Socks5ProxyAgent(options.uri, { requestTls: options.requestTls });
      case 'agent':
        return new Agent({ connect: options.connect });
      default:
        return new Agent({ connect: { keepAlive: true, keepAliveInitialDelay: 30_000 } });
    }
  }

  /** Closes pooled connections (open watches end). */
  async close(): Promise<void> {
    const current = this.#dispatcher?.dispatcher;
    this.#dispatcher = undefined;
    await current?.close().catch(() => {});
  }
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    throw statusError(502, `the API server sent a watch line that is not JSON: ${line.slice(0, 100)}`);
  }
}
