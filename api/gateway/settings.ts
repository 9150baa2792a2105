import { z } from 'zod';
import { formatIssues } from '../../crds/errors.ts';
import { DEFAULT_GATEWAY_SETTINGS, type GatewaySettings } from './registry.ts';

const positiveInt = z.coerce.number().int().positive();

const GatewayEnv = z.object({
  KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.connectWaitMs),
  KUBEGLUE_GATEWAY_OPEN_TIMEOUT_MS: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.openTimeoutMs),
  KUBEGLUE_GATEWAY_STREAM_LIMIT: positiveInt.default(DEFAULT_GATEWAY_SETTINGS.streamLimit),
});

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
