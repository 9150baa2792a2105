import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ROUTES } from '../../crds/routes.ts';
import { SystemCreateBody, SystemUpdateBody } from '../../crds/system.ts';
import { KG_ERR_SYSTEM_URL_CREDENTIALS } from '../../runs/errors.ts';
import { hasUrlCredentials } from '../../runs/url-credentials.ts';
import { requireUnrestricted } from '../auth.ts';
import type { SystemService } from '../systems.ts';
import { parseInput } from '../validation.ts';

const SystemParams = z.object({ systemId: z.string().min(1) });
const EnvironmentQuery = z.object({ environment: z.enum(['dev', 'prod']).optional() });
const PageQuery = z.object({ page: z.number().int(), limit: z.number().int() });

/**
 * A System's URL is stored in its resource and returned in clear: credentials written into it are refused
 * (rather than moved into the encrypted credentials, which would silently pick an authType for the user).
 */
function refuseUrlCredentials(url: string | undefined): void {
  if (url !== undefined && hasUrlCredentials(url)) throw KG_ERR_SYSTEM_URL_CREDENTIALS();
}

function queryOf(operationId: string): z.ZodType {
  const query = ROUTES.find((route) => route.operationId === operationId)?.query;
  if (!query) throw new Error(`route table has no query schema for ${operationId}`);
  return query;
}

/**
 * POST/GET /v1/systems and GET/PUT/DELETE /v1/systems/:systemId?environment=. Systems hold credentials for
 * every tool, so keys limited to some tools may not use these routes.
 */
export function registerSystemRoutes(app: FastifyInstance, deps: { systems: SystemService }): void {
  const { systems } = deps;
  const createQuery = queryOf('createSystem');
  const listQuery = queryOf('listSystems');
  const getQuery = queryOf('getSystem');
  const updateQuery = queryOf('updateSystem');
  const deleteQuery = queryOf('deleteSystem');

  app.post('/v1/systems', async (request, reply) => {
    requireUnrestricted(request);
    parseInput(createQuery, request.query, 'query');
    const body = parseInput(SystemCreateBody, request.body, 'system');
    refuseUrlCredentials(body.url);
    return reply.status(201).send(await systems.create(body));
  });

  app.get('/v1/systems', async (request) => {
    requireUnrestricted(request);
    const query = PageQuery.parse(parseInput(listQuery, request.query, 'query'));
    return systems.list(query);
  });

  app.get('/v1/systems/:systemId', async (request) => {
    requireUnrestricted(request);
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = EnvironmentQuery.parse(parseInput(getQuery, request.query, 'query'));
    return systems.get(systemId, environment);
  });

  app.put('/v1/systems/:systemId', async (request) => {
    requireUnrestricted(request);
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = EnvironmentQuery.parse(parseInput(updateQuery, request.query, 'query'));
    const body = parseInput(SystemUpdateBody, request.body ?? {}, 'system update');
    refuseUrlCredentials(body.url);
    return systems.update(systemId, environment, body);
  });

  app.delete('/v1/systems/:systemId', async (request) => {
    requireUnrestricted(request);
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = EnvironmentQuery.parse(parseInput(deleteQuery, request.query, 'query'));
    return systems.delete(systemId, environment);
  });
}
