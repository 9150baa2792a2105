import type { Gateway, GatewayList } from '../../contract/api/bodies.ts';
import { KG_ERR_GATEWAY_NOT_CONNECTED, KG_ERR_TUNNEL_OWNER_NOT_FOUND } from '../../contract/api/errors.ts';
import type { GatewayTunnelOwnerQueries, GatewayTunnelRow } from '../../store/index.ts';
import type { HandlersOf } from '../routes/register.ts';
import type { GatewayDirectory } from './directory.ts';
import type { GatewayInfo, GatewayRegistry } from './registry.ts';

/** A tunnel another replica holds: what the directory knows, with the counters of the holder's last heartbeat. */
function remoteGateway(row: GatewayTunnelRow): Gateway {
  return {
    tunnelId: row.tunnelId,
    connected: true,
    connectedSince: new Date(row.connectedAt).toISOString(),
    targets: JSON.parse(row.targets) as Gateway['targets'],
    streamsOpen: row.streamsOpen,
    streamsOpened: row.streamsOpened,
    bytesIn: row.bytesIn,
    bytesOut: row.bytesOut,
    countersAt: new Date(row.countersAt).toISOString(),
    replica: row.replica,
    heldHere: false,
  };
}

/**
 * `GET /v1/gateways[/{tunnelId}]`: the connected tunnels of every replica, for choosing one for a private
 * system. `DELETE /v1/gateways/{tunnelId}/owner`: an admin releases a tunnel id from the key that owns it,
 * so an agent with another key may register it (a connected agent is not disconnected: the next
 * registration, by any key that may host gateways, takes the id and its connection over).
 */
export function gatewayHandlers(deps: {
  registry: GatewayRegistry;
  /** This replica's name, shown with the tunnels it holds. */
  replica: string;
  directory?: GatewayDirectory | undefined;
  owners: Pick<GatewayTunnelOwnerQueries, 'release'>;
}): HandlersOf<'listGateways' | 'getGateway' | 'releaseGatewayOwner'> {
  const held = (info: GatewayInfo): Gateway => ({
    ...info,
    replica: deps.replica,
    countersAt: new Date().toISOString(),
  });
  return {
    listGateways: async (): Promise<GatewayList> => {
      const local = deps.registry.list().map(held);
      const others = (await deps.directory?.others()) ?? [];
      const remote = others.filter((row) => !deps.registry.holds(row.tunnelId)).map(remoteGateway);
      return {
        data: [...local, ...remote].sort((a, b) =>
          a.tunnelId < b.tunnelId ? -1 : a.tunnelId > b.tunnelId ? 1 : 0,
        ),
      };
    },

    getGateway: async ({ params: { tunnelId } }): Promise<Gateway> => {
      const here = deps.registry.get(tunnelId);
      const row = here ? undefined : await deps.directory?.remote(tunnelId);
      const gateway = here ? held(here) : row ? remoteGateway(row) : undefined;
      if (!gateway) throw KG_ERR_GATEWAY_NOT_CONNECTED(tunnelId);
      return gateway;
    },

    releaseGatewayOwner: async ({ params: { tunnelId } }) => {
      if (!(await deps.owners.release(tunnelId))) throw KG_ERR_TUNNEL_OWNER_NOT_FOUND(tunnelId);
      return { success: true };
    },
  };
}
