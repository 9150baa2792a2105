/**
 * The client of the /v1 API for kubeglue's own callers: the dashboard (ui/api/client.ts) and the CLI
 * (bin/cli/client.ts) build on it. A request names its route, an export of route-paths.ts (generated
 * from the route table), whose method and path template it takes: `call(routes.getRun, { params: {
 * runId } })`. The rest is typed from the route table itself: the path's parameters, the query's names,
 * the body, and the answer (what the route's success responses' schemas infer to). When a route changes
 * in the table, a caller left behind no longer type-checks.
 *
 * Every failure is one ApiFailure: an error answer of the API (`{ error: { message, code, hint, issues } }`),
 * an answer that is not the API's, or no answer at all. What differs between the callers is their
 * transport: where the API is, the headers (the key, a User-Agent), what the text of an answer is
 * blanked of (the CLI's key), the browser's cache mode.
 *
 * No zod at run time (types only), so the dashboard's bundle does not carry it: the error body is read
 * field by field here, and the CLI checks the answers it reads with zod on top of this.
 */
import type { z } from 'zod';
import type { ErrorIssue } from './errors.ts';
import type { HttpVerb, ROUTE_TABLE } from './routes.ts';

/** A route as route-paths.ts writes it: its method and OpenAPI path template, `GET /runs/{runId}`. */
export type RoutePath = `${HttpVerb} /${string}`;

type TableRoute = (typeof ROUTE_TABLE)[number];

/** The table's routes by `METHOD path`: each route's types are worked out once, from its own entry. */
type Table = { [T in TableRoute as `${T['method']} ${T['path']}`]: T };

/** A route of the table (an export of route-paths.ts): any other method and path is refused. */
export type TableRoutePath = keyof Table;

/** The route table's entry of a route. */
export type RouteOf<R extends TableRoutePath> = Table[R];

type SuccessStatus = 200 | 201 | 202 | 204;
type Answered<Response> = Response extends { schema: infer S extends z.ZodType } ? z.output<S> : undefined;
type AnswerFor<T extends TableRoute> = {
  [S in SuccessStatus & keyof T['responses']]: Answered<T['responses'][S]>;
}[SuccessStatus & keyof T['responses']];

/** The parameter names of a path template: `/runs/{runId}/files/{fileKey}` → `runId | fileKey`. */
export type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | ParamNames<Rest>
  : never;

type QueryInput<T> = T extends { query: infer Q extends z.ZodType } ? z.input<Q> : { token?: string };

/** A query value as sent: strings, or numbers and booleans written as text. Unset and empty are left out. */
export type QueryValue = string | number | boolean | undefined;

/**
 * The query parameters of a route, by the names the table gives them. Never `token`: our callers send
 * the key in the Authorization header only, never in a URL.
 */
type QueryFor<T> = { [Name in Exclude<keyof QueryInput<T>, 'token'>]?: QueryValue };

type BodyField<T> = T extends { body: { schema: infer S extends z.ZodType } }
  ? T extends { body: { optional: true } }
    ? { body?: z.input<S> }
    : { body: z.input<S> }
  : T extends { bodyContentTypes: readonly string[] }
    ? { body: Blob }
    : { body?: never };

type ParamsField<P extends string> = [ParamNames<P>] extends [never]
  ? { params?: never }
  : { params: Readonly<Record<ParamNames<P>, string>> };

/** What a request may say besides its route. */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  /** The media type asked for: application/json unless given. */
  accept?: string;
}

type RequestFor<T extends TableRoute> = RequestOptions &
  ParamsField<T['path']> & { query?: QueryFor<T> } & BodyField<T>;

type RequiredKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? never : K }[keyof T];

type ArgsFor<T extends TableRoute> = [RequiredKeys<RequestFor<T>>] extends [never]
  ? [request?: RequestFor<T>]
  : [request: RequestFor<T>];

/** Each route's request and answer, worked out once. */
type Typed = {
  [K in keyof Table]: { request: RequestFor<Table[K]>; args: ArgsFor<Table[K]>; answer: AnswerFor<Table[K]> };
};

/** A request of route R: its path parameters, query and body as the table declares them. */
export type RouteRequest<R extends TableRoutePath> = Typed[R]['request'];
/** The request argument: optional when the route needs neither path parameters nor a body. */
export type RequestArgs<R extends TableRoutePath> = Typed[R]['args'];
/** What a route answers when it succeeds: its success responses' schemas, inferred. */
export type AnswerOf<R extends TableRoutePath> = Typed[R]['answer'];
/** The query parameters route R takes. */
export type QueryOf<R extends TableRoutePath> = QueryFor<RouteOf<R>>;

/** The codes of failures the client itself names; every other code is the API's (docs/errors.md). */
export const CLIENT_CODES = {
  /** No answer: the network, a server that is down, a refused TLS certificate. */
  noAnswer: 'NETWORK_ERROR',
  /** An error answer that is not the API's error body (a proxy's page). */
  notTheApi: 'HTTP_ERROR',
  /** A success answer the client cannot read (not JSON, or not the shape the caller reads). */
  unexpectedAnswer: 'UNEXPECTED_ANSWER',
  /** A path parameter left empty: the request is not sent. */
  emptyParameter: 'EMPTY_PARAMETER',
} as const;

export interface ApiFailureInit {
  /** The HTTP status; 0 when there was no answer (or no request). */
  status: number;
  message: string;
  code: string;
  hint?: string | undefined;
  traceId?: string | undefined;
  issues?: readonly ErrorIssue[];
  /** The error answer as sent, when it was JSON (the CLI's `--output json` prints it). */
  body?: unknown;
}

/** An error answer of the API, an answer the client cannot read, or a request that got no answer. */
export class ApiFailure extends Error {
  readonly status: number;
  /** The API's error code (KG_ERR_…), or one of CLIENT_CODES. */
  readonly code: string;
  /** What to do about it, from the API's error catalog. */
  readonly hint: string | undefined;
  readonly traceId: string | undefined;
  /** Each problem at its field, when the API refused input field by field (`error.issues`). */
  readonly issues: readonly ErrorIssue[];
  readonly body: unknown;

  constructor(init: ApiFailureInit) {
    super(init.message);
    this.name = 'ApiFailure';
    this.status = init.status;
    this.code = init.code;
    this.hint = init.hint;
    this.traceId = init.traceId;
    this.issues = init.issues ?? [];
    this.body = init.body;
  }
}

/** A route's method and path template: `GET /runs/{runId}` → `GET`, `/runs/{runId}`. */
function partsOf(route: RoutePath): { method: HttpVerb; template: string } {
  const space = route.indexOf(' ');
  return { method: route.slice(0, space) as HttpVerb, template: route.slice(space + 1) };
}

/**
 * The path and query of a request, relative to /v1: each `{name}` of the template filled with its
 * parameter, percent-encoded (an id may hold `/`, spaces, `?`); unset and empty query values left out.
 */
export function routeUrl(
  route: RoutePath,
  params: Readonly<Record<string, string>> = {},
  query: Readonly<Record<string, QueryValue>> = {},
): string {
  const path = partsOf(route).template.replace(/\{([^}]+)\}/g, (_template, name: string) => {
    const value = params[name];
    if (value === undefined || value === '') {
      throw new ApiFailure({
        status: 0,
        code: CLIENT_CODES.emptyParameter,
        message: `${route}: ${name} is empty`,
      });
    }
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/** How one caller reaches the API. */
export interface Transport {
  /** Where /v1 is: `/v1` (the dashboard, on the API's own origin) or `https://kubeglue.example.com/v1`. */
  base: string;
  /** The API, as a "cannot reach" message names it. */
  where: string;
  /** Headers every request carries: the Authorization header, a User-Agent. */
  headers: Readonly<Record<string, string>>;
  /** Text of an answer as it may be shown (the CLI blanks its key out of it, wherever an answer quoted it). */
  redact?(text: string): string;
  /** Used when a request brings no signal (the CLI's Ctrl-C). */
  signal?: AbortSignal;
  /** The browser's cache mode (the dashboard: no-store). */
  cache?: RequestInit['cache'];
}

/** Any route's request, as sent once its types were checked. */
interface SentRequest extends RequestOptions {
  params?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, QueryValue>>;
  body?: unknown;
}

/** How long the text of an answer that is not the API's may be in a message. */
const SHOWN_TEXT = 200;

const NO_ANSWER_HINT = 'Check that kubeglue is running and reachable, then try again.';

/** The API's error body (`{ error: { message, code, hint?, issues? } }`), or undefined for anything else. */
function apiErrorOf(json: unknown): Omit<ApiFailureInit, 'status' | 'traceId'> | undefined {
  const error = (json as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  if (typeof error !== 'object' || error === null) return undefined;
  const { message, code, hint, issues } = error;
  if (typeof message !== 'string' || typeof code !== 'string') return undefined;
  return { message, code, hint: typeof hint === 'string' ? hint : undefined, issues: issuesOf(issues) };
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

/** Why a fetch got no answer: Node's cause code (ECONNREFUSED, a TLS code), else the error's message. */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Calls routes of the route table through one transport. */
export class RouteClient {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The answer to a request when it is a success (2xx); anything else throws an ApiFailure. */
  async fetch<R extends TableRoutePath>(route: R, ...[request]: RequestArgs<R>): Promise<Response> {
    return (await this.#send(route, request as SentRequest | undefined)).response;
  }

  /** The JSON answer to a request, typed as the route declares it (not checked: the server did). */
  async call<R extends TableRoutePath>(route: R, ...[request]: RequestArgs<R>): Promise<AnswerOf<R>> {
    const { response, path } = await this.#send(route, request as SentRequest | undefined);
    if (response.status === 204) return undefined as AnswerOf<R>;
    try {
      return (await response.json()) as AnswerOf<R>;
    } catch {
      throw new ApiFailure({
        status: response.status,
        code: CLIENT_CODES.unexpectedAnswer,
        message: `${partsOf(route).method} /v1${path} answered something that is not JSON`,
      });
    }
  }

  /** Sends a request whose types were checked; `path` is its path without the query, for messages. */
  async #send(route: RoutePath, request: SentRequest = {}): Promise<{ response: Response; path: string }> {
    const transport = this.#transport;
    const { method } = partsOf(route);
    const target = routeUrl(route, request.params, request.query);
    const path = target.split('?')[0] ?? target;
    const { body } = request;
    const contentType =
      body instanceof Blob
        ? body.type || 'application/octet-stream'
        : body !== undefined && 'application/json';
    const signal = request.signal ?? transport.signal;
    let response: Response;
    try {
      response = await fetch(`${transport.base}${target}`, {
        method,
        headers: {
          ...transport.headers,
          accept: request.accept ?? 'application/json',
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        ...(body !== undefined ? { body: body instanceof Blob ? body : JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
        ...(transport.cache ? { cache: transport.cache } : {}),
      });
    } catch (error) {
      if (signal?.aborted || (error as Error | null)?.name === 'AbortError') throw error;
      throw new ApiFailure({
        status: 0,
        code: CLIENT_CODES.noAnswer,
        message: this.#redact(`cannot reach the kubeglue API at ${transport.where}: ${reasonOf(error)}`),
        hint: NO_ANSWER_HINT,
      });
    }
    if (!response.ok) throw await this.#failure(`${method} /v1${path}`, response);
    return { response, path };
  }

  #redact(text: string): string {
    return this.#transport.redact ? this.#transport.redact(text) : text;
  }

  /**
   * An error answer as an ApiFailure: the API's message, code, hint and issues, whatever else the body
   * holds. A proxy's page or a server's error may echo the request's headers: the text is blanked before
   * it is cut short, so no part of the key is left.
   */
  async #failure(request: string, response: Response): Promise<ApiFailure> {
    const traceId = response.headers.get('x-trace-id') ?? undefined;
    const text = this.#redact(await response.text().catch(() => ''));
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // Not JSON: a proxy's page, say.
    }
    const status = response.status;
    const error = apiErrorOf(json);
    if (error) return new ApiFailure({ ...error, status, traceId, body: json });
    const shown = text.trim().slice(0, SHOWN_TEXT);
    const statusLine = `HTTP ${status} ${response.statusText}`.trim();
    return new ApiFailure({
      status,
      code: CLIENT_CODES.notTheApi,
      message: `${request} answered ${statusLine}${shown ? `: ${shown}` : ''}`,
      traceId,
      body: json,
    });
  }
}
