/**
 * HTTP(S) to a private system: an undici agent whose connections to the system's origin go through the
 * gateway (gateway-socket.ts) and whose connections anywhere else (a redirect to another origin) pass
 * the egress guard as usual. For https the TLS session runs over the tunnel socket with the URL's host
 * name as SNI and for the certificate check, so the tunnel carries ciphertext only.
 */
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { GatewayRoute } from '../types.ts';
import { AgentCache } from './agent-cache.ts';
import { decompress } from './decompress.ts';
import type { EgressGuard } from './egress-policy.ts';
import { egressConnector, type ResolveAll } from './egress-socket.ts';
import { dialGateway, type GatewayRelayAddress } from './gateway-socket.ts';

const CONNECT_TIMEOUT_MS = 30_000;
const agents = new AgentCache(64);

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function gatewayConnector(
  route: GatewayRoute,
  relay: GatewayRelayAddress | undefined,
  direct: buildConnector.connector,
): buildConnector.connector {
  const overTls = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  return (options, callback) => {
    const port = Number(options.port || (options.protocol === 'https:' ? 443 : 80));
    if (unbracket(options.hostname).toLowerCase() !== route.host || port !== route.port) {
      direct(options, callback);
      return;
    }
    dialGateway(relay, route, CONNECT_TIMEOUT_MS).then(
      (socket) => {
        if (options.protocol !== 'https:') callback(null, socket);
        else overTls({ ...options, httpSocket: socket }, callback);
      },
      (error: Error) => callback(error, null),
    );
  };
}

/** A keep-alive agent per gateway route (and egress rules for the other origins). */
export function gatewayAgentFor(
  route: GatewayRoute,
  relay: GatewayRelayAddress | undefined,
  guard: EgressGuard,
  resolve: ResolveAll | undefined,
): Dispatcher {
  const key = `${route.tunnelId}\0${route.target}\0${route.host}\0${route.port}\0${guard.key}\0${resolve ? 'r' : ''}`;
  return agents.get(key, () => {
    const direct = egressConnector(guard, { timeoutMs: CONNECT_TIMEOUT_MS, ...(resolve ? { resolve } : {}) });
    return new Agent({
      connections: 32,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 300_000,
      connect: gatewayConnector(route, relay, direct),
    }).compose(decompress);
  });
}

export async function closeGatewayAgents(): Promise<void> {
  await agents.closeAll();
}
