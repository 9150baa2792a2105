/** Settings of the operator: the runner Pods it creates, their watchdogs and clean-up, its reconcilers. */
import { z } from 'zod';
import { DEFAULT_RUN_TIMEOUT_MS } from '../contract/api/run.ts';
import { bool, hostPortOrEmpty, list, nonNegativeInt, positiveInt, quantity, text } from './schemas.ts';
import { section, setting } from './setting.ts';

export const OPERATOR = section(
  'Runner Pods and the operator',
  'The operator (`kubeglue operator`) starts one runner Pod per async run; these settings shape the Pods, ' +
    'watch over them and clean up after them. The chart sets the image, the internal URL, the user and ' +
    'the resources from its values.',
  {
    runnerImage: setting(
      'KUBEGLUE_RUNNER_IMAGE',
      text,
      'ghcr.io/kubeglue/kubeglue:0.1.0',
      ['operator'],
      'image of runner Pods (started with `args: [runner]`)',
    ),
    runnerImagePullPolicy: setting(
      'KUBEGLUE_RUNNER_IMAGE_PULL_POLICY',
      z.enum(['Always', 'IfNotPresent', 'Never']),
      'IfNotPresent',
      ['operator'],
      'imagePullPolicy of runner Pods',
    ),
    runnerImagePullSecrets: setting(
      'KUBEGLUE_RUNNER_IMAGE_PULL_SECRETS',
      list,
      '',
      ['operator'],
      'comma-separated names of Secrets runner Pods pull their image with',
    ),
    runnerServiceAccount: setting(
      'KUBEGLUE_RUNNER_SERVICE_ACCOUNT',
      z.string(),
      '',
      ['operator'],
      'ServiceAccount of runner Pods (empty: the namespace default; its token is never mounted)',
    ),
    runnerCpuRequest: setting(
      'KUBEGLUE_RUNNER_CPU_REQUEST',
      quantity,
      '100m',
      ['operator'],
      'CPU request of a runner Pod',
    ),
    runnerCpuLimit: setting(
      'KUBEGLUE_RUNNER_CPU_LIMIT',
      quantity,
      '1',
      ['operator'],
      'CPU limit of a runner Pod',
    ),
    runnerMemoryRequest: setting(
      'KUBEGLUE_RUNNER_MEMORY_REQUEST',
      quantity,
      '256Mi',
      ['operator'],
      'memory request of a runner Pod',
    ),
    runnerMemoryLimit: setting(
      'KUBEGLUE_RUNNER_MEMORY_LIMIT',
      quantity,
      '512Mi',
      ['operator'],
      'memory limit of a runner Pod (exceeding it: the run fails as OOMKilled)',
    ),
    runnerTmpSize: setting(
      'KUBEGLUE_RUNNER_TMP_SIZE',
      quantity,
      '256Mi',
      ['operator'],
      'size limit of the emptyDir a runner Pod gets at /tmp (its only writable path)',
    ),
    runnerUserId: setting(
      'KUBEGLUE_RUNNER_USER_ID',
      positiveInt,
      '65532',
      ['operator'],
      "numeric user (and group) id runner containers run as (the image's user); never 0",
    ),
    runnerTerminationGraceSeconds: setting(
      'KUBEGLUE_RUNNER_TERMINATION_GRACE_SECONDS',
      nonNegativeInt,
      '10',
      ['operator'],
      'a deleted runner Pod gets this long between SIGTERM and SIGKILL',
    ),
    internalUrl: setting(
      'KUBEGLUE_INTERNAL_URL',
      z.url().optional(),
      { operator: 'http://kubeglue-internal:8081' },
      ['operator', 'runner'],
      "base URL of the API's internal runner port, as runner Pods reach it (the operator hands it to each Pod; a runner Pod requires it)",
    ),
    runnerGatewayRelay: setting(
      'KUBEGLUE_RUNNER_GATEWAY_RELAY',
      hostPortOrEmpty,
      '',
      ['operator'],
      "host:port of the api's gateway relay as runner Pods reach it, for steps on private systems (empty: KUBEGLUE_INTERNAL_URL's host, port 8082)",
    ),
    defaultRunTimeoutMs: setting(
      'KUBEGLUE_DEFAULT_RUN_TIMEOUT_MS',
      positiveInt,
      String(DEFAULT_RUN_TIMEOUT_MS),
      ['operator'],
      "timeout of a run without options.timeout (the engine's default), from which the runner Pod's deadline is set",
    ),
    deadlineMarginSeconds: setting(
      'KUBEGLUE_RUNNER_DEADLINE_MARGIN_SECONDS',
      positiveInt,
      '60',
      ['operator'],
      "activeDeadlineSeconds of a runner Pod = the run's timeout + this (start-up and reporting)",
    ),
    pendingTimeoutMs: setting(
      'KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS',
      positiveInt,
      '300000',
      ['operator'],
      'a runner Pod that has not started after this long (image pull failing, unschedulable, …) fails its run',
    ),
    heartbeatStaleMs: setting(
      'KUBEGLUE_RUNNER_HEARTBEAT_STALE_MS',
      positiveInt,
      '90000',
      ['operator'],
      'a runner whose Pod is Running but that sent no heartbeat for this long is given up (node lost or runner hung): its Pod is deleted, a read-only run starts over, any other fails',
    ),
    cancelGraceMs: setting(
      'KUBEGLUE_CANCEL_GRACE_MS',
      nonNegativeInt,
      '30000',
      ['operator'],
      'after a cancel the runner gets this long to stop by itself (it learns it from its heartbeat), then its Pod is deleted',
    ),
    deleteSucceededPods: setting(
      'KUBEGLUE_DELETE_SUCCEEDED_PODS',
      bool,
      'true',
      ['operator'],
      'delete the runner Pod of a succeeded run as soon as the outcome is recorded',
    ),
    failedPodRetentionMs: setting(
      'KUBEGLUE_FAILED_POD_RETENTION_MS',
      nonNegativeInt,
      String(15 * 60 * 1000),
      ['operator'],
      'the runner Pod of a failed or cancelled run is kept this long for inspection (logs), then deleted',
    ),
    resyncMs: setting(
      'KUBEGLUE_OPERATOR_RESYNC_MS',
      positiveInt,
      String(5 * 60 * 1000),
      ['operator'],
      'every object is reconciled again this often even without a change (a safety net)',
    ),
    reconcileWorkers: setting(
      'KUBEGLUE_OPERATOR_WORKERS',
      positiveInt,
      '4',
      ['operator'],
      'ToolRuns reconciled at once (admissions are decided one at a time whatever this is)',
    ),
  },
);
