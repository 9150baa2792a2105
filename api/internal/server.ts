import Fastify, { type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { KG_ERR_ROUTE_NOT_FOUND, KG_ERR_SHUTTING_DOWN } from '../../runs/errors.ts';
import { sendError, toApiError } from '../server.ts';
import { type InternalRoutesDeps, registerInternalRoutes } from './routes.ts';

/** Results carry step data and files as base64: the same default as the public API's body limit. */
export const DEFAULT_INTERNAL_BODY_LIMIT_BYTES = 10 * 1024 * 1024;

export interface InternalServerDeps extends Omit<InternalRoutesDeps, 'log' | 'now'> {
  bodyLimitBytes?: number;
  logLevel?: string;
  log?: (line: string) => void;
  now?: () => number;
}

/**
 * The internal API that runner Pods talk to (DESIGN.md "Async run"), on its own port so the network
 * policy can open it to runner Pods only. It serves the routes of INTERNAL_PATHS and /healthz and
 * accepts nothing but per-run tokens; listening is the caller's (`app.listen`).
 */
export function buildInternalServer(deps: InternalServerDeps): FastifyInstance {
  const app = Fastify({
    bodyLimit: deps.bodyLimitBytes ?? DEFAULT_INTERNAL_BODY_LIMIT_BYTES,
    logger: {
      level: deps.logLevel ?? 'info',
      // Tokens travel in this header: never let a serializer or a debug line print it.
      redact: ['req.headers.authorization'],
    },
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify's own 503 while closing has another body shape; the onRequest hook below answers instead.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: (error, _request, reply) => {
      void sendError(reply as FastifyReply, error);
    },
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A runner retries a 503: during a rolling update its next try reaches another replica.
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) return sendError(reply.header('Connection', 'close'), KG_ERR_SHUTTING_DOWN());
  });
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.statusCode >= 500) request.log.error({ err: error }, 'internal api request failed');
    return sendError(reply, apiError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, KG_ERR_ROUTE_NOT_FOUND(request.method, request.url.split('?')[0] ?? '')),
  );
  app.get('/healthz', async () => ({ status: 'ok' }));
  registerInternalRoutes(app, {
    ...deps,
    log: deps.log ?? ((line) => app.log.warn(line)),
    now: deps.now ?? Date.now,
  });
  return app;
}
