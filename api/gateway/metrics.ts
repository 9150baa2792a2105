import { Counter, Gauge, type Registry } from 'prom-client';
import type { GatewayRegistry } from './registry.ts';

/**
 * Per-tunnel figures, read from the registry at scrape time. Tunnel ids are bounded by the agents an
 * admin key registered, so they are safe as label values.
 */
export function installGatewayMetrics(registry: Registry, gateways: GatewayRegistry): void {
  new Gauge({
    name: 'kubeglue_gateway_connected',
    help: 'Gateway agents connected to this replica (1 per tunnel id)',
    labelNames: ['tunnel'],
    registers: [registry],
    collect() {
      this.reset();
      for (const gateway of gateways.list()) this.set({ tunnel: gateway.tunnelId }, 1);
    },
  });
  new Gauge({
    name: 'kubeglue_gateway_streams_open',
    help: 'TCP streams open through each tunnel',
    labelNames: ['tunnel'],
    registers: [registry],
    collect() {
      this.reset();
      for (const gateway of gateways.list()) this.set({ tunnel: gateway.tunnelId }, gateway.streamsOpen);
    },
  });
  // Counters of the live connection (they restart at 0 when an agent reconnects, like any counter reset).
  const bytes = new Counter({
    name: 'kubeglue_gateway_bytes_total',
    help: 'Bytes through each tunnel since its agent connected, by direction (in: from the agent)',
    labelNames: ['tunnel', 'direction'],
    registers: [registry],
    collect() {
      bytes.reset();
      for (const gateway of gateways.list()) {
        bytes.inc({ tunnel: gateway.tunnelId, direction: 'in' }, gateway.bytesIn);
        bytes.inc({ tunnel: gateway.tunnelId, direction: 'out' }, gateway.bytesOut);
      }
    },
  });
}
