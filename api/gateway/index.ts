/**
 * Gateways on the API server: the registry of live tunnels, the relay the engine workers dial, the
 * tunnel endpoint, the handlers of `/v1/gateways` (routes.ts) and the metrics. `startGateways` runs before
 * the worker pool starts (the workers learn the relay's address); `installGateways` once the app exists.
 */

import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { ApiSettings } from '../../config/config.ts';
import { deriveKey } from '../../platform/secret-box.ts';
import type { GatewayTunnelOwnerQueries, GatewayTunnelQueries, StoredApiKey } from '../../store/index.ts';
import { GatewayDirectory } from './directory.ts';
import { installTunnelEndpoint } from './endpoint.ts';
import { installGatewayMetrics } from './metrics.ts';
import { GatewayRegistry } from './registry.ts';
import { type GatewayRelay, startGatewayRelay } from './relay.ts';
import type { RunnerStreamCheck } from './runner-access.ts';

export { GatewayRegistry } from './registry.ts';
export { gatewayHandlers } from './routes.ts';

export interface Gateways {
  registry: GatewayRegistry;
  /** This replica's name (KUBEGLUE_POD_NAME, else the host name), shown with the tunnels it holds. */
  replica: string;
  relay: GatewayRelay;
  /** The tunnels of the other replicas (when the store is shared). */
  directory?: GatewayDirectory | undefined;
}

/** The gateway settings of an API process (KUBEGLUE_GATEWAY_*: config/gateway.ts). */
export type GatewaysSettings = Pick<ApiSettings, 'gateway' | 'relay' | 'podName'>;

/** The address other replicas dial: the setting, else the Pod's IP, else the listen address. */
function relayAdvertiseAddress(relay: GatewaysSettings['relay'], port: number): string {
  if (relay.advertise) return relay.advertise;
  const wildcard = relay.host === '0.0.0.0' || relay.host === '::';
  const host = wildcard ? relay.podIp || '127.0.0.1' : relay.host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** What the peer token of the replicas' relays is derived for; bump it to refuse the tokens of older replicas. */
const GATEWAY_PEERS_KEY_PURPOSE = 'kubeglue/gateway-peers/v1';

export async function startGateways(options: {
  settings: GatewaysSettings;
  log(line: string): void;
  /**
   * The store's tunnel directory and the master key, from which every replica derives the same peer
   * token: tunnels are reachable from every replica.
   */
  shared?: { tunnels: GatewayTunnelQueries; masterKey: Buffer };
  /** Kubernetes mode: which streams runner Pods may open with their run's token. */
  runners?: RunnerStreamCheck;
}): Promise<Gateways> {
  const registry = new GatewayRegistry(options.settings.gateway);
  const settings = options.settings.relay;
  const shared = options.shared;
  // The relay learns its port before the directory knows where to advertise it.
  let directory: GatewayDirectory | undefined;
  const relay = await startGatewayRelay(registry, {
    host: settings.host,
    port: settings.port,
    log: options.log,
    ...(options.runners ? { runners: options.runners } : {}),
    ...(shared
      ? {
          peerToken: deriveKey(shared.masterKey, GATEWAY_PEERS_KEY_PURPOSE).toString('base64url'),
          directory: { remote: (id) => directory?.remote(id) ?? Promise.resolve(undefined) },
        }
      : {}),
  });
  if (shared) {
    directory = new GatewayDirectory({
      tunnels: shared.tunnels,
      holderId: randomUUID(),
      replica: options.settings.podName,
      relayAddress: relayAdvertiseAddress(settings, relay.port),
      heartbeatMs: settings.heartbeatMs,
      log: options.log,
    });
    directory.follow(registry);
  }
  return { registry, relay, directory, replica: options.settings.podName };
}

export function installGateways(
  app: FastifyInstance,
  deps: {
    gateways: Gateways;
    findApiKeyByHash(keyHash: string): Promise<StoredApiKey | undefined>;
    /** Which key owns each tunnel id (the store's, shared by every replica). */
    owners: GatewayTunnelOwnerQueries;
    metrics: Registry;
    log(line: string): void;
  },
): void {
  const { registry, relay } = deps.gateways;
  const closeEndpoint = installTunnelEndpoint(app.server, {
    registry,
    findApiKeyByHash: deps.findApiKeyByHash,
    owners: deps.owners,
    log: deps.log,
  });
  installGatewayMetrics(deps.metrics, registry);
  // Agents are told to go away first (they reconnect to another replica), then the relay stops.
  app.addHook('preClose', async () => {
    closeEndpoint();
    await deps.gateways.directory?.stop(registry);
    await relay.close();
  });
}
