/**
 * Gateways on the API server: the registry of live tunnels, the relay the engine workers dial, the
 * tunnel endpoint, `GET /v1/gateways` and the metrics. `startGateways` runs before the worker pool
 * starts (the workers learn the relay's address); `installGateways` once the app exists.
 */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { StoredApiKey } from '../../store/index.ts';
import { installTunnelEndpoint } from './endpoint.ts';
import { installGatewayMetrics } from './metrics.ts';
import { GatewayRegistry } from './registry.ts';
import { type GatewayRelay, startGatewayRelay } from './relay.ts';
import { registerGatewayRoutes } from './routes.ts';
import { gatewaySettingsFromEnv } from './settings.ts';

export { GatewayRegistry } from './registry.ts';

export interface Gateways {
  registry: GatewayRegistry;
  relay: GatewayRelay;
}

export async function startGateways(options: {
  env: Readonly<Record<string, string | undefined>>;
  log(line: string): void;
}): Promise<Gateways> {
  const registry = new GatewayRegistry(gatewaySettingsFromEnv(options.env));
  const relay = await startGatewayRelay(registry, { log: options.log });
  return { registry, relay };
}

export function installGateways(
  app: FastifyInstance,
  deps: {
    gateways: Gateways;
    findApiKeyByHash(keyHash: string): Promise<StoredApiKey | undefined>;
    metrics: Registry;
    log(line: string): void;
  },
): void {
  const { registry, relay } = deps.gateways;
  const closeEndpoint = installTunnelEndpoint(app.server, {
    registry,
    findApiKeyByHash: deps.findApiKeyByHash,
    log: deps.log,
  });
  registerGatewayRoutes(app, { registry });
  installGatewayMetrics(deps.metrics, registry);
  // Agents are told to go away first (they reconnect to another replica), then the relay stops.
  app.addHook('preClose', async () => {
    closeEndpoint();
    await relay.close();
  });
}
