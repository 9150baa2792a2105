/**
 * What a /v1 route is: the shape of an entry of the route table (contract/api/routes.ts), who may call it,
 * and the query of a route that declares none.
 */
import { z } from 'zod';
import type { Scope } from '../bodies.ts';

export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** Other media types the same schema is answered in, chosen by the request's Accept header. */
  alsoAs?: readonly string[];
}

/** A route's request body as the server checks it. */
export interface RouteBody {
  schema: z.ZodType;
  /** What a 400 calls the body: `Invalid run request: options.timeout: …`. */
  name: string;
  /** A request without a body is checked as `{}` (every field may be left out, or the 400 names them). */
  optional?: true;
}

interface RouteBase {
  method: HttpVerb;
  /** OpenAPI form, relative to /v1: `/tools/{toolId}`. Each parameter is a non-empty string. */
  path: string;
  operationId: string;
  summary: string;
  tag: 'Runs' | 'Tools' | 'Hooks' | 'Systems' | 'API keys' | 'Files' | 'Logs' | 'Gateways' | 'Schedules';
  /** The query parameters; without it, the API key's `token` alone. */
  query?: z.ZodObject;
  body?: RouteBody;
  /** Body content types other than JSON the route accepts. */
  bodyContentTypes?: readonly string[];
  responses: Readonly<Record<number, RouteResponse>>;
}

/**
 * Who may call a route, declared here and nowhere else: the auth hook enforces it for every request, and
 * a /v1 route registered without an entry here makes the server refuse to start (api/auth.ts).
 */
export type RouteAccess =
  /** Needs no API key (the URL itself is the credential). */
  | { public: true; scopes?: never; unrestricted?: never }
  | {
      public?: false;
      /** Scopes the key needs, all of them; empty: any valid key. */
      scopes: readonly Scope[];
      /**
       * Only for keys not limited to tools: the operation is not about one named tool (a definition that
       * is not saved may carry any id), so a tool restriction could not be applied to it.
       */
      unrestricted?: true;
    };

/** One operation of the /v1 API: the single description both the OpenAPI document and the server use. */
export type RouteSpec = RouteBase & RouteAccess;

/** The query of routes that declare none: the API key may come as `?token=`. */
export const tokenQuery = z.strictObject({ token: z.string().optional() });

/** The query parameters a route takes. */
export function queryOf(route: Pick<RouteSpec, 'query'>): z.ZodObject {
  return route.query ?? tokenQuery;
}
