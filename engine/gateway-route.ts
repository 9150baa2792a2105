/**
 * Which connections of a step go through a gateway: those of a step whose system has `gateway` set, to
 * the system's own host and port (its base URL, or for a dataStore its connection URL). A step on such
 * a system that calls another host connects directly, under the egress guard. Pure.
 */

import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { originOf } from './origins.ts';
import type { GatewayRoute } from './types.ts';

function hostAndPort(origin: string): { host: string; port: number } {
  const url = new URL(origin);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host: host.toLowerCase(), port: Number(url.port || origin.slice(origin.lastIndexOf(':') + 1)) };
}

export function gatewayRouteFor(system: ResolvedSystem | undefined, url: string): GatewayRoute | undefined {
  if (!system?.gateway) return undefined;
  const stepOrigin = originOf(url);
  if (!stepOrigin) return undefined;
  const step = hostAndPort(stepOrigin);
  const home = system.url ?? system.credentials.url;
  const homeOrigin = home === undefined ? undefined : originOf(home);
  if (homeOrigin) {
    const own = hostAndPort(homeOrigin);
    if (own.host !== step.host || own.port !== step.port) return undefined;
  }
  return { tunnelId: system.gateway.tunnelId, target: system.gateway.target, ...step };
}
