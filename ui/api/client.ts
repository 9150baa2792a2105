/**
 * The dashboard's client of the public /v1 API: every call carries the signed-in key in the
 * Authorization header (never in a URL), and every failure becomes an ApiFailure with the error body's
 * message, code and the catalog's hint (contract/api/errors.ts), so pages show what to do next.
 */
import type { ApiErrorBody, ListRunsQuery, Me, Run, RunList, RunLogEvent, RunResults } from './types.ts';

export const API_BASE = '/v1';

/** An error answer of the API, or a request that got no answer. */
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string;
  readonly hint: string | undefined;
  readonly traceId: string | undefined;

  constructor(status: number, message: string, code: string, hint?: string, traceId?: string) {
    super(message);
    this.name = 'ApiFailure';
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.traceId = traceId;
  }
}

/** The status and code of an answer that never came (network down, server gone). */
const NO_ANSWER = { status: 0, code: 'NETWORK_ERROR' };

export interface RequestOptions {
  query?: Record<string, string | undefined> | undefined;
  /** Sent as JSON; a Blob (an uploaded File) is sent as it is, with its own content type. */
  body?: unknown;
  signal?: AbortSignal | undefined;
}

function urlOf(path: string, query?: RequestOptions['query']): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== '') search.set(name, value);
  }
  const text = search.toString();
  return `${API_BASE}${path}${text ? `?${text}` : ''}`;
}

async function failureOf(response: Response): Promise<ApiFailure> {
  const traceId = response.headers.get('x-trace-id') ?? undefined;
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as Partial<ApiErrorBody>;
    const error = body.error;
    if (error && typeof error.message === 'string' && typeof error.code === 'string') {
      const hint = (error as { hint?: unknown }).hint;
      return new ApiFailure(
        response.status,
        error.message,
        error.code,
        typeof hint === 'string' ? hint : undefined,
        traceId,
      );
    }
  } catch {
    // Not the API's error shape (a proxy's page): the status line is all there is.
  }
  return new ApiFailure(
    response.status,
    `HTTP ${response.status} ${response.statusText}`.trim(),
    'HTTP_ERROR',
  );
}

/** The API as one signed-in key sees it. */
export class ApiClient {
  readonly #key: string;

  constructor(key: string) {
    this.#key = key;
  }

  /** Fetches with the key; resolves to the response only when it is a success. */
  async fetch(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    let response: Response;
    const { body } = options;
    const contentType =
      body instanceof Blob
        ? body.type || 'application/octet-stream'
        : body !== undefined && 'application/json';
    try {
      response = await fetch(urlOf(path, options.query), {
        method,
        headers: {
          authorization: `Bearer ${this.#key}`,
          accept: 'application/json',
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        ...(body !== undefined ? { body: body instanceof Blob ? body : JSON.stringify(body) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        cache: 'no-store',
      });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ApiFailure(
        NO_ANSWER.status,
        `The server did not answer (${error instanceof Error ? error.message : String(error)})`,
        NO_ANSWER.code,
        'Check that kubeglue is running and reachable, then try again.',
      );
    }
    if (!response.ok) throw await failureOf(response);
    return response;
  }

  async json<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
    const response = await this.fetch(method, path, options);
    return (await response.json()) as T;
  }

  me(signal?: AbortSignal): Promise<Me> {
    return this.json('GET', '/me', { signal });
  }

  listRuns(query: ListRunsQuery, signal?: AbortSignal): Promise<RunList> {
    return this.json('GET', '/runs', { query, signal });
  }

  getRun(runId: string, signal?: AbortSignal): Promise<Run> {
    return this.json('GET', `/runs/${encodeURIComponent(runId)}`, { signal });
  }

  getRunResults(runId: string, signal?: AbortSignal): Promise<RunResults> {
    return this.json('GET', `/runs/${encodeURIComponent(runId)}/results`, { signal });
  }

  cancelRun(runId: string): Promise<Run> {
    return this.json('POST', `/runs/${encodeURIComponent(runId)}/cancel`);
  }

  /** Starts a saved tool in the background, as the dashboard (requestSource frontend). */
  startRun(toolId: string, inputs: Record<string, unknown> | undefined): Promise<Run> {
    return this.json('POST', `/tools/${encodeURIComponent(toolId)}/run`, {
      body: { ...(inputs ? { inputs } : {}), options: { async: true, requestSource: 'frontend' } },
    });
  }

  /**
   * Follows the live events of one run (`GET /v1/logs/stream`, Server-Sent Events) until the run ends,
   * the stream closes or the signal aborts. Read with fetch, not EventSource: EventSource cannot send the
   * Authorization header, and the key must never travel in a URL.
   */
  async followRun(runId: string, onEvent: (event: RunLogEvent) => void, signal: AbortSignal): Promise<void> {
    const response = await this.fetch('GET', '/logs/stream', { query: { runId }, signal });
    if (!response.body) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const event = parseServerSentEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) onEvent(event);
          end = buffer.indexOf('\n\n');
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
}

/** The RunLogEvent of one SSE block (`id:` and `data:` lines); comments and pings give undefined. */
export function parseServerSentEvent(block: string): RunLogEvent | undefined {
  const data = block
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trimStart())
    .join('\n');
  if (!data) return undefined;
  try {
    return JSON.parse(data) as RunLogEvent;
  } catch {
    return undefined;
  }
}
