/**
 * The operator's knobs, read from `KUBEGLUE_*` environment variables. Each has a default and a one-line
 * doc; `SETTINGS_TABLE` lists them for the README. Invalid values stop the operator with a message
 * naming the variable.
 */
import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';
import { RelayAddressSetting } from '../engine/protocols/gateway-socket.ts';
import { DEFAULT_LIMITS } from '../engine/types.ts';

const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().min(0);
const bool = z.enum(['true', 'false']).transform((value) => value === 'true');
/** A Kubernetes quantity such as `100m`, `1`, `256Mi`, `1.5Gi`. */
const quantity = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/, 'must be a Kubernetes quantity like 256Mi');
/** Comma-separated, empty entries dropped. */
const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
);

interface SettingSpec<T extends z.ZodType> {
  env: string;
  schema: T;
  /** The default as it would be written in the environment; undefined = unset. */
  default: string | undefined;
  doc: string;
}

function setting<T extends z.ZodType>(
  env: string,
  schema: T,
  defaultValue: string | undefined,
  doc: string,
): SettingSpec<T> {
  return { env, schema, default: defaultValue, doc };
}

/** Every setting by its field name in OperatorSettings. */
export const SETTING_SPECS = {
  runnerImage: setting(
    'KUBEGLUE_RUNNER_IMAGE',
    z.string().min(1),
    'ghcr.io/kubeglue/kubeglue:0.1.0',
    'image of runner Pods (started with `args: [runner]`)',
  ),
  runnerImagePullPolicy: setting(
    'KUBEGLUE_RUNNER_IMAGE_PULL_POLICY',
    z.enum(['Always', 'IfNotPresent', 'Never']),
    'IfNotPresent',
    'imagePullPolicy of runner Pods',
  ),
  runnerImagePullSecrets: setting(
    'KUBEGLUE_RUNNER_IMAGE_PULL_SECRETS',
    list,
    '',
    'comma-separated names of Secrets runner Pods pull their image with',
  ),
  runnerServiceAccount: setting(
    'KUBEGLUE_RUNNER_SERVICE_ACCOUNT',
    z.string(),
    '',
    'ServiceAccount of runner Pods (empty: the namespace default; its token is never mounted)',
  ),
  runnerCpuRequest: setting('KUBEGLUE_RUNNER_CPU_REQUEST', quantity, '100m', 'CPU request of a runner Pod'),
  runnerCpuLimit: setting('KUBEGLUE_RUNNER_CPU_LIMIT', quantity, '1', 'CPU limit of a runner Pod'),
  runnerMemoryRequest: setting(
    'KUBEGLUE_RUNNER_MEMORY_REQUEST',
    quantity,
    '256Mi',
    'memory request of a runner Pod',
  ),
  runnerMemoryLimit: setting(
    'KUBEGLUE_RUNNER_MEMORY_LIMIT',
    quantity,
    '512Mi',
    'memory limit of a runner Pod (exceeding it: the run fails as OOMKilled)',
  ),
  runnerTmpSize: setting(
    'KUBEGLUE_RUNNER_TMP_SIZE',
    quantity,
    '256Mi',
    'size limit of the emptyDir a runner Pod gets at /tmp (its only writable path)',
  ),
  runnerUserId: setting(
    'KUBEGLUE_RUNNER_USER_ID',
    positiveInt,
    '65532',
    "numeric user (and group) id runner containers run as (the image's user); never 0",
  ),
  runnerTerminationGraceSeconds: setting(
    'KUBEGLUE_RUNNER_TERMINATION_GRACE_SECONDS',
    nonNegativeInt,
    '10',
    'a deleted runner Pod gets this long between SIGTERM and SIGKILL',
  ),
  internalUrl: setting(
    'KUBEGLUE_INTERNAL_URL',
    z.url(),
    'http://kubeglue-internal:8081',
    "base URL of the API's internal runner port, as runner Pods reach it",
  ),
  runnerGatewayRelay: setting(
    'KUBEGLUE_RUNNER_GATEWAY_RELAY',
    z.union([z.literal(''), RelayAddressSetting]),
    '',
    "host:port of the api's gateway relay as runner Pods reach it (steps on private systems); empty: KUBEGLUE_INTERNAL_URL's host, port 8082",
  ),
  sandboxMemoryMb: setting(
    'KUBEGLUE_SANDBOX_MEMORY_MB',
    positiveInt,
    '128',
    "memory limit of a transform's isolate (passed to runner Pods)",
  ),
  sandboxTimeoutMs: setting(
    'KUBEGLUE_SANDBOX_TIMEOUT_MS',
    positiveInt,
    '10000',
    'CPU time limit of one transform evaluation (passed to runner Pods)',
  ),
  maxStepDataBytes: setting(
    'KUBEGLUE_MAX_STEP_DATA_BYTES',
    positiveInt,
    String(DEFAULT_LIMITS.maxStepDataBytes),
    'largest data of one step, as UTF-8 JSON; a step with more fails, naming its size (passed to runner Pods)',
  ),
  maxResultBytes: setting(
    'KUBEGLUE_MAX_RESULT_BYTES',
    positiveInt,
    String(DEFAULT_LIMITS.maxResultBytes),
    "largest result of a run, as UTF-8 JSON: its output data and every step's data together; a run with more fails (passed to runner Pods)",
  ),
  egressPrivate: setting(
    'KUBEGLUE_EGRESS_PRIVATE',
    z.enum(['allow', 'deny']),
    'deny',
    'whether runner Pods may reach loopback/private addresses (metadata addresses are always refused); passed to runner Pods',
  ),
  egressAllow: setting(
    'KUBEGLUE_EGRESS_ALLOW',
    z.string(),
    '',
    'hosts/CIDRs runner Pods may reach although private (passed to runner Pods as is)',
  ),
  egressDeny: setting(
    'KUBEGLUE_EGRESS_DENY',
    z.string(),
    '',
    'hosts/CIDRs runner Pods must never reach (passed to runner Pods as is)',
  ),
  maxAsyncRuns: setting(
    'KUBEGLUE_MAX_ASYNC_RUNS',
    positiveInt,
    '64',
    'asynchronous runs executing at once; more wait (Admitted=False, AdmissionLimit), admitted in creation order',
  ),
  maxAsyncRunsPerNamespace: setting(
    'KUBEGLUE_MAX_ASYNC_RUNS_PER_NAMESPACE',
    positiveInt.optional(),
    undefined,
    'asynchronous runs executing at once per namespace (unset: only the global limit)',
  ),
  maxRunAttempts: setting(
    'KUBEGLUE_MAX_RUN_ATTEMPTS',
    positiveInt,
    '3',
    'executions a read-only run (every step modify: false) gets at most when its runner Pod is lost (deleted, evicted, node gone); a run that modifies data is never retried',
  ),
  defaultRunTimeoutMs: setting(
    'KUBEGLUE_DEFAULT_RUN_TIMEOUT_MS',
    positiveInt,
    String(5 * 60 * 1000),
    "timeout of a run without options.timeout (the engine's default); sets the runner Pod's deadline",
  ),
  deadlineMarginSeconds: setting(
    'KUBEGLUE_RUNNER_DEADLINE_MARGIN_SECONDS',
    positiveInt,
    '60',
    "activeDeadlineSeconds of a runner Pod = the run's timeout + this (start-up and reporting)",
  ),
  pendingTimeoutMs: setting(
    'KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS',
    positiveInt,
    '300000',
    'a runner Pod that has not started after this long (image pull failing, unschedulable, …) fails its run',
  ),
  heartbeatStaleMs: setting(
    'KUBEGLUE_RUNNER_HEARTBEAT_STALE_MS',
    positiveInt,
    '90000',
    'a runner whose Pod is Running but that sent no heartbeat for this long is given up (node lost or runner hung): its Pod is deleted, a read-only run starts over, any other fails',
  ),
  cancelGraceMs: setting(
    'KUBEGLUE_CANCEL_GRACE_MS',
    nonNegativeInt,
    '30000',
    'after a cancel the runner gets this long to stop by itself (it learns it from its heartbeat), then its Pod is deleted',
  ),
  deleteSucceededPods: setting(
    'KUBEGLUE_DELETE_SUCCEEDED_PODS',
    bool,
    'true',
    'delete the runner Pod of a succeeded run as soon as the outcome is recorded',
  ),
  failedPodRetentionMs: setting(
    'KUBEGLUE_FAILED_POD_RETENTION_MS',
    nonNegativeInt,
    String(15 * 60 * 1000),
    'the runner Pod of a failed or cancelled run is kept this long for inspection (logs), then deleted',
  ),
  toolRunRetentionMs: setting(
    'KUBEGLUE_TOOLRUN_RETENTION_MS',
    positiveInt,
    String(60 * 60 * 1000),
    'finished ToolRun objects (and their Pods) are deleted after this; the run record stays in the store',
  ),
  resyncMs: setting(
    'KUBEGLUE_OPERATOR_RESYNC_MS',
    positiveInt,
    String(5 * 60 * 1000),
    'every object is reconciled again this often even without a change (a safety net)',
  ),
  reconcileWorkers: setting(
    'KUBEGLUE_OPERATOR_WORKERS',
    positiveInt,
    '4',
    'ToolRuns reconciled at once (admissions are decided one at a time whatever this is)',
  ),
} as const;

type Specs = typeof SETTING_SPECS;
export type OperatorSettings = { [K in keyof Specs]: z.output<Specs[K]['schema']> };

/** The settings from the environment; throws naming every invalid variable. */
export function loadOperatorSettings(env: NodeJS.ProcessEnv = process.env): OperatorSettings {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [field, spec] of Object.entries(SETTING_SPECS) as [keyof Specs, Specs[keyof Specs]][]) {
    const raw = env[spec.env] ?? spec.default;
    const parsed = (spec.schema as z.ZodType).safeParse(raw);
    if (parsed.success) out[field] = parsed.data;
    else problems.push(formatIssues(parsed.error, spec.env));
  }
  if (problems.length > 0) throw new Error(`invalid operator configuration: ${problems.join('; ')}`);
  return out as OperatorSettings;
}

/** The defaults, as the operator runs without any variable set. */
export function defaultOperatorSettings(overrides: Partial<OperatorSettings> = {}): OperatorSettings {
  return { ...loadOperatorSettings({}), ...overrides };
}

/** Rows for the README's settings table: variable, default, meaning. */
export const SETTINGS_TABLE: { env: string; default: string; doc: string }[] = Object.values(
  SETTING_SPECS,
).map((spec) => ({ env: spec.env, default: spec.default ?? 'unset', doc: spec.doc }));
