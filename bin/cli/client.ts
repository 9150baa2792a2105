/**
 * The client commands' client of the /v1 API, on the client the dashboard uses too
 * (contract/api/route-client.ts): a request names its route, `routes.getRun` from
 * contract/api/route-paths.ts, and is typed from the route table. What is the CLI's own is the transport
 * and the checking: the key goes in the Authorization header (never in a URL, so it cannot reach a
 * message) and is blanked out of an error answer's text before anything is read from it; a User-Agent;
 * Ctrl-C aborts; answers are checked with zod (answers.ts). Every failure is an ApiFailure: exit code 1.
 */
import type { z } from 'zod';
import {
  type AnswerOf,
  ApiFailure,
  CLIENT_CODES,
  type RequestArgs,
  RouteClient,
  type RouteRequest,
  type TableRoutePath,
} from '../../contract/api/route-client.ts';
import * as routes from '../../contract/api/route-paths.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import type { JsonValue } from '../../contract/json.ts';
import { withoutKey } from './output.ts';
import type { Connection } from './settings.ts';

/** Something the API sent: as the commands read it, and as it was sent (what `--output json` prints). */
export interface Item<T> {
  value: T;
  raw: JsonValue;
}

export type Answer<T> = Item<T>;

/** The items of a list answer (`{ "data": [...] }`). */
export function itemsOf<T>(answer: Item<{ data: T[] }>): Array<Item<T>> {
  const raw = (answer.raw as { data: JsonValue[] }).data;
  return answer.value.data.map((value, index) => ({ value, raw: raw[index] as JsonValue }));
}

/** Whether a failure's code is the API's (docs/errors.md), worth printing, not one the client named. */
export function isApiCode(failure: ApiFailure): boolean {
  return !(Object.values(CLIENT_CODES) as string[]).includes(failure.code);
}

/**
 * A schema that reads route R's answer: whatever the route may answer (the table's schemas) must be
 * something it accepts, so a route whose answer changes shape fails the type check here.
 */
type ReaderOf<R extends TableRoutePath, S extends z.ZodType> = [AnswerOf<R>] extends [z.input<S>] ? S : never;

/** The API's largest page of tools and schedules. */
const PAGE_SIZE = 100;

export class ApiClient {
  readonly url: string;
  readonly #client: RouteClient;

  constructor(connection: Connection, options: { version: string; signal: AbortSignal }) {
    this.url = connection.url;
    const { apiKey } = connection;
    this.#client = new RouteClient({
      base: `${connection.url}/v1`,
      where: connection.url,
      headers: { authorization: `Bearer ${apiKey}`, 'user-agent': `kubeglue-cli/${options.version}` },
      redact: (text) => withoutKey(text, apiKey),
      signal: options.signal,
    });
  }

  /** One JSON request; an error answer throws an ApiFailure, and so does an answer `schema` refuses. */
  async request<R extends TableRoutePath, S extends z.ZodType>(
    route: R,
    schema: ReaderOf<R, S>,
    ...request: RequestArgs<R>
  ): Promise<Answer<z.output<S>>> {
    const raw = (await this.#client.call(route, ...request)) as JsonValue;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      throw new ApiFailure({
        status: 200,
        code: CLIENT_CODES.unexpectedAnswer,
        message: `unexpected answer to ${route.replace(' ', ' /v1')}: ${formatIssues(parsed.error)}`,
      });
    }
    return { value: parsed.data, raw };
  }

  /** Every item of a paged list (`?page=&limit=`, answers with `hasMore`), page after page. */
  async allPages<R extends TableRoutePath, T>(
    route: R,
    schema: ReaderOf<R, z.ZodType<{ data: T[]; hasMore: boolean }>>,
    request: RouteRequest<R>,
  ): Promise<Array<Item<T>>> {
    const items: Array<Item<T>> = [];
    for (let page = 1; ; page++) {
      const paged = { ...request, query: { ...request.query, page, limit: PAGE_SIZE } };
      const answer = await this.request(route, schema, ...([paged] as RequestArgs<R>));
      items.push(...itemsOf(answer));
      if (!answer.value.hasMore || answer.value.data.length === 0) return items;
    }
  }

  /** `GET /v1/logs/stream`: the open event stream (its body), or an ApiFailure. */
  openLogStream(query: { runId?: string; traceId?: string }, signal: AbortSignal): Promise<Response> {
    return this.#client.fetch(routes.streamLogs, { query, signal, accept: 'text/event-stream' });
  }
}
