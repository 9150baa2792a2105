import { Agent, request } from 'undici';

/** How to reach the API server: its URL, the CA that signed its serving certificate, a bearer token. */
export interface ApiConnection {
  url: string;
  caPem: string;
  token: string;
}

/** A non-2xx answer of the API server, with the Status object's reason when there was one. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;

  constructor(code: number, reason: string, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
  }
}

export function isKubeApiError(error: unknown, code?: number): error is KubeApiError {
  return error instanceof KubeApiError && (code === undefined || error.code === code);
}

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: T;
}

interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

/**
 * A small JSON client for the API server. Plain undici instead of @kubernetes/client-node: the
 * kubelet needs a handful of raw verbs (binding, status, preconditioned delete, watch), and raw JSON
 * keeps the objects exactly as the server sent them.
 */
export class KubeApi {
  readonly #base: string;
  readonly #token: string;
  readonly #agent: Agent;

  constructor(connection: ApiConnection) {
    this.#base = connection.url.replace(/\/+$/, '');
    this.#token = connection.token;
    // Watches are long-lived: no body timeout (the server ends them by timeoutSeconds).
    this.#agent = new Agent({ connect: { ca: connection.caPem }, bodyTimeout: 0, headersTimeout: 30_000 });
  }

  get url(): string {
    return this.#base;
  }

  #url(path: string, query: RequestOptions['query']): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {}))
      if (value !== undefined) params.set(key, String(value));
    const search = params.toString();
    return `${this.#base}${path}${search ? `?${search}` : ''}`;
  }

  async #send(method: string, path: string, options: RequestOptions) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: 'application/json',
      // Names us in managedFields and the audit log.
      'user-agent': 'process-kubelet',
    };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    const response = await request(this.#url(path, options.query), {
      method: method as 'GET',
      headers,
      body,
      dispatcher: this.#agent,
      signal: options.signal,
    });
    if (response.statusCode >= 300) {
      const text = await response.body.text();
      let reason = '';
      let message = text;
      try {
        const status = JSON.parse(text) as { reason?: string; message?: string };
        reason = status.reason ?? '';
        message = status.message ?? text;
      } catch {
        // Not a Status object: keep the raw text.
      }
      throw new KubeApiError(
        response.statusCode,
        reason,
        `${method} ${path}: ${response.statusCode} ${message}`,
      );
    }
    return response;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.#send(method, path, options);
    return (await response.body.json()) as T;
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('GET', path, options);
  }

  /**
   * One watch request from `resourceVersion`. Yields events until the server ends the stream; an
   * ERROR event (e.g. 410 Gone: the version is too old) is thrown as a KubeApiError.
   */
  async *watch<T>(
    path: string,
    resourceVersion: string,
    signal: AbortSignal,
    timeoutSeconds = 60,
  ): AsyncGenerator<WatchEvent<T>> {
    const response = await this.#send('GET', path, {
      query: { watch: 1, resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
      signal,
    });
    let buffered = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (!line) continue;
        const event = JSON.parse(line) as {
          type: string;
          object: T & { code?: number; reason?: string; message?: string };
        };
        if (event.type === 'ERROR') {
          const status = event.object;
          throw new KubeApiError(
            status.code ?? 500,
            status.reason ?? '',
            `watch ${path}: ${status.message ?? 'error'}`,
          );
        }
        yield event as WatchEvent<T>;
      }
    }
  }

  /** Drops every connection, in-flight watches included (they should have been aborted already). */
  close(): Promise<void> {
    return this.#agent.destroy();
  }
}
