import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { openApiDocument } from '../crds/openapi.ts';
import {
  ApiError,
  KG_ERR_BODY_TOO_LARGE,
  KG_ERR_INTERNAL,
  KG_ERR_MALFORMED_REQUEST,
  KG_ERR_NOT_READY,
  KG_ERR_ROUTE_NOT_FOUND,
  KG_ERR_SHUTTING_DOWN,
  KG_ERR_UNSUPPORTED_MEDIA_TYPE,
} from '../runs/errors.ts';

export interface ServerOptions {
  bodyLimitBytes: number;
  logLevel: string;
  /** PEM certificate chain and key: the server speaks HTTPS (and wss:// for gateway agents). */
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** Whether the server can take traffic (store open, workers up). */
  ready: () => boolean;
}

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'fastify' {
  interface FastifyRequest {
    traceId: string;
  }
}

/** The catalog error for anything a route, a hook or fastify itself raises. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return KG_ERR_BODY_TOO_LARGE();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return KG_ERR_UNSUPPORTED_MEDIA_TYPE(fastifyError.message);
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    // Malformed JSON, empty JSON body, bad Content-Length, bad URL: fastify's message names the
    // problem and never holds server state.
    return KG_ERR_MALFORMED_REQUEST(fastifyError.message);
  }
  return KG_ERR_INTERNAL();
}

/** Answers with `{ error: { message, code } }`, the error's status and its headers (Retry-After, …). */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const apiError = toApiError(error);
  return reply
    .status(apiError.statusCode)
    .headers(apiError.headers)
    .send({ error: { message: apiError.message, code: apiError.code } });
}

export interface BaseServerOptions {
  bodyLimitBytes: number;
  logLevel: string;
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** Request headers never to log (credentials). */
  redactHeaders?: string[];
}

/**
 * A fastify instance with kubeglue's error shape everywhere (routes, hooks, fastify's own errors,
 * unknown routes, draining) and `/healthz`; the public and the internal server build on it. `closing()`
 * tells hooks whether the server drains.
 */
export function buildBaseServer(options: BaseServerOptions): { app: FastifyInstance; closing(): boolean } {
  const app = Fastify({
    // An HTTPS server is an http.Server to every route and hook we install (fastify types it apart).
    ...(options.tls ? { https: { cert: options.tls.cert, key: options.tls.key } } : {}),
    bodyLimit: options.bodyLimitBytes,
    logger: {
      level: options.logLevel,
      ...(options.redactHeaders
        ? { redact: options.redactHeaders.map((name) => `req.headers.${name}`) }
        : {}),
    },
    // One line per request would dominate the log (and the CPU) at a thousand runs per second.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify's own 503 while closing has another body shape; the onRequest hooks answer instead.
    return503OnClosing: false,
    // File keys may be 255 characters, percent-encoded up to three times that.
    routerOptions: { maxParamLength: 1024 },
    // Malformed URLs are answered before routing: keep the error shape there too.
    frameworkErrors: (error, _request, reply) => {
      void sendError(reply as FastifyReply, error);
    },
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, apiError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, KG_ERR_ROUTE_NOT_FOUND(request.method, request.url.split('?')[0] ?? '')),
  );
  app.get('/healthz', async () => ({ status: 'ok' }));
  return { app, closing: () => closing };
}

/** The HTTP server: every response carries X-Trace-Id, every error is `{ error: { message, code } }`. */
export function buildServer(options: ServerOptions): FastifyInstance {
  const { app, closing } = buildBaseServer(options);
  app.decorateRequest('traceId', '');
  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-trace-id'];
    request.traceId =
      typeof given === 'string' && TRACE_ID.test(given) ? given : randomBytes(16).toString('hex');
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
    parseJson(request, text, done);
  });

  const openApi = openApiDocument();
  app.get('/readyz', async (_request, reply) =>
    options.ready() ? { status: 'ready' } : sendError(reply, KG_ERR_NOT_READY()),
  );
  app.get('/v1/openapi.json', async () => openApi);
  return app;
}
