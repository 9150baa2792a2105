import type { FastifyInstance } from 'fastify';
import type { Gateway, GatewayList } from '../../contract/api/bodies.ts';
import { KG_ERR_GATEWAY_NOT_CONNECTED, KG_ERR_TUNNEL_OWNER_NOT_FOUND } from '../../contract/api/errors.ts';
import { ROUTES } from '../../contract/api/routes.ts';
import type { GatewayTunnelOwnerQueries, GatewayTunnelRow } from '../../store/index.ts';
import { parseInput } from '../validation.ts';
import type { GatewayDirectory } from './directory.ts';
import type { GatewayRegistry } from './registry.ts';

/** A tunnel another replica holds: what the directory knows (its counters live on the holder). */
function remoteGateway(row: GatewayTunnelRow): Gateway {
  return {
    tunnelId: row.tunnelId,
    connected: true,
    connectedSince: new Date(row.connectedAt).toISOString(),
    targets: JSON.parse(row.targets) as Gateway['targets'],
    streamsOpen: 0,
    streamsOpened: 0,
    bytesIn: 0,
    bytesOut: 0,
    heldHere: false,
  };
}

/**
 * `GET /v1/gateways[/{tunnelId}]`: the connected tunnels of every replica, for choosing one for a private
 * system. `DELETE /v1/gateways/{tunnelId}/owner`: an admin releases a tunnel id from the key that owns it,
 * so an agent with another key may register it (a connected agent is not disconnected: the next
 * registration, by any key that may host gateways, takes the id and its connection over).
 */
export function registerGatewayRoutes(
  app: FastifyInstance,
  deps: {
    registry: GatewayRegistry;
    directory?: GatewayDirectory | undefined;
    owners: Pick<GatewayTunnelOwnerQueries, 'release'>;
  },
): void {
  const query = ROUTES.find((route) => route.operationId === 'listGateways')?.query;
  if (!query) throw new Error('route table has no query schema for listGateways');
  app.get('/v1/gateways', async (request): Promise<GatewayList> => {
    parseInput(query, request.query, 'query');
    const local = deps.registry.list();
    const others = (await deps.directory?.others()) ?? [];
    const remote = others.filter((row) => !deps.registry.holds(row.tunnelId)).map(remoteGateway);
    return {
      data: [...local, ...remote].sort((a, b) =>
        a.tunnelId < b.tunnelId ? -1 : a.tunnelId > b.tunnelId ? 1 : 0,
      ),
    };
  });
  app.get<{ Params: { tunnelId: string } }>('/v1/gateways/:tunnelId', async (request): Promise<Gateway> => {
    parseInput(query, request.query, 'query');
    const held = deps.registry.get(request.params.tunnelId);
    const row = held ? undefined : await deps.directory?.remote(request.params.tunnelId);
    const gateway = held ?? (row ? remoteGateway(row) : undefined);
    if (!gateway) throw KG_ERR_GATEWAY_NOT_CONNECTED(request.params.tunnelId);
    return gateway;
  });
  app.delete<{ Params: { tunnelId: string } }>('/v1/gateways/:tunnelId/owner', async (request) => {
    parseInput(query, request.query, 'query');
    const { tunnelId } = request.params;
    if (!(await deps.owners.release(tunnelId))) throw KG_ERR_TUNNEL_OWNER_NOT_FOUND(tunnelId);
    return { success: true };
  });
}
