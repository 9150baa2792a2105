import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';
import { RUNNER_ENV } from '../contract/wire/runner.ts';
import { type EgressPolicy, egressPolicyFromEnv } from '../engine/protocols/egress-policy.ts';
import {
  GATEWAY_RELAY_ENV,
  type GatewayRelayAddress,
  RelayAddressSetting,
  relayForRun,
} from '../engine/protocols/gateway-socket.ts';
import { DEFAULT_LIMITS } from '../engine/types.ts';

const positiveInt = z.coerce.number().int().positive();

/**
 * The runner Pod's environment: the contract's names (RUNNER_ENV, set by the operator) plus the runner's
 * own knobs, each with a default that suits a Pod (documented in the README).
 */
const PodRunnerEnv = z.object({
  [RUNNER_ENV.internalUrl]: z.url(),
  [RUNNER_ENV.runId]: z.string().min(1),
  [RUNNER_ENV.token]: z.string().min(1),
  [RUNNER_ENV.attempt]: positiveInt.default(1),
  [RUNNER_ENV.terminationMessagePath]: z.string().min(1).default('/dev/termination-log'),
  KUBEGLUE_RUNNER_HEARTBEAT_MS: positiveInt.default(5_000),
  KUBEGLUE_RUNNER_REQUEST_TIMEOUT_MS: positiveInt.default(10_000),
  KUBEGLUE_RUNNER_ORDER_RETRY_MS: positiveInt.default(60_000),
  KUBEGLUE_RUNNER_RESULT_RETRY_MS: positiveInt.default(60_000),
  KUBEGLUE_RUNNER_EVENT_FLUSH_MS: positiveInt.default(10_000),
  KUBEGLUE_RUNNER_EVENT_BUFFER: positiveInt.default(1_000),
  KUBEGLUE_SANDBOX_MEMORY_MB: positiveInt.default(128),
  KUBEGLUE_SANDBOX_TIMEOUT_MS: positiveInt.default(10_000),
  KUBEGLUE_MAX_STEP_DATA_BYTES: positiveInt.default(DEFAULT_LIMITS.maxStepDataBytes),
  KUBEGLUE_MAX_RESULT_BYTES: positiveInt.default(DEFAULT_LIMITS.maxResultBytes),
  [GATEWAY_RELAY_ENV]: RelayAddressSetting.optional(),
});

export interface PodRunnerConfig {
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
  sandboxMemoryMb: number;
  sandboxTimeoutMs: number;
  /** The step data and result bounds: the result the runner puts is never larger. */
  maxStepDataBytes: number;
  maxResultBytes: number;
  /** KUBEGLUE_EGRESS_*: a Pod runs in the cluster, so private addresses are refused unless allowed. */
  egress: EgressPolicy;
  /** The API's gateway relay (KUBEGLUE_GATEWAY_RELAY), entered with the run's token: steps on private systems. */
  gatewayRelay: GatewayRelayAddress | undefined;
}

/** Throws with the names of the bad variables, never their values (one of them is the token). */
export function loadPodRunnerConfig(env: NodeJS.ProcessEnv): PodRunnerConfig {
  const parsed = PodRunnerEnv.safeParse(env);
  if (!parsed.success) throw new Error(`invalid runner environment: ${formatIssues(parsed.error)}`);
  const e = parsed.data;
  return {
    internalUrl: e[RUNNER_ENV.internalUrl].replace(/\/+$/, ''),
    runId: e[RUNNER_ENV.runId],
    token: e[RUNNER_ENV.token],
    attempt: e[RUNNER_ENV.attempt],
    terminationMessagePath: e[RUNNER_ENV.terminationMessagePath],
    heartbeatMs: e.KUBEGLUE_RUNNER_HEARTBEAT_MS,
    requestTimeoutMs: e.KUBEGLUE_RUNNER_REQUEST_TIMEOUT_MS,
    orderRetryMs: e.KUBEGLUE_RUNNER_ORDER_RETRY_MS,
    resultRetryMs: e.KUBEGLUE_RUNNER_RESULT_RETRY_MS,
    eventFlushMs: e.KUBEGLUE_RUNNER_EVENT_FLUSH_MS,
    eventBuffer: e.KUBEGLUE_RUNNER_EVENT_BUFFER,
    sandboxMemoryMb: e.KUBEGLUE_SANDBOX_MEMORY_MB,
    sandboxTimeoutMs: e.KUBEGLUE_SANDBOX_TIMEOUT_MS,
    maxStepDataBytes: e.KUBEGLUE_MAX_STEP_DATA_BYTES,
    maxResultBytes: e.KUBEGLUE_MAX_RESULT_BYTES,
    egress: egressPolicyFromEnv(env, 'deny'),
    gatewayRelay: relayForRun(e[GATEWAY_RELAY_ENV], {
      runId: e[RUNNER_ENV.runId],
      token: e[RUNNER_ENV.token],
    }),
  };
}
