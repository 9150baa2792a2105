import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  SystemConditionType,
  SystemLinkedReason,
  SystemReason,
  ToolReason,
} from '../../../contract/reasons.ts';
import type { SystemResource, ToolResource } from '../../../contract/resources/kinds.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import {
  createClusterResources,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type ResourceClients,
  SECRET_KIND,
} from '../../../kube/resources/index.ts';
import { ClusterSecretStore } from '../../../kube/secrets/cluster.ts';
import type { Secret } from '../../../kube/types.ts';
import { SystemController } from '../../../operator/system/controller.ts';
import { ToolController } from '../../../operator/tool/controller.ts';
import { waitFor } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

type Kinds = KubeglueKinds & { secrets: Secret };

describeKube('the Tool and System controllers on Kubernetes', () => {
  const bed = useKubeTestBed('operator-resources', { crds: true });
  let resources: ResourceClients<Kinds>;
  let tools: ToolController;
  let systems: SystemController;

  beforeAll(async () => {
    resources = createClusterResources<Kinds>(bed.transport, {
      namespace: bed.namespace.name,
      kinds: { ...KUBEGLUE_KIND_SPECS, secrets: SECRET_KIND },
    });
    tools = new ToolController({ tools: resources.tools, systems: resources.systems });
    systems = new SystemController({
      systems: resources.systems,
      secrets: new ClusterSecretStore({ secrets: resources.secrets, namespace: bed.namespace.name }),
      secretWatch: resources.secrets,
    });
    await tools.start();
    await systems.start();
  });

  afterAll(async () => {
    await tools?.stop();
    await systems?.stop();
  });

  const ready = (object: { status?: { conditions?: Condition[] | undefined } } | undefined, type = 'Ready') =>
    object?.status?.conditions?.find((c) => c.type === type);

  function tool(name: string, steps: unknown[], extra: Record<string, unknown> = {}): ToolResource {
    return {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'Tool',
      metadata: { name },
      spec: { steps, ...extra } as ToolResource['spec'],
    };
  }

  function system(name: string, spec: Partial<SystemResource['spec']>): SystemResource {
    return {
      apiVersion: 'kubeglue.dev/v1alpha1',
      kind: 'System',
      metadata: { name },
      spec: { id: 'crm', environment: 'prod', ...spec } as SystemResource['spec'],
    };
  }

  const secret = (name: string, data: Record<string, string>): Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });

  /** The Tool (or System) once `ok` says it is, waiting for `what`. */
  const toolWhen = (name: string, what: string, ok: (tool: ToolResource | undefined) => boolean) =>
    waitFor(what, () => resources.tools.get(name), ok);
  const systemWhen = (name: string, what: string, ok: (system: SystemResource | undefined) => boolean) =>
    waitFor(what, () => resources.systems.get(name), ok);

  it('a valid Tool is Ready with its step count and observedGeneration', async () => {
    await resources.tools.create(
      tool('shape', [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }]),
    );
    const got = await toolWhen('shape', 'Ready', (t) => ready(t) !== undefined);
    expect(ready(got)).toMatchObject({ status: 'True', reason: ToolReason.Valid, observedGeneration: 1 });
    expect(got?.status).toMatchObject({ observedGeneration: 1, stepCount: 1 });
  });

  it('lists every problem of an invalid Tool, and becomes Ready when fixed', async () => {
    const created = await resources.tools.create(
      tool(
        'broken',
        [
          { id: 'a', config: { type: 'transform', transformCode: '(s) => {' } },
          { id: 'b', config: { type: 'request', url: '/x', systemId: 'nowhere' } },
        ],
        { outputSchema: { type: 'nonsense' } },
      ),
    );
    const got = await toolWhen('broken', 'Ready=False', (t) => ready(t)?.status === 'False');
    expect(ready(got)?.reason).toBe(ToolReason.InvalidTool);
    expect(ready(got)?.message).toMatch(/^3 problems: /);
    expect(ready(got)?.message).toContain('steps[0] (a).config.transformCode');
    expect(ready(got)?.message).toContain("steps[1] (b).config.systemId: system 'nowhere' does not exist");
    expect(ready(got)?.message).toContain('outputSchema: not a valid JSON Schema');
    const { status: _status, ...rest } = got ?? created;
    await resources.tools.update({
      ...rest,
      spec: {
        steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => 1' } }],
      } as ToolResource['spec'],
    });
    const fixed = await toolWhen('broken', 'Ready', (t) => ready(t)?.status === 'True');
    expect(fixed?.status).toMatchObject({ observedGeneration: 2, stepCount: 1 });
  });

  it('re-checks a Tool when the System it uses appears and goes', async () => {
    await resources.tools.create(
      tool('uses-billing', [{ id: 'a', config: { url: '/x', systemId: 'billing' } }]),
    );
    const missing = await toolWhen('uses-billing', 'UnknownSystem', (t) => ready(t) !== undefined);
    expect(ready(missing)).toMatchObject({ status: 'False', reason: ToolReason.UnknownSystem });
    await resources.systems.create(system('billing-prod', { id: 'billing', url: 'https://billing.example' }));
    await toolWhen('uses-billing', 'Ready', (t) => ready(t)?.status === 'True');
    await resources.systems.delete('billing-prod');
    await toolWhen('uses-billing', 'not Ready', (t) => ready(t)?.reason === ToolReason.UnknownSystem);
  });

  it('refuses a Tool whose step speaks MSSQL or MongoDB (UnsupportedProtocol), naming the protocols steps speak', async () => {
    await resources.systems.create(
      system('orders-prod', { id: 'orders', url: 'mongodb://db.example:27017/shop' }),
    );
    await resources.tools.create(
      tool('uses-stores', [
        { id: 'a', config: { url: 'mssql://sql.example/sales', body: 'SELECT 1' } },
        { id: 'b', config: { url: '/orders', systemId: 'orders' } },
      ]),
    );
    const got = await toolWhen('uses-stores', 'Ready=False', (t) => ready(t)?.status === 'False');
    expect(ready(got)?.reason).toBe(ToolReason.UnsupportedProtocol);
    expect(ready(got)?.message).toContain(
      'steps[0] (a).config.url: MSSQL (mssql://) is a data store no step can use yet',
    );
    expect(ready(got)?.message).toContain(
      "steps[1] (b).config.systemId: system 'orders': MongoDB (mongodb://) is a data store no step can use yet",
    );
    expect(ready(got)?.message).toContain('steps speak http, https, postgres');
  });

  it('a System is Ready when its Secret fits the auth type, and follows the Secret', async () => {
    await resources.systems.create(
      system('crm-prod', {
        authType: 'basic',
        credentialsSecretRef: { name: 'crm-creds' },
        url: 'https://crm.example',
      }),
    );
    const missing = await systemWhen('crm-prod', 'SecretNotFound', (s) => ready(s) !== undefined);
    expect(ready(missing)).toMatchObject({ status: 'False', reason: SystemReason.SecretNotFound });

    await resources.secrets.create(secret('crm-creds', { username: 'svc', passwort: 'hunter2-typo' }));
    const invalid = await systemWhen(
      'crm-prod',
      'CredentialsInvalid',
      (s) => ready(s)?.reason === SystemReason.CredentialsInvalid,
    );
    expect(ready(invalid)?.message).toContain('password: missing');
    expect(JSON.stringify(invalid?.status)).not.toContain('hunter2');
    expect(JSON.stringify(invalid?.status)).not.toContain('svc');

    const current = await resources.secrets.get('crm-creds');
    await resources.secrets.update({
      ...(current as Secret),
      data: secret('x', { username: 'svc', password: 'hunter2' }).data ?? {},
    });
    const fixed = await systemWhen('crm-prod', 'Ready', (s) => ready(s)?.status === 'True');
    expect(ready(fixed)?.reason).toBe(SystemReason.CredentialsReady);
    expect(ready(fixed, SystemConditionType.EnvironmentsLinked)).toMatchObject({
      status: 'False',
      reason: SystemLinkedReason.SingleEnvironment,
    });
  });

  it('links the dev and prod objects of one system id', async () => {
    await resources.systems.create(system('crm-dev', { environment: 'dev', url: 'https://dev.crm.example' }));
    const dev = await systemWhen(
      'crm-dev',
      'linked',
      (s) => ready(s, SystemConditionType.EnvironmentsLinked)?.status === 'True',
    );
    expect(ready(dev, SystemConditionType.EnvironmentsLinked)?.message).toBe(
      "The prod environment of system 'crm' is System crm-prod",
    );
    expect(ready(dev)).toMatchObject({ status: 'True', reason: SystemReason.NoCredentialsNeeded });
    const prod = await systemWhen(
      'crm-prod',
      'linked',
      (s) => ready(s, SystemConditionType.EnvironmentsLinked)?.status === 'True',
    );
    expect(ready(prod, SystemConditionType.EnvironmentsLinked)?.message).toContain('is System crm-dev');
  });

  it('writes status only when something changed', async () => {
    const before = await resources.tools.get('shape');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await tools.idle();
    expect((await resources.tools.get('shape'))?.metadata.resourceVersion).toBe(
      before?.metadata.resourceVersion,
    );
  });
});
