import type { FastifyInstance } from 'fastify';
import { defaultSettings, SETTINGS } from '../../config/config.ts';
import { KG_ERR_SHUTTING_DOWN } from '../../contract/api/errors.ts';
import { buildBaseServer, sendError } from '../server.ts';
import { type InternalRoutesDeps, registerInternalRoutes } from './routes.ts';

export interface InternalServerDeps extends Omit<InternalRoutesDeps, 'log' | 'now'> {
  /** Results carry step data and files as base64 (KUBEGLUE_INTERNAL_BODY_LIMIT_BYTES). */
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
  const { app, closing } = buildBaseServer({
    bodyLimitBytes: deps.bodyLimitBytes ?? defaultSettings('api').internalBodyLimitBytes,
    bodyLimitSetting: SETTINGS.tree.internalBodyLimitBytes.name,
    logLevel: deps.logLevel ?? 'info',
    // Tokens travel in this header: never let a serializer or a debug line print it.
    redactHeaders: ['authorization'],
  });
  // A runner retries a 503: during a rolling update its next try reaches another replica.
  app.addHook('onRequest', async (_request, reply) => {
    if (closing()) return sendError(reply.header('Connection', 'close'), KG_ERR_SHUTTING_DOWN());
  });
  registerInternalRoutes(app, {
    ...deps,
    log: deps.log ?? ((line) => app.log.warn(line)),
    now: deps.now ?? Date.now,
  });
  return app;
}
