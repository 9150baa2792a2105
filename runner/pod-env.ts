import type { EngineSettings, RunnerSettings } from '../config/config.ts';
import { engineSettings, SETTINGS } from '../config/config.ts';
import { type GatewayRelayAddress, relayForRun } from '../engine/protocols/gateway-socket.ts';

/** What a runner Pod runs with: its run (from the operator), the runner's knobs and the engine's settings. */
export interface PodRunnerConfig extends EngineSettings {
  internalUrl: string;
  runId: string;
  token: string;
  attempt: number;
  terminationMessagePath: string;
  heartbeatMs: number;
  /** Each call to the internal API. */
  requestTimeoutMs: number;
  /** How long fetching the order keeps retrying while the internal API is unreachable or failing. */
  orderRetryMs: number;
  /** The same for putting the result. */
  resultRetryMs: number;
  /** How long undelivered events may hold up putting the result once the run ended. */
  eventFlushMs: number;
  /** Progress events (step started, page fetched) kept while the API lags; step results are always kept. */
  eventBuffer: number;
  /** The API's gateway relay (KUBEGLUE_GATEWAY_RELAY), entered with the run's token: steps on private systems. */
  gatewayRelay: GatewayRelayAddress | undefined;
}

/**
 * The runner Pod's configuration from the runner's settings; throws naming the variables the operator
 * should have set and did not (never their values: one of them is the token).
 */
export function podRunnerConfig(settings: RunnerSettings): PodRunnerConfig {
  const { internalUrl, runId, runToken } = settings;
  if (!internalUrl || !runId || !runToken) {
    const { tree } = SETTINGS;
    const missing = [
      [internalUrl, tree.internalUrl.name],
      [runId, tree.runId.name],
      [runToken, tree.runToken.name],
    ].flatMap(([value, name]) => (value ? [] : [`${name}: required in a runner Pod`]));
    throw new Error(`invalid runner environment: ${missing.join('; ')}`);
  }
  return {
    internalUrl,
    runId,
    token: runToken,
    attempt: settings.runAttempt,
    terminationMessagePath: settings.terminationMessagePath,
    ...settings.runner,
    ...engineSettings(settings),
    gatewayRelay: relayForRun(settings.gatewayRelay, { runId, token: runToken }),
  };
}
