/** Errors of gateway agents and the tunnel ids they own. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_GATEWAY_NOT_CONNECTED = define(
  'KG_ERR_GATEWAY_NOT_CONNECTED',
  404,
  (tunnelId: string) => `gateway ${tunnelId} is not connected`,
  'Start the agent for that tunnel id, or check its connection: GET /v1/gateways lists the connected tunnels (docs/gateway.md).',
);

export const KG_ERR_TUNNEL_OWNER_NOT_FOUND = define(
  'KG_ERR_TUNNEL_OWNER_NOT_FOUND',
  404,
  (tunnelId: string) => `No API key owns tunnel id '${tunnelId}'`,
  'No key owns that tunnel id: there is nothing to release.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const GATEWAY_ERRORS: readonly CatalogEntry[] = entries;
