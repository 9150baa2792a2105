import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { openApiDocument } from '../crds/openapi.ts';
import { ApiError } from '../runs/errors.ts';

export interface ServerOptions {
  bodyLimitBytes: number;
  logLevel: string;
  /** Whether the server can take traffic (store open, workers up). */
  ready: () => boolean;
}

const TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'fastify' {
  interface FastifyRequest {
    traceId: string;
  }
}

/** Status and client-safe message for any error a route or fastify itself raises. */
function describeError(error: unknown): { status: number; message: string } {
  if (error instanceof ApiError) return { status: error.statusCode, message: error.message };
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: 'Request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: fastifyError.message };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: fastifyError.message };
  }
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    // Malformed JSON and friends: fastify's message names the problem and never holds server state.
    return { status: fastifyError.statusCode, message: fastifyError.message };
  }
  return { status: 500, message: 'Internal server error' };
}

/** The HTTP server: every response carries X-Trace-Id, every error is `{ error: { message } }`. */
export function buildServer(options: ServerOptions): FastifyInstance {
  const app = Fastify({
    bodyLimit: options.bodyLimitBytes,
    logger: { level: options.logLevel },
    // One line per request would dominate the log (and the CPU) at a thousand runs per second.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // File keys may be 255 characters, percent-encoded up to three times that.
    routerOptions: { maxParamLength: 1024 },
    // Malformed URLs are answered before routing: keep the error shape there too.
    frameworkErrors: (error, _request, reply) => {
      const { status, message } = describeError(error);
      void (reply as FastifyReply).status(status).send({ error: { message } });
    },
  });

  app.decorateRequest('traceId', '');
  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-trace-id'];
    request.traceId =
      typeof given === 'string' && TRACE_ID.test(given) ? given : randomBytes(16).toString('hex');
    reply.header('X-Trace-Id', request.traceId);
  });

  app.setErrorHandler((error, request, reply) => {
    const { status, message } = describeError(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.status(status).send({ error: { message } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ error: { message: `Route ${request.method} ${request.url.split('?')[0]} not found` } }),
  );

  const openApi = openApiDocument();
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    options.ready() ? { status: 'ready' } : reply.status(503).send({ error: { message: 'Not ready' } }),
  );
  app.get('/v1/openapi.json', async () => openApi);
  return app;
}
