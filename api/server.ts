import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import { SETTINGS } from '../config/config.ts';
import {
  ApiError,
  KG_ERR_BODY_TOO_LARGE,
  KG_ERR_INTERNAL,
  KG_ERR_MALFORMED_REQUEST,
  KG_ERR_METHOD_NOT_ALLOWED,
  KG_ERR_NOT_READY,
  KG_ERR_ROUTE_NOT_FOUND,
  KG_ERR_SHUTTING_DOWN,
  KG_ERR_UNSUPPORTED_MEDIA_TYPE,
} from '../contract/api/errors.ts';
import { openApiDocument } from '../contract/api/openapi.ts';
import { OPENAPI_ROUTE } from '../contract/api/routes.ts';
import type { LogFields } from '../contract/log.ts';
import { parseTraceparent } from '../engine/protocols/traceparent.ts';
import { type Dashboard, installDashboard } from './dashboard.ts';

export interface ServerOptions {
  bodyLimitBytes: number;
  /** The setting that raises bodyLimitBytes; KUBEGLUE_BODY_LIMIT_BYTES for the /v1 API. */
  bodyLimitSetting?: string;
  logLevel: string;
  /** PEM certificate chain and key: the server speaks HTTPS (and wss:// for gateway agents). */
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** Whether the server can take traffic (store open, workers up). */
  ready: () => boolean;
  /** The built dashboard to serve at `/` (api/dashboard.ts); without it the server has no pages. */
  dashboardDir?: string;
  /** Where each answered request is logged (KUBEGLUE_REQUEST_LOG); unset: requests are not logged. */
  requestLog?: ((line: string, fields: LogFields) => void) | undefined;
}

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Characters of a path no route matched that its request log line shows. */
const UNMATCHED_PATH_LOGGED = 200;

/**
 * How deep a JSON request body may nest. JSON.parse copes with any depth, but every recursive walk after it
 * (validation, the sandbox copy, redaction) would overflow the stack and answer 500; no real payload comes
 * close.
 */
export const MAX_JSON_DEPTH = 512;

/** Whether the JSON text nests arrays and objects deeper than `max`: one pass, strings skipped. */
export function jsonDeeperThan(text: string, max: number): boolean {
  // A text this short cannot open that many brackets.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

declare module 'fastify' {
  interface FastifyRequest {
    traceId: string;
    /**
     * The span id of the request's `traceparent` when the request's trace id is that traceparent's: a run
     * it starts has its span there (docs/operations.md "Traces"). '' when there is none.
     */
    parentSpanId: string;
  }
  interface FastifyContextConfig {
    /** The setting that raises this route's own bodyLimit, named when a body is too large. */
    bodyLimitSetting?: string;
  }
}

/** Where a request's body limit comes from, to name it in a 413. */
interface BodyLimitSource {
  bytes: number;
  setting: string;
}

function bodyLimitOf(request: FastifyRequest | undefined, server: BodyLimitSource): BodyLimitSource {
  const routeLimit = request?.routeOptions.bodyLimit;
  const routeSetting = request?.routeOptions.config?.bodyLimitSetting;
  return routeLimit !== undefined && routeSetting !== undefined
    ? { bytes: routeLimit, setting: routeSetting }
    : server;
}

/**
 * The catalog error for anything a route, a hook or fastify itself raises. The request and the server's
 * body limit let fastify's own errors say what to do (the limit and its setting, the content type to send).
 */
export function toApiError(
  error: unknown,
  context?: { request?: FastifyRequest; bodyLimit: BodyLimitSource },
): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limit = context ? bodyLimitOf(context.request, context.bodyLimit) : undefined;
      return KG_ERR_BODY_TOO_LARGE(limit?.bytes ?? 0, limit?.setting ?? 'the server setting');
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return KG_ERR_UNSUPPORTED_MEDIA_TYPE(String(context?.request?.headers['content-type'] ?? ''));
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    // Malformed JSON, empty JSON body, bad Content-Length, bad URL: fastify's message names the
    // problem and never holds server state.
    return KG_ERR_MALFORMED_REQUEST(fastifyError.message);
  }
  return KG_ERR_INTERNAL();
}

/** Answers with `{ error: { message, code, hint } }`, the error's status and its headers (Retry-After, …). */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const apiError = toApiError(error);
  return reply.status(apiError.statusCode).headers(apiError.headers).send({ error: apiError.body() });
}

/**
 * The methods registered for each route pattern, so a request that matches a path under another method
 * answers 405 with `Allow` instead of a 404 that suggests the path does not exist.
 */
class RouteMethods {
  readonly #patterns: { match: RegExp; methods: Set<string> }[] = [];

  add(method: string | readonly string[], url: string): void {
    const source = url
      .split('/')
      .map((segment) =>
        segment === '*'
          ? '.*'
          : segment.startsWith(':')
            ? '[^/]+'
            : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    let entry = this.#patterns.find((p) => p.match.source === `^${source}$`);
    if (!entry) {
      entry = { match: new RegExp(`^${source}$`), methods: new Set() };
      this.#patterns.push(entry);
    }
    for (const m of typeof method === 'string' ? [method] : method) entry.methods.add(m.toUpperCase());
  }

  /** Every method some route accepts on this path, sorted; empty when no route has the path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const pattern of this.#patterns) {
      if (pattern.match.test(path)) for (const m of pattern.methods) methods.add(m);
    }
    return [...methods].sort();
  }
}

export interface BaseServerOptions {
  bodyLimitBytes: number;
  /** The setting that raises bodyLimitBytes (named in a 413). */
  bodyLimitSetting: string;
  logLevel: string;
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** Request headers never to log (credentials). */
  redactHeaders?: string[];
  /** Answers a request no route matched with a page instead of the JSON 404 (true when it did). */
  page?: (request: FastifyRequest, reply: FastifyReply) => boolean;
}

type Compilers = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type ValidatorFactory = NonNullable<Compilers['buildValidator']>;
type SerializerFactory = NonNullable<Compilers['buildSerializer']>;

/** Loads a module as fastify itself resolves it (its own dependencies, not kubeglue's). */
const requireFromFastify = (id: string): unknown =>
  createRequire(createRequire(import.meta.url).resolve('fastify'))(id);

/** What fastify calls a compiler factory with: the instance's shared schemas and its compiler options. */
type FactoryCall = (externalSchemas: unknown, options: unknown) => unknown;

/** A compiler factory of fastify's, loaded (once) when fastify first asks for a compiler. */
function loadedOnUse(id: string): FactoryCall {
  let factory: FactoryCall | undefined;
  return (externalSchemas, options) => {
    factory ??= (requireFromFastify(id) as () => FactoryCall)();
    return factory(externalSchemas, options);
  };
}

/**
 * Fastify's own JSON-schema compilers (ajv, fast-json-stringify), loaded when a route first declares a
 * schema. None does (requests are checked with zod at the edge), and fastify would load them with every
 * instance: ~0.3 s of CPU on every start.
 */
const LAZY_COMPILERS: Compilers = {
  buildValidator: loadedOnUse('@fastify/ajv-compiler') as unknown as ValidatorFactory,
  buildSerializer: loadedOnUse('@fastify/fast-json-stringify-compiler') as unknown as SerializerFactory,
};

/**
 * A fastify instance with kubeglue's error shape everywhere (routes, hooks, fastify's own errors,
 * unknown routes, draining) and `/healthz`; the public and the internal server build on it. `closing()`
 * tells hooks whether the server drains.
 */
export function buildBaseServer(options: BaseServerOptions): { app: FastifyInstance; closing(): boolean } {
  const bodyLimit = { bytes: options.bodyLimitBytes, setting: options.bodyLimitSetting };
  const app = Fastify({
    // An HTTPS server is an http.Server to every route and hook we install (fastify types it apart).
    ...(options.tls ? { https: { cert: options.tls.cert, key: options.tls.key } } : {}),
    bodyLimit: options.bodyLimitBytes,
    schemaController: { compilersFactory: LAZY_COMPILERS },
    logger: {
      level: options.logLevel,
      ...(options.redactHeaders
        ? { redact: options.redactHeaders.map((name) => `req.headers.${name}`) }
        : {}),
    },
    // Fastify's own two lines per request (incoming, completed) are off: buildServer writes one in the
    // role's log shape when KUBEGLUE_REQUEST_LOG is on, and the internal port of runner Pods logs none.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify's own 503 while closing has another body shape; the onRequest hooks answer instead.
    return503OnClosing: false,
    // File keys may be 255 characters, percent-encoded up to three times that.
    routerOptions: { maxParamLength: 1024 },
    // Malformed URLs are answered before routing: keep the error shape there too.
    frameworkErrors: (error, request, reply) => {
      const apiError = toApiError(error, { request: request as FastifyRequest, bodyLimit });
      void sendError((reply as FastifyReply).header('X-Content-Type-Options', 'nosniff'), apiError);
    },
  });
  // No response is ever to be sniffed into another type (a webhook challenge echoed as text/plain must not
  // become HTML in a browser).
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('X-Content-Type-Options', 'nosniff');
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A response sent while the server drains (a sync run answered in the grace period) ends its connection:
  // kept alive, it would hold the close until the keep-alive timeout (72 s).
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('Connection', 'close');
  });
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error, { request, bodyLimit });
    if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, apiError);
  });
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => routes.add(route.method, route.url));
  app.setNotFoundHandler((request, reply) => {
    if (options.page?.(request, reply)) return reply;
    const path = request.url.split('?')[0] ?? '';
    const allowed = routes.allowed(path);
    return sendError(
      reply,
      allowed.length > 0
        ? KG_ERR_METHOD_NOT_ALLOWED(request.method, path, allowed)
        : KG_ERR_ROUTE_NOT_FOUND(request.method, path),
    );
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  return { app, closing: () => closing };
}

/** The HTTP server: every response carries X-Trace-Id, every error is `{ error: { message, code } }`. */
export function buildServer(options: ServerOptions): FastifyInstance {
  let dashboard: Dashboard | undefined;
  const { app, closing } = buildBaseServer({
    ...options,
    bodyLimitSetting: options.bodyLimitSetting ?? SETTINGS.tree.bodyLimitBytes.name,
    page: (request, reply) => dashboard?.page(request, reply) ?? false,
  });
  app.decorateRequest('traceId', '');
  app.decorateRequest('parentSpanId', '');
  const requestLog = options.requestLog;
  if (requestLog) {
    // The route's pattern, never the URL: a path parameter or a query string (a webhook's ?token=) may be
    // a secret. A request no route matched (a page of the dashboard, a typo) shows its path alone, cut.
    app.addHook('onResponse', async (request, reply) => {
      const route =
        request.routeOptions.url ?? (request.url.split('?')[0] ?? '').slice(0, UNMATCHED_PATH_LOGGED);
      const ms = Math.round(reply.elapsedTime);
      const status = reply.statusCode;
      requestLog(`${request.method} ${route} ${status} ${ms} ms`, {
        method: request.method,
        route,
        status,
        ms,
        traceId: request.traceId,
      });
    });
  }
  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-trace-id'];
    const header = request.headers.traceparent;
    // A caller's W3C trace context: its trace id is the request's (unless X-Trace-Id names one), its span the parent.
    const parent = typeof header === 'string' ? parseTraceparent(header) : undefined;
    request.traceId =
      typeof given === 'string' && TRACE_ID.test(given)
        ? given
        : (parent?.traceId ??
          // 122 random bits from Node's cached entropy, not a getrandom call per request as randomBytes is.
          randomUUID().replaceAll('-', ''));
    request.parentSpanId = parent && parent.traceId === request.traceId ? parent.spanId : '';
    reply.header('X-Trace-Id', request.traceId);
    // Requests still arriving on open connections while the server drains go elsewhere.
    if (closing()) return sendError(reply.header('Connection', 'close'), KG_ERR_SHUTTING_DOWN());
  });

  // Generic clients send `Content-Type: application/json` with an empty body on routes whose body is
  // optional (cancel, delete, run): that is no body, not malformed JSON. Anything else goes to fastify's
  // own JSON parser (prototype poisoning refused).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonDeeperThan(text, MAX_JSON_DEPTH)) {
      done(KG_ERR_MALFORMED_REQUEST(`JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    parseJson(request, text, done);
  });

  // Made at the first request for it rather than at every start (~0.3 s of CPU), then kept.
  let openApi: ReturnType<typeof openApiDocument> | undefined;
  app.get('/readyz', async (_request, reply) =>
    options.ready() ? { status: 'ready' } : sendError(reply, KG_ERR_NOT_READY()),
  );
  app.route({
    method: OPENAPI_ROUTE.method,
    url: `/v1${OPENAPI_ROUTE.path}`,
    handler: async () => {
      openApi ??= openApiDocument();
      return openApi;
    },
  });
  if (options.dashboardDir !== undefined) dashboard = installDashboard(app, { dir: options.dashboardDir });
  return app;
}
