/**
 * Tools and Systems tell what happened to them in Events, as `kubectl describe` shows them: the Tool and
 * System controllers run with the operator's RBAC identity against a real kube-apiserver and record an
 * Event when a Ready condition changes (Warning with the reason and message when it turns False, Normal
 * when it turns True), never one per resync.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SystemReason, ToolReason } from '../../../contract/reasons.ts';
import type { SystemResource, ToolResource } from '../../../contract/resources/kinds.ts';
import {
  type ClusterTransport,
  createClusterResources,
  type ResourceClients,
} from '../../../kube/resources/index.ts';
import { ClusterSecretStore } from '../../../kube/secrets/cluster.ts';
import type { Event, Secret } from '../../../kube/types.ts';
import { createEventRecorder } from '../../../operator/events.ts';
import { SystemController } from '../../../operator/system/controller.ts';
import { ToolController } from '../../../operator/tool/controller.ts';
import { OPERATOR_KINDS, type OperatorKinds, operatorCluster, waitFor } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

describeKube('Events of Tools and Systems on Kubernetes', () => {
  const bed = useKubeTestBed('operator-events', { crds: true });
  let admin: ResourceClients<OperatorKinds>;
  let operatorTransport: ClusterTransport;
  let tools: ToolController;
  let systems: SystemController;

  /** The Events of one object, oldest first, as `kubectl get events` lists them. */
  const eventsOf = async (kind: string, name: string) =>
    (await admin.events.list()).items
      .filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name)
      .sort((a, b) => (a.firstTimestamp ?? '').localeCompare(b.firstTimestamp ?? ''));
  const eventsWhen = (kind: string, name: string, what: string, ok: (events: Event[]) => boolean) =>
    waitFor(what, () => eventsOf(kind, name), ok);

  beforeAll(async () => {
    admin = createClusterResources<OperatorKinds>(bed.transport, {
      namespace: bed.namespace.name,
      kinds: OPERATOR_KINDS,
    });
    // Recording Events must be within the operator's Roles.
    const { transport, resources: operator } = await operatorCluster(bed);
    operatorTransport = transport;
    const events = createEventRecorder({ sink: operator.events, log: (line) => console.log(line) });
    // A short resync: every object is reconciled again and again while the tests run.
    tools = new ToolController({ tools: operator.tools, systems: operator.systems, events, resyncMs: 300 });
    systems = new SystemController({
      systems: operator.systems,
      secrets: new ClusterSecretStore({ secrets: operator.secrets, namespace: bed.namespace.name }),
      secretWatch: operator.secrets,
      events,
      resyncMs: 300,
    });
    await tools.start();
    await systems.start();
  }, 60_000);

  afterAll(async () => {
    await tools?.stop();
    await systems?.stop();
    await operatorTransport?.close();
  });

  it('a broken Tool has a Warning with the reason and the problem; fixed, a Normal one', async () => {
    const created = await admin.tools.create({
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'Tool',
      metadata: { name: 'broken' },
      spec: {
        steps: [{ id: 'x', config: { type: 'transform', transformCode: '(s) => {' } }],
      } as ToolResource['spec'],
    });
    const [warning] = await eventsWhen('Tool', 'broken', 'a Warning', (e) => e.length > 0);
    expect(warning).toMatchObject({ type: 'Warning', reason: ToolReason.CompileError, count: 1 });
    expect(warning?.message).toContain('steps[0] (x).config.transformCode');
    expect(warning?.source?.component).toBe('kubeglue-operator');

    const described = await bed.kubectl('describe', 'tool', 'broken');
    expect(described).not.toMatch(/Events:\s+<none>/);
    expect(described).toMatch(/Warning\s+CompileError\s+.*kubeglue-operator/);

    // Resyncs come and go: the Tool is checked again, nothing changed, nothing more is said.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await eventsOf('Tool', 'broken')).map((e) => [e.reason, e.count])).toEqual([
      [ToolReason.CompileError, 1],
    ]);

    const current = (await admin.tools.get('broken')) ?? created;
    await admin.tools.update({
      ...current,
      spec: {
        steps: [{ id: 'x', config: { type: 'transform', transformCode: '(s) => s' } }],
      } as ToolResource['spec'],
    });
    const after = await eventsWhen('Tool', 'broken', 'a Normal event', (e) => e.length > 1);
    expect(after.map((e) => [e.type, e.reason])).toEqual([
      ['Warning', ToolReason.CompileError],
      ['Normal', ToolReason.Valid],
    ]);
    expect(await bed.kubectl('describe', 'tool', 'broken')).toMatch(/Normal\s+Valid\s+.*kubeglue-operator/);
  });

  it('a System whose Secret is missing has a Warning naming the Secret; created, a Normal one', async () => {
    await admin.systems.create({
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'System',
      metadata: { name: 'crm-prod' },
      spec: {
        id: 'crm',
        environment: 'prod',
        url: 'https://crm.example',
        authType: 'basic',
        credentialsSecretRef: { name: 'crm-creds' },
      } as SystemResource['spec'],
    });
    const [warning] = await eventsWhen('System', 'crm-prod', 'a Warning', (e) => e.length > 0);
    expect(warning).toMatchObject({ type: 'Warning', reason: SystemReason.SecretNotFound });
    expect(warning?.message).toContain("'crm-creds' does not exist");
    expect(await bed.kubectl('describe', 'system', 'crm-prod')).toMatch(/Warning\s+SecretNotFound\s+/);

    await admin.secrets.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'crm-creds' },
      stringData: { username: 'svc', password: 'hunter2' },
    } as Secret);
    const after = await eventsWhen('System', 'crm-prod', 'a Normal event', (e) => e.length > 1);
    expect(after.map((e) => [e.type, e.reason])).toEqual([
      ['Warning', SystemReason.SecretNotFound],
      ['Normal', SystemReason.CredentialsReady],
    ]);
    // Key names at most, never a value.
    expect(JSON.stringify(after)).not.toContain('hunter2');
  });
});
