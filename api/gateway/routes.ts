import type { FastifyInstance } from 'fastify';
import type { Gateway, GatewayList } from '../../crds/api.ts';
import { ROUTES } from '../../crds/routes.ts';
import { KG_ERR_GATEWAY_NOT_CONNECTED } from '../../runs/errors.ts';
import { requireUnrestricted } from '../auth.ts';
import { parseInput } from '../validation.ts';
import type { GatewayRegistry } from './registry.ts';

/** `GET /v1/gateways[/{tunnelId}]`: the tunnels this replica holds, for choosing one for a private system. */
export function registerGatewayRoutes(app: FastifyInstance, deps: { registry: GatewayRegistry }): void {
  const query = ROUTES.find((route) => route.operationId === 'listGateways')?.query;
  if (!query) throw new Error('route table has no query schema for listGateways');
  app.get('/v1/gateways', async (request): Promise<GatewayList> => {
    requireUnrestricted(request);
    parseInput(query, request.query, 'query');
    return { data: deps.registry.list() };
  });
  app.get<{ Params: { tunnelId: string } }>('/v1/gateways/:tunnelId', async (request): Promise<Gateway> => {
    requireUnrestricted(request);
    parseInput(query, request.query, 'query');
    const gateway = deps.registry.get(request.params.tunnelId);
    if (!gateway) throw KG_ERR_GATEWAY_NOT_CONNECTED(request.params.tunnelId);
    return gateway;
  });
}
