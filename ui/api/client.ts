/**
 * The dashboard's client of the public /v1 API: every call carries the signed-in key in the
 * Authorization header (never in a URL), and every failure becomes an ApiFailure with the error body's
 * message, code and the catalog's hint (contract/api/errors.ts), so pages show what to do next.
 */
import type {
  ApiErrorBody,
  ErrorIssue,
  ListRunsQuery,
  ListToolsQuery,
  Me,
  Run,
  RunList,
  RunLogEvent,
  RunRequest,
  RunResults,
  Tool,
  ToolCreateBody,
  ToolList,
  ToolUpdateBody,
} from './types.ts';

export const API_BASE = '/v1';

/** An error answer of the API, or a request that got no answer. */
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string;
  readonly hint: string | undefined;
  readonly traceId: string | undefined;
  /** Each problem at its field, when the API refused input field by field (`error.issues`). */
  readonly issues: readonly ErrorIssue[];

  constructor(
    status: number,
    message: string,
    code: string,
    hint?: string,
    traceId?: string,
    issues: readonly ErrorIssue[] = [],
  ) {
    super(message);
    this.name = 'ApiFailure';
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.traceId = traceId;
    this.issues = issues;
  }
}

/** The status and code of an answer that never came (network down, server gone). */
const NO_ANSWER = { status: 0, code: 'NETWORK_ERROR' };

export interface RequestOptions {
  query?: Record<string, string | undefined> | undefined;
  /** Sent as JSON; a Blob (an uploaded File) is sent as it is, with its own content type. */
  body?: unknown;
  signal?: AbortSignal | undefined;
  /** The media type asked for (application/json unless given). */
  accept?: string;
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
        issuesOf(error.issues),
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

/** The well-formed issues of an error body; anything else is left out (the message still says it all). */
function issuesOf(value: unknown): ErrorIssue[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (issue): issue is ErrorIssue =>
      typeof issue === 'object' &&
      issue !== null &&
      Array.isArray((issue as ErrorIssue).path) &&
      typeof (issue as ErrorIssue).message === 'string',
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
          accept: options.accept ?? 'application/json',
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

  listTools(query: ListToolsQuery, signal?: AbortSignal): Promise<ToolList> {
    return this.json('GET', '/tools', { query, signal });
  }

  getTool(toolId: string, signal?: AbortSignal): Promise<Tool> {
    return this.json('GET', `/tools/${encodeURIComponent(toolId)}`, { signal });
  }

  /** The tool as the Tool resource kubectl applies, in YAML. */
  async getToolManifestYaml(toolId: string, signal?: AbortSignal): Promise<string> {
    const path = `/tools/${encodeURIComponent(toolId)}/manifest`;
    const response = await this.fetch('GET', path, { signal, accept: 'application/yaml' });
    return response.text();
  }

  createTool(body: ToolCreateBody): Promise<Tool> {
    return this.json('POST', '/tools', { body });
  }

  updateTool(toolId: string, body: ToolUpdateBody): Promise<Tool> {
    return this.json('PUT', `/tools/${encodeURIComponent(toolId)}`, { body });
  }

  async deleteTool(toolId: string): Promise<void> {
    await this.fetch('DELETE', `/tools/${encodeURIComponent(toolId)}`);
  }

  /**
   * Runs a saved tool as the dashboard (requestSource frontend): synchronous (the finished run, with its
   * data) unless `options.async`, then the run just accepted.
   */
  runTool(toolId: string, request: RunRequest): Promise<Run> {
    return this.json('POST', `/tools/${encodeURIComponent(toolId)}/run`, {
      body: { ...request, options: { ...request.options, requestSource: 'frontend' } },
    });
  }

  /** Starts a saved tool in the background, as the dashboard (requestSource frontend). */
  startRun(toolId: string, inputs: Record<string, unknown> | undefined): Promise<Run> {
    return this.runTool(toolId, { ...(inputs ? { inputs } : {}), options: { async: true } });
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
