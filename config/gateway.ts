import { z } from 'zod';
import { DEFAULT_GATEWAY_SETTINGS, type GatewaySettings } from '../api/gateway/registry.ts';
import { formatIssues } from '../contract/format-issues.ts';
import { RelayAddressSetting } from '../engine/protocols/gateway-socket.ts';

const positiveInt = z.coerce.number().int().positive();

const GatewayEnv = z.object({
  KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.connectWaitMs),
  KUBEGLUE_GATEWAY_OPEN_TIMEOUT_MS: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.openTimeoutMs),
  KUBEGLUE_GATEWAY_STREAM_LIMIT: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.streamLimit),
  KUBEGLUE_GATEWAY_RELAY_HOST: z.string().min(1).default('127.0.0.1'),
  KUBEGLUE_GATEWAY_RELAY_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  KUBEGLUE_GATEWAY_RELAY_ADVERTISE: RelayAddressSetting.optional(),
  KUBEGLUE_GATEWAY_HEARTBEAT_MS: positiveInt.default(5_000),
  POD_IP: z.string().optional(),
});

/** Where the gateway relay listens, how the other replicas reach it, how often tunnels are refreshed. */
export interface GatewayRelaySettings {
  host: string;
  port: number;
  /** host:port the other replicas dial; derived from the listen address when not set. */
  advertise: string | undefined;
  heartbeatMs: number;
}

/** The relay knobs from `KUBEGLUE_GATEWAY_RELAY_*` (README "Reaching private networks"). */
export function gatewayRelaySettingsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): GatewayRelaySettings {
  const parsed = GatewayEnv.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  const d = parsed.data;
  return {
    host: d.KUBEGLUE_GATEWAY_RELAY_HOST,
    port: d.KUBEGLUE_GATEWAY_RELAY_PORT,
    advertise: d.KUBEGLUE_GATEWAY_RELAY_ADVERTISE,
    heartbeatMs: d.KUBEGLUE_GATEWAY_HEARTBEAT_MS,
  };
}

/** The address other replicas dial: the setting, else the Pod's IP, else the listen address. */
export function relayAdvertiseAddress(
  settings: GatewayRelaySettings,
  port: number,
  env: Readonly<Record<string, string | undefined>>,
): string {
  if (settings.advertise) return settings.advertise;
  const wildcard = settings.host === '0.0.0.0' || settings.host === '::';
  const host = wildcard ? env.POD_IP || '127.0.0.1' : settings.host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The gateway knobs from `KUBEGLUE_GATEWAY_*` (README "Reaching private networks"). */
export function gatewaySettingsFromEnv(env: Readonly<Record<string, string | undefined>>): GatewaySettings {
  const parsed = GatewayEnv.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  return {
    connectWaitMs: parsed.data.KUBEGLUE_GATEWAY_CONNECT_WAIT_MS,
    openTimeoutMs: parsed.data.KUBEGLUE_GATEWAY_OPEN_TIMEOUT_MS,
    streamLimit: parsed.data.KUBEGLUE_GATEWAY_STREAM_LIMIT,
  };
}
