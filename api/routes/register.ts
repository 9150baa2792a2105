/**
 * The /v1 routes, registered from the route table (contract/api/routes.ts): each operation's method, path,
 * access, query and body come from its entry, its handler from the operationId. Input is checked here and
 * nowhere else, so the router, the validation and the OpenAPI document read the same object.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { z } from 'zod';
import type { ApiError } from '../../contract/api/errors.ts';
import {
  queryOf,
  type ROUTE_TABLE,
  ROUTES,
  type RouteSpec,
  type tokenQuery,
} from '../../contract/api/routes.ts';
import { fastifyPath } from '../scopes.ts';
import { parseInput } from '../validation.ts';

type TableRoute = (typeof ROUTE_TABLE)[number];
export type OperationId = TableRoute['operationId'];
type RouteOf<Id extends OperationId> = Extract<TableRoute, { operationId: Id }>;
type PathParameters<Path> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParameters<Rest>
  : never;

/** An operation's checked input, typed from its table entry. */
export interface RouteInput<Id extends OperationId> {
  params: Record<PathParameters<RouteOf<Id>['path']>, string>;
  query: RouteOf<Id> extends { query: infer Query extends z.ZodType }
    ? z.output<Query>
    : z.output<typeof tokenQuery>;
  body: RouteOf<Id> extends { body: { schema: infer Body extends z.ZodType } } ? z.output<Body> : undefined;
}

/** What answers an operation; its return value (if the reply was not sent) is the JSON answer. */
export type Handle<Id extends OperationId> = (
  input: RouteInput<Id>,
  request: FastifyRequest,
  reply: FastifyReply,
) => Promise<unknown>;

/** A body the route reads itself rather than as JSON: every content type, as text or as bytes. */
export interface BodyReader {
  as: 'string' | 'buffer';
  /** The route's own limit, and the setting that raises it (named in a 413). */
  limit?: { bytes: number; setting: string };
  /** Turns the text or bytes into the request's body; throws the error to answer. */
  parse?: (request: FastifyRequest, raw: string | Buffer) => unknown;
}

export interface RouteBinding<Id extends OperationId> {
  handle: Handle<Id>;
  /**
   * Runs before the body is checked: a resource the key may not see answers 404 whatever the body, exactly
   * like one that does not exist.
   */
  authorize?: (input: Omit<RouteInput<Id>, 'body'>, request: FastifyRequest) => void;
  body?: BodyReader;
  /** The error for input the table refuses, instead of 400 KG_ERR_VALIDATION (a presigned link). */
  invalid?: () => ApiError;
}

/** The handlers of some operations, by operationId. */
export type HandlersOf<Ids extends OperationId> = {
  [Id in Ids]: Handle<Id> | RouteBinding<Id>;
};

/**
 * The handler of every operation; null: this server does not offer it (its feature is not configured),
 * and the path answers like any unknown one.
 */
export type Handlers = { [Id in OperationId]: HandlersOf<Id>[Id] | null };

/** Operations a server without their feature leaves out. */
export function notOffered<const Ids extends OperationId>(...ids: Ids[]): { [Id in Ids]: null } {
  return Object.fromEntries(ids.map((id) => [id, null])) as { [Id in Ids]: null };
}

type Merged<Parts extends readonly object[]> = Parts extends readonly [
  infer First,
  ...infer Rest extends readonly object[],
]
  ? First & Merged<Rest>
  : unknown;

/** The handlers of several modules as one map; an operation handled twice is refused. */
export function combineHandlers<const Parts extends readonly object[]>(...parts: Parts): Merged<Parts> {
  const all: Record<string, unknown> = {};
  for (const part of parts) {
    for (const [id, handler] of Object.entries(part)) {
      if (id in all) throw new Error(`operation ${id} has two handlers`);
      all[id] = handler;
    }
  }
  return all as Merged<Parts>;
}

type Parse = (schema: z.ZodType, value: unknown, what: string) => unknown;

/**
 * Checks a request's path parameters, query and body against the route's entry, in that order (the
 * binding's authorize between the query and the body).
 */
function inputReader(route: RouteSpec, binding: RouteBinding<OperationId>) {
  const { invalid, authorize } = binding;
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  const params = z.object(Object.fromEntries(names.map((name) => [name, z.string().min(1)])));
  const query = queryOf(route);
  const body = route.body;
  const parse: Parse = invalid
    ? (schema, value) => {
        const result = schema.safeParse(value);
        if (!result.success) throw invalid();
        return result.data;
      }
    : parseInput;
  return (request: FastifyRequest) => {
    const input = {
      params: parse(params, request.params, 'path'),
      query: parse(query, request.query, 'query'),
    } as Omit<RouteInput<OperationId>, 'body'>;
    authorize?.(input, request);
    const value = body?.optional ? (request.body ?? {}) : request.body;
    return { ...input, body: body ? parse(body.schema, value, body.name) : undefined };
  };
}

/**
 * Registers every operation of the table. The handlers must be exactly the table's operations: one missing
 * or one the table does not know stops the server from starting.
 */
export function registerRoutes(app: FastifyInstance, handlers: Handlers): void {
  const known = new Set(ROUTES.map((route) => route.operationId));
  const given = Object.keys(handlers);
  const unknown = given.filter((id) => !known.has(id));
  const missing = [...known].filter((id) => !given.includes(id));
  if (unknown.length > 0 || missing.length > 0) {
    const problems = [
      ...(missing.length ? [`no handler for ${missing.join(', ')}`] : []),
      ...(unknown.length ? [`no route for ${unknown.join(', ')}`] : []),
    ];
    throw new Error(
      `the handlers do not match the route table (contract/api/routes.ts): ${problems.join('; ')}`,
    );
  }
  registerOperations(app, handlers);
}

/** Registers the routes of the operations given (a server of some of them: tests). */
export function registerOperations(app: FastifyInstance, handlers: Partial<Handlers>): void {
  const byId = new Map<string, unknown>(Object.entries(handlers));
  for (const route of ROUTES) {
    const handler = byId.get(route.operationId) as Handle<OperationId> | RouteBinding<OperationId> | null;
    if (handler === null || handler === undefined) continue;
    const binding = typeof handler === 'function' ? { handle: handler } : handler;
    const read = inputReader(route, binding);
    const options: RouteOptions = {
      method: route.method,
      url: fastifyPath(route.path),
      handler: async (request, reply) => binding.handle(read(request) as never, request, reply),
    };
    const reader = binding.body;
    if (!reader) {
      app.route(options);
      continue;
    }
    const limit = reader.limit;
    app.register(async (scope) => {
      // Whatever the content type says, the route reads the body itself.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        '*',
        { parseAs: reader.as, ...(limit ? { bodyLimit: limit.bytes } : {}) },
        (request, raw, done) => {
          try {
            done(null, reader.parse ? reader.parse(request, raw) : raw);
          } catch (error) {
            done(error as Error, undefined);
          }
        },
      );
      scope.route({
        ...options,
        ...(limit ? { bodyLimit: limit.bytes, config: { bodyLimitSetting: limit.setting } } : {}),
      });
    });
  }
}
