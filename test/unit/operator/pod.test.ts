import { describe, expect, it } from 'vitest';
import { defaultOperatorSettings, loadOperatorSettings, SETTINGS } from '../../../config/config.ts';
import type { ToolRunResource } from '../../../contract/resources/kinds.ts';
import { RUN_TOKEN_SECRET_KEY } from '../../../contract/wire/runner.ts';
import type { Pod } from '../../../kube/types.ts';
import {
  activeDeadlineSeconds,
  buildRunnerPod,
  TERMINATION_MESSAGE_PATH,
} from '../../../operator/toolrun/pod.ts';
import { restrictedViolations } from '../../support/pod-security.ts';

function toolRun(overrides: Partial<ToolRunResource['spec']> = {}): ToolRunResource {
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolRun',
    metadata: { name: 'run-abc-0123456789', namespace: 'team-a', uid: 'uid-1', generation: 1 },
    spec: {
      runId: 'Run ABC',
      tool: { id: 'My Tool', steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }] },
      requestSource: 'api',
      executionMode: 'prod',
      ...overrides,
    } as ToolRunResource['spec'],
  };
}

const settings = defaultOperatorSettings();
const names = { podName: 'run-abc-0123456789-a1', tokenSecretName: 'run-abc-0123456789-token' };

describe('the runner Pod', () => {
  const pod = buildRunnerPod(toolRun(), 1, names, settings);
  const container = pod.spec.containers[0]!;
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));

  it('passes the Pod Security "restricted" profile', () => {
    expect(restrictedViolations(pod)).toEqual([]);
  });

  it('the restricted check itself catches what it should', () => {
    const bad: Pod = structuredClone(pod);
    const c = bad.spec.containers[0]!;
    c.securityContext = { privileged: true, capabilities: { add: ['SYS_ADMIN'] } };
    bad.spec.securityContext = {};
    (bad.spec as unknown as Record<string, unknown>).hostNetwork = true;
    (bad.spec.volumes as unknown[]).push({ name: 'host', hostPath: { path: '/' } });
    expect(restrictedViolations(bad)).toEqual(
      expect.arrayContaining([
        'spec.hostNetwork',
        'volume host: hostPath',
        'container runner: privileged',
        'container runner: allowPrivilegeEscalation must be false',
        'container runner: capabilities.drop must include ALL',
        'container runner: capabilities.add SYS_ADMIN',
        'container runner: runAsNonRoot must be true',
        'container runner: seccompProfile',
      ]),
    );
  });

  it.each([
    ['restartPolicy', pod.spec.restartPolicy, 'Never'],
    ['automountServiceAccountToken', pod.spec.automountServiceAccountToken, false],
    ['enableServiceLinks', pod.spec.enableServiceLinks, false],
    ['readOnlyRootFilesystem', container.securityContext?.readOnlyRootFilesystem, true],
    ['runAsUser (numeric)', container.securityContext?.runAsUser, 65532],
    ['args', container.args, ['runner']],
    ['image', container.image, settings.runnerImage],
    ['terminationMessagePolicy', container.terminationMessagePolicy, 'FallbackToLogsOnError'],
    ['terminationMessagePath', container.terminationMessagePath, TERMINATION_MESSAGE_PATH],
    ['the /tmp mount', container.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]],
    ['the /tmp volume', pod.spec.volumes, [{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }]],
    ['requests', container.resources?.requests, { cpu: '100m', memory: '256Mi' }],
    ['limits', container.resources?.limits, { cpu: '1', memory: '512Mi' }],
  ])('%s', (_name, actual, expected) => {
    expect(actual).toEqual(expected);
  });

  it('is owned by its ToolRun and labelled with run id, tool id and component', () => {
    expect(pod.metadata).toMatchObject({
      name: names.podName,
      namespace: 'team-a',
      ownerReferences: [
        {
          apiVersion: 'kubeglue.dev/v1alpha1',
          kind: 'ToolRun',
          name: 'run-abc-0123456789',
          uid: 'uid-1',
          controller: true,
        },
      ],
      annotations: { 'kubeglue.dev/run-id': 'Run ABC' },
    });
    expect(pod.metadata.labels).toMatchObject({
      'app.kubernetes.io/component': 'runner',
      'kubeglue.dev/toolrun': 'run-abc-0123456789',
      'kubeglue.dev/attempt': '1',
    });
    // Label values hold only derived forms of ids that are not valid label values.
    expect(pod.metadata.labels?.['kubeglue.dev/run-id']).toMatch(/^run-abc-[0-9a-f]{10}$/);
    expect(pod.metadata.labels?.['kubeglue.dev/tool-id']).toMatch(/^my-tool-[0-9a-f]{10}$/);
  });

  it('passes the runner its run through the runner settings, the token only by secretKeyRef', () => {
    expect(env[SETTINGS.tree.runToken.name]).toEqual({
      name: SETTINGS.tree.runToken.name,
      valueFrom: { secretKeyRef: { name: names.tokenSecretName, key: RUN_TOKEN_SECRET_KEY } },
    });
    expect(env[SETTINGS.tree.runId.name]?.value).toBe('Run ABC');
    expect(env[SETTINGS.tree.runAttempt.name]?.value).toBe('1');
    expect(env[SETTINGS.tree.internalUrl.name]?.value).toBe(settings.internalUrl);
    expect(env[SETTINGS.tree.terminationMessagePath.name]?.value).toBe(TERMINATION_MESSAGE_PATH);
    expect(env.KUBEGLUE_SANDBOX_MEMORY_MB?.value).toBe('128');
    expect(env.KUBEGLUE_EGRESS_PRIVATE?.value).toBe('deny');
    expect(env.KUBEGLUE_EGRESS_ALLOW).toBeUndefined();
    // The gateway relay: the internal Service's host on the chart's relay port unless set.
    expect(env.KUBEGLUE_GATEWAY_RELAY?.value).toBe('kubeglue-internal:8082');
    for (const variable of container.env ?? []) {
      if (variable.name !== SETTINGS.tree.runToken.name) expect(variable.valueFrom).toBeUndefined();
    }
  });

  it.each([
    [undefined, 300 + 60],
    [1_000, 1 + 60],
    [1_500, 2 + 60],
    [3_600_000, 3_600 + 60],
  ])('activeDeadlineSeconds for timeout %s ms is %s', (timeout, expected) => {
    const run = toolRun(timeout === undefined ? {} : { options: { timeout } });
    expect(activeDeadlineSeconds(run, settings)).toBe(expected);
    expect(buildRunnerPod(run, 1, names, settings).spec.activeDeadlineSeconds).toBe(expected);
  });

  it('follows the settings: image, pull policy and secrets, user, egress lists, service account', () => {
    const custom = buildRunnerPod(
      toolRun(),
      2,
      { ...names, podName: 'x-a2' },
      {
        ...settings,
        runnerImage: 'registry.example/kubeglue:2',
        runnerImagePullPolicy: 'Always',
        runnerImagePullSecrets: ['regcred'],
        runnerUserId: 4242,
        runnerServiceAccount: 'runner',
        egress: { ...settings.egress, allow: ['10.1.0.0/16'], deny: ['internal.example'] },
        runnerGatewayRelay: 'relay.kubeglue.svc:9000',
      },
    );
    expect(custom.spec.containers[0]).toMatchObject({
      image: 'registry.example/kubeglue:2',
      imagePullPolicy: 'Always',
    });
    expect(custom.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(custom.spec.serviceAccountName).toBe('runner');
    expect(custom.spec.automountServiceAccountToken).toBe(false);
    expect(custom.spec.securityContext).toMatchObject({ runAsUser: 4242, runAsNonRoot: true });
    expect(custom.metadata.labels?.['kubeglue.dev/attempt']).toBe('2');
    const customEnv = Object.fromEntries(
      (custom.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]),
    );
    expect(customEnv).toMatchObject({
      KUBEGLUE_EGRESS_ALLOW: '10.1.0.0/16',
      KUBEGLUE_EGRESS_DENY: 'internal.example',
      KUBEGLUE_GATEWAY_RELAY: 'relay.kubeglue.svc:9000',
      [SETTINGS.tree.runAttempt.name]: '2',
    });
    expect(restrictedViolations(custom)).toEqual([]);
  });
});

describe('runner Pod placement and security settings', () => {
  /** The Pod the operator builds with these variables set, parsed as at its start. */
  const podWith = (env: Record<string, string>) =>
    buildRunnerPod(toolRun(), 1, names, loadOperatorSettings(env));

  it('places, labels and annotates runner Pods as the settings say', () => {
    const pod = podWith({
      KUBEGLUE_RUNNER_NODE_SELECTOR: '{"pool":"runners"}',
      KUBEGLUE_RUNNER_TOLERATIONS:
        '[{"key":"dedicated","operator":"Equal","value":"runners","effect":"NoSchedule"}]',
      KUBEGLUE_RUNNER_AFFINITY:
        '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}',
      KUBEGLUE_RUNNER_PRIORITY_CLASS_NAME: 'batch-low',
      KUBEGLUE_RUNNER_LABELS: '{"team":"integrations"}',
      KUBEGLUE_RUNNER_ANNOTATIONS: '{"sidecar.istio.io/inject":"false"}',
    });
    expect(pod.spec).toMatchObject({
      nodeSelector: { pool: 'runners' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'runners', effect: 'NoSchedule' }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: expect.any(Object) } },
      priorityClassName: 'batch-low',
    });
    expect(pod.metadata.labels).toMatchObject({
      team: 'integrations',
      'app.kubernetes.io/component': 'runner',
    });
    expect(pod.metadata.annotations).toEqual({
      'sidecar.istio.io/inject': 'false',
      'kubeglue.dev/run-id': 'Run ABC',
    });
    expect(restrictedViolations(pod)).toEqual([]);
  });

  it('leaves placement out by default', () => {
    const pod = podWith({});
    for (const field of ['nodeSelector', 'tolerations', 'affinity', 'priorityClassName'])
      expect(pod.spec, field).not.toHaveProperty(field);
  });

  it('keeps the security defaults, and adjusts only the fields an override names', () => {
    const defaults = podWith({});
    const pod = podWith({
      KUBEGLUE_RUNNER_POD_SECURITY_CONTEXT:
        '{"runAsUser":null,"runAsGroup":null,"fsGroup":1000700000,"seccompProfile":{"type":"Localhost","localhostProfile":"runner.json"}}',
      KUBEGLUE_RUNNER_SECURITY_CONTEXT: '{"runAsUser":null,"seLinuxOptions":{"level":"s0:c26,c5"}}',
    });
    // OpenShift picks the user: the fields are gone, the rest of the restricted profile stays.
    expect(pod.spec.securityContext).toEqual({
      runAsNonRoot: true,
      fsGroup: 1000700000,
      seccompProfile: { type: 'Localhost', localhostProfile: 'runner.json' },
    });
    expect(pod.spec.containers[0]?.securityContext).toEqual({
      ...defaults.spec.containers[0]?.securityContext,
      runAsUser: undefined,
      seLinuxOptions: { level: 's0:c26,c5' },
    });
    expect(pod.spec.containers[0]?.securityContext).not.toHaveProperty('runAsUser');
    expect(restrictedViolations(pod)).toEqual([]);
    expect(defaults.spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('refuses at start what would loosen the profile, break the selectors or is no JSON, naming the variable', () => {
    for (const [name, value, problem] of [
      ['KUBEGLUE_RUNNER_SECURITY_CONTEXT', '{"privileged":true}', 'privileged'],
      ['KUBEGLUE_RUNNER_SECURITY_CONTEXT', '{"allowPrivilegeEscalation":true}', 'allowPrivilegeEscalation'],
      ['KUBEGLUE_RUNNER_SECURITY_CONTEXT', '{"readOnlyRootFilesystem":false}', 'readOnlyRootFilesystem'],
      ['KUBEGLUE_RUNNER_POD_SECURITY_CONTEXT', '{"runAsUser":0}', 'runAsUser'],
      ['KUBEGLUE_RUNNER_POD_SECURITY_CONTEXT', '{"runAsNonRoot":false}', 'runAsNonRoot'],
      ['KUBEGLUE_RUNNER_POD_SECURITY_CONTEXT', '{"seccompProfile":{"type":"Unconfined"}}', 'seccompProfile'],
      ['KUBEGLUE_RUNNER_LABELS', '{"app.kubernetes.io/component":"x"}', 'set by kubeglue'],
      ['KUBEGLUE_RUNNER_LABELS', '{"kubeglue.dev/run-id":"x"}', 'set by kubeglue'],
      ['KUBEGLUE_RUNNER_LABELS', '{"team":"not a value"}', 'label value'],
      ['KUBEGLUE_RUNNER_TOLERATIONS', '[{"operator":"Sometimes"}]', 'operator'],
      ['KUBEGLUE_RUNNER_AFFINITY', '{"nodeAfinity":{}}', 'nodeAfinity'],
      ['KUBEGLUE_RUNNER_NODE_SELECTOR', 'pool=runners', 'must be JSON'],
    ] as const) {
      expect(() => loadOperatorSettings({ [name]: value }), `${name}=${value}`).toThrow(
        new RegExp(`${name}.*${problem}`),
      );
    }
  });
});
