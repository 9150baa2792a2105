/**
 * The client commands' HTTP client of the /v1 API: the key goes in the Authorization header (never in a
 * URL, so it cannot reach a message), answers are checked with zod, and an error answer becomes an
 * ApiError carrying the API's own `error.message` and code.
 */
import type { z } from 'zod';
import { ErrorBody } from '../../contract/api/bodies.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import type { JsonValue } from '../../contract/json.ts';
import { withoutKey } from './output.ts';
import type { Connection } from './settings.ts';

/** The API refused a request, answered something unexpected, or could not be reached: exit code 1. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  /** The API's error answer, for `--output json`. */
  readonly body: JsonValue | undefined;
  /** What to do about it, from the API's error catalog. */
  readonly hint: string | undefined;

  constructor(message: string, status: number, code?: string, body?: JsonValue, hint?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
    this.hint = hint;
  }
}

/** Something the API sent: as the commands read it, and as it was sent (what `--output json` prints). */
export interface Item<T> {
  value: T;
  raw: JsonValue;
}

export interface Answer<T> extends Item<T> {
  status: number;
}

/** The items of a list answer (`{ "data": [...] }`). */
export function itemsOf<T>(answer: Item<{ data: T[] }>): Array<Item<T>> {
  const raw = (answer.raw as { data: JsonValue[] }).data;
  return answer.value.data.map((value, index) => ({ value, raw: raw[index] as JsonValue }));
}

/** The API's largest page of tools and schedules. */
const PAGE_SIZE = 100;

type Query = Record<string, string | number | undefined>;

function pathWithQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

export class ApiClient {
  readonly url: string;
  readonly #apiKey: string;
  readonly #userAgent: string;
  readonly #signal: AbortSignal;

  constructor(connection: Connection, options: { version: string; signal: AbortSignal }) {
    this.url = connection.url;
    this.#apiKey = connection.apiKey;
    this.#userAgent = `kubeglue-cli/${options.version}`;
    this.#signal = options.signal;
  }

  async #fetch(
    method: string,
    path: string,
    init: { body?: unknown; signal?: AbortSignal; accept?: string },
  ) {
    try {
      return await fetch(`${this.url}/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#apiKey}`,
          accept: init.accept ?? 'application/json',
          'user-agent': this.#userAgent,
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal: init.signal ?? this.#signal,
      });
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(
        `cannot reach the kubeglue API at ${this.url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
        0,
      );
    }
  }

  /**
   * The API's error answer as an ApiError (its message and code), whatever the body holds. A proxy's page
   * or a server's error may echo the request's headers: the key is blanked before the text is cut short,
   * so no part of it is left.
   */
  async #failure(method: string, path: string, response: Response): Promise<ApiError> {
    const text = withoutKey(await response.text(), this.#apiKey);
    let json: JsonValue | undefined;
    try {
      json = JSON.parse(text) as JsonValue;
    } catch {
      // not JSON: a proxy's page, say
    }
    const parsed = ErrorBody.safeParse(json);
    if (parsed.success) {
      const { message, code, hint } = parsed.data.error;
      return new ApiError(message, response.status, code, json, hint);
    }
    const shown = text.trim().slice(0, 200);
    return new ApiError(
      `${method} ${path.split('?')[0]} answered HTTP ${response.status}${shown ? `: ${shown}` : ''}`,
      response.status,
      undefined,
      json,
    );
  }

  /** One JSON request; a 4xx/5xx answer throws an ApiError, an answer `schema` refuses too. */
  async request<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    options: { query?: Query; body?: unknown } = {},
  ): Promise<Answer<z.output<S>>> {
    const target = pathWithQuery(path, options.query);
    const response = await this.#fetch(method, target, { body: options.body });
    if (!response.ok) throw await this.#failure(method, target, response);
    let raw: JsonValue;
    try {
      raw = (await response.json()) as JsonValue;
    } catch {
      throw new ApiError(`${method} ${path} answered something that is not JSON`, response.status);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      throw new ApiError(
        `unexpected answer to ${method} ${path}: ${formatIssues(parsed.error)}`,
        response.status,
      );
    }
    return { status: response.status, value: parsed.data, raw };
  }

  /** Every item of a paged list (`?page=&limit=`, answers with `hasMore`), page after page. */
  async allPages<T>(
    path: string,
    schema: z.ZodType<{ data: T[]; hasMore: boolean }>,
    query: Query = {},
  ): Promise<Array<Item<T>>> {
    const items: Array<Item<T>> = [];
    for (let page = 1; ; page++) {
      const answer = await this.request('GET', path, schema, { query: { ...query, page, limit: PAGE_SIZE } });
      items.push(...itemsOf(answer));
      if (!answer.value.hasMore || answer.value.data.length === 0) return items;
    }
  }

  /** `GET /v1/logs/stream`: the open event stream (its body), or an ApiError. */
  async openLogStream(query: { runId?: string; traceId?: string }, signal: AbortSignal): Promise<Response> {
    const target = pathWithQuery('/logs/stream', query);
    const response = await this.#fetch('GET', target, { signal, accept: 'text/event-stream' });
    if (!response.ok) throw await this.#failure('GET', target, response);
    return response;
  }
}
