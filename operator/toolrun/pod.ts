/**
 * The runner Pod of one attempt of a ToolRun: pure, from the ToolRun and the operator's settings. The
 * Pod passes the Pod Security "restricted" profile: non-root with a numeric user, no privilege
 * escalation, every capability dropped, RuntimeDefault seccomp, read-only root filesystem with an
 * emptyDir at /tmp, no service-account token and no Service links. The settings place it (nodeSelector,
 * tolerations, affinity, priority), label and annotate it, and may adjust identities and profiles of its
 * security contexts (config/pod-shapes.ts), never loosen them.
 */

import { type OperatorSettings, SETTINGS, type Setting, settingText } from '../../config/config.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import { RUN_ID_KEY } from '../../contract/resources/labels.ts';
import { RUN_TOKEN_SECRET_KEY } from '../../contract/wire/runner.ts';
import type { EnvVar, Pod } from '../../kube/types.ts';
import { runnerLabels, toolRunOwner } from '../launchers/launcher.ts';
import type { PodNames } from '../launchers/pod.ts';

export const RUNNER_CONTAINER = 'runner';
export const TERMINATION_MESSAGE_PATH = '/dev/termination-log';
const TMP_VOLUME = 'tmp';

/** The settings the Pod builder reads. */
export type PodSettings = Pick<
  OperatorSettings,
  | 'runnerImage'
  | 'runnerImagePullPolicy'
  | 'runnerImagePullSecrets'
  | 'runnerServiceAccount'
  | 'runnerCpuRequest'
  | 'runnerCpuLimit'
  | 'runnerMemoryRequest'
  | 'runnerMemoryLimit'
  | 'runnerTmpSize'
  | 'runnerUserId'
  | 'runnerTerminationGraceSeconds'
  | 'runnerNodeSelector'
  | 'runnerTolerations'
  | 'runnerAffinity'
  | 'runnerPriorityClassName'
  | 'runnerLabels'
  | 'runnerAnnotations'
  | 'runnerPodSecurityContext'
  | 'runnerSecurityContext'
  | 'internalUrl'
  | 'runnerGatewayRelay'
  | 'sandboxMemoryMb'
  | 'sandboxTimeoutMs'
  | 'maxStepDataBytes'
  | 'maxResultBytes'
  | 'maxRecordingBytes'
  | 'egress'
  | 'defaultRunTimeoutMs'
  | 'deadlineMarginSeconds'
>;

/** The run's timeout in milliseconds: options.timeout, else the engine's default. */
export function runTimeoutMs(
  toolRun: ToolRunResource,
  settings: Pick<PodSettings, 'defaultRunTimeoutMs'>,
): number {
  return toolRun.spec.options?.timeout ?? settings.defaultRunTimeoutMs;
}

/** activeDeadlineSeconds: the run's timeout plus a margin for start-up and reporting. */
export function activeDeadlineSeconds(
  toolRun: ToolRunResource,
  settings: Pick<PodSettings, 'defaultRunTimeoutMs' | 'deadlineMarginSeconds'>,
): number {
  return Math.ceil(runTimeoutMs(toolRun, settings) / 1000) + settings.deadlineMarginSeconds;
}

/** The relay port the chart gives the api (values.yaml api.gatewayRelayPort). */
const DEFAULT_RELAY_PORT = 8082;

/** Where runner Pods dial the gateway relay: the setting, else the internal Service's host. */
export function runnerRelayAddress(s: Pick<PodSettings, 'internalUrl' | 'runnerGatewayRelay'>): string {
  return s.runnerGatewayRelay || `${new URL(s.internalUrl).hostname}:${DEFAULT_RELAY_PORT}`;
}

const { tree } = SETTINGS;

/** A setting handed to the runner Pod, as its environment variable. */
function passed(setting: Setting, value: unknown): EnvVar {
  return { name: setting.name, value: settingText(value) };
}

function runnerEnv(toolRun: ToolRunResource, attempt: number, names: PodNames, s: PodSettings): EnvVar[] {
  const env: EnvVar[] = [
    { name: tree.internalUrl.name, value: s.internalUrl },
    { name: tree.runId.name, value: toolRun.spec.runId },
    { name: tree.runAttempt.name, value: String(attempt) },
    {
      name: tree.runToken.name,
      valueFrom: { secretKeyRef: { name: names.tokenSecretName, key: RUN_TOKEN_SECRET_KEY } },
    },
    { name: tree.terminationMessagePath.name, value: TERMINATION_MESSAGE_PATH },
    // The engine's settings, as the operator has them (config/engine.ts).
    passed(tree.sandboxMemoryMb, s.sandboxMemoryMb),
    passed(tree.sandboxTimeoutMs, s.sandboxTimeoutMs),
    passed(tree.maxStepDataBytes, s.maxStepDataBytes),
    passed(tree.maxResultBytes, s.maxResultBytes),
    passed(tree.maxRecordingBytes, s.maxRecordingBytes),
    passed(tree.egress.privateDefault, s.egress.privateDefault),
    passed(tree.gatewayRelay, runnerRelayAddress(s)),
  ];
  if (s.egress.allow.length > 0) env.push(passed(tree.egress.allow, s.egress.allow));
  if (s.egress.deny.length > 0) env.push(passed(tree.egress.deny, s.egress.deny));
  return env;
}

/** `base` with `override`'s fields; a null field is removed (left for the platform to set). */
function adjusted<T extends object>(base: T, override: Record<string, unknown>): T {
  const merged: Record<string, unknown> = { ...base, ...override };
  for (const [key, value] of Object.entries(merged)) if (value === null) delete merged[key];
  return merged as T;
}

/** Present only when set: an empty nodeSelector or list is left out of the Pod. */
function placement(s: PodSettings): Partial<Pod['spec']> {
  return {
    ...(Object.keys(s.runnerNodeSelector).length > 0 ? { nodeSelector: s.runnerNodeSelector } : {}),
    ...(s.runnerTolerations.length > 0 ? { tolerations: s.runnerTolerations } : {}),
    ...(Object.keys(s.runnerAffinity).length > 0 ? { affinity: s.runnerAffinity } : {}),
    ...(s.runnerPriorityClassName ? { priorityClassName: s.runnerPriorityClassName } : {}),
  };
}

export function buildRunnerPod(
  toolRun: ToolRunResource,
  attempt: number,
  names: PodNames,
  settings: PodSettings,
): Pod {
  const user = settings.runnerUserId;
  const seccompProfile = { type: 'RuntimeDefault' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: names.podName,
      ...(toolRun.metadata.namespace ? { namespace: toolRun.metadata.namespace } : {}),
      // kubeglue's own last: the settings refuse those keys, and the selectors must hold regardless.
      labels: { ...settings.runnerLabels, ...runnerLabels(toolRun, attempt) },
      annotations: { ...settings.runnerAnnotations, [RUN_ID_KEY]: toolRun.spec.runId },
      ownerReferences: [toolRunOwner(toolRun)],
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      ...(settings.runnerServiceAccount ? { serviceAccountName: settings.runnerServiceAccount } : {}),
      ...(settings.runnerImagePullSecrets.length > 0
        ? { imagePullSecrets: settings.runnerImagePullSecrets.map((name) => ({ name })) }
        : {}),
      activeDeadlineSeconds: activeDeadlineSeconds(toolRun, settings),
      terminationGracePeriodSeconds: settings.runnerTerminationGraceSeconds,
      ...placement(settings),
      securityContext: adjusted(
        { runAsNonRoot: true, runAsUser: user, runAsGroup: user, seccompProfile },
        settings.runnerPodSecurityContext,
      ),
      containers: [
        {
          name: RUNNER_CONTAINER,
          image: settings.runnerImage,
          imagePullPolicy: settings.runnerImagePullPolicy,
          args: ['runner'],
          env: runnerEnv(toolRun, attempt, names, settings),
          resources: {
            requests: { cpu: settings.runnerCpuRequest, memory: settings.runnerMemoryRequest },
            limits: { cpu: settings.runnerCpuLimit, memory: settings.runnerMemoryLimit },
          },
          securityContext: adjusted(
            {
              runAsNonRoot: true,
              runAsUser: user,
              runAsGroup: user,
              readOnlyRootFilesystem: true,
              allowPrivilegeEscalation: false,
              privileged: false,
              capabilities: { drop: ['ALL'] },
              seccompProfile,
            },
            settings.runnerSecurityContext,
          ),
          volumeMounts: [{ name: TMP_VOLUME, mountPath: '/tmp' }],
          terminationMessagePath: TERMINATION_MESSAGE_PATH,
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
      volumes: [{ name: TMP_VOLUME, emptyDir: { sizeLimit: settings.runnerTmpSize } }],
    },
  };
}
