import { describe, expect, it } from 'vitest';
import { SystemLinkedReason, SystemReason, ToolReason } from '../../../contract/reasons.ts';
import type { SystemResource, ToolResource } from '../../../contract/resources/kinds.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import { decideSystem, type SystemObservation } from '../../../operator/system/reconcile.ts';
import { decideTool, problemKind } from '../../../operator/tool/reconcile.ts';

const NOW = new Date('2026-03-01T10:00:00.000Z');

function tool(status?: ToolResource['status'], generation = 1): ToolResource {
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'Tool',
    metadata: { name: 't', generation },
    spec: {
      steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }],
    } as ToolResource['spec'],
    ...(status ? { status } : {}),
  };
}

const ready = (conditions: Condition[] | undefined) => conditions?.find((c) => c.type === 'Ready');

describe('decideTool', () => {
  it.each([
    ["steps[1] (b).config.systemId: system 'x' does not exist", ToolReason.UnknownSystem],
    ['inputSchema: not a valid JSON Schema: bad', ToolReason.InvalidSchema],
    ['steps[0] (a).config.pagination: pageSize must be positive', ToolReason.InvalidPagination],
    ['steps[0] (a).config.transformCode: Unexpected token', ToolReason.CompileError],
    ['steps[0] (a).config.url: unterminated <<', ToolReason.CompileError],
    [
      'steps[0] (a).config.url: MSSQL (mssql://) is a data store no step can use yet; steps speak http, https',
      ToolReason.UnsupportedProtocol,
    ],
    [
      "steps[0] (a).config.url: unsupported URL scheme 'gopher:': steps speak http, https",
      ToolReason.UnsupportedProtocol,
    ],
    [
      "steps[0] (a).config.systemId: system 'orders': MongoDB (mongodb://) is a data store no step can use yet; steps speak http",
      ToolReason.UnsupportedProtocol,
    ],
  ])('classifies %s as %s', (problem, reason) => {
    expect(problemKind(problem)).toBe(reason);
    const { patch } = decideTool({ now: NOW, tool: tool(), problems: [problem] });
    expect(ready(patch?.conditions)).toMatchObject({
      status: 'False',
      reason,
      message: `1 problem: ${problem}`,
    });
  });

  it('a sound tool using a System that is not Ready is SystemNotReady, naming the System and its reason', () => {
    const unready =
      "System crm-prod (system 'crm') is not ready: SecretNotFound: The credentials Secret 'c' does not exist";
    const { patch } = decideTool({ now: NOW, tool: tool(), problems: [], unreadySystems: [unready] });
    expect(ready(patch?.conditions)).toMatchObject({
      status: 'False',
      reason: ToolReason.SystemNotReady,
      message: `${unready}; runs of this tool are refused until it is Ready`,
    });
    // The tool's own problems come first: they need fixing whatever the System does.
    const both = decideTool({
      now: NOW,
      tool: tool(),
      problems: ['inputSchema: not a valid JSON Schema: x'],
      unreadySystems: [unready],
    });
    expect(ready(both.patch?.conditions)?.reason).toBe(ToolReason.InvalidSchema);
    // Two Systems not Ready: the message names each, and waits for both.
    const other = "System erp-prod (system 'erp') is not ready: DuplicateSystem: …";
    const two = decideTool({ now: NOW, tool: tool(), problems: [], unreadySystems: [unready, other] });
    expect(ready(two.patch?.conditions)?.message).toBe(
      `${unready}; ${other}; runs of this tool are refused until they are Ready`,
    );
  });

  it('problems of several kinds are InvalidTool listing each', () => {
    const problems = [
      'inputSchema: not a valid JSON Schema: x',
      "steps[0] (a).config.systemId: system 'y' does not exist",
    ];
    const { patch } = decideTool({ now: NOW, tool: tool(), problems });
    expect(ready(patch?.conditions)).toMatchObject({
      reason: ToolReason.InvalidTool,
      message: `2 problems: ${problems.join('; ')}`,
    });
  });

  it('a valid tool is Ready, with stepCount and observedGeneration; no patch once the status says so', () => {
    const { patch } = decideTool({ now: NOW, tool: tool(undefined, 3), problems: [] });
    expect(patch).toMatchObject({ observedGeneration: 3, stepCount: 1 });
    expect(ready(patch?.conditions)).toMatchObject({
      status: 'True',
      reason: ToolReason.Valid,
      observedGeneration: 3,
      lastTransitionTime: '2026-03-01T10:00:00Z',
    });
    expect(decideTool({ now: NOW, tool: tool(patch, 3), problems: [] })).toEqual({});
  });

  it('keeps lastTransitionTime while the status stays, changes it on a transition', () => {
    const first = decideTool({ now: NOW, tool: tool(), problems: ['inputSchema: x'] }).patch;
    const later = new Date(NOW.getTime() + 60_000);
    const other = decideTool({ now: later, tool: tool(first), problems: ['outputSchema: y'] }).patch;
    expect(ready(other?.conditions)?.lastTransitionTime).toBe('2026-03-01T10:00:00Z');
    const fixed = decideTool({ now: later, tool: tool(other), problems: [] }).patch;
    expect(ready(fixed?.conditions)?.lastTransitionTime).toBe('2026-03-01T10:01:00Z');
  });

  it('a spec the schema refuses is InvalidSpec', () => {
    const { patch } = decideTool({
      now: NOW,
      tool: tool(),
      specIssues: ['spec.steps: required'],
      problems: [],
    });
    expect(ready(patch?.conditions)).toMatchObject({ status: 'False', reason: ToolReason.InvalidSpec });
  });
});

function system(spec: Partial<SystemResource['spec']>, name = 'crm-prod'): SystemResource {
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'System',
    metadata: { name, generation: 1 },
    spec: { id: 'crm', environment: 'prod', ...spec } as SystemResource['spec'],
  };
}

describe('decideSystem', () => {
  const observe = (o: Partial<SystemObservation>): SystemObservation => ({
    now: NOW,
    system: system({}),
    credentials: { state: 'none' },
    siblings: [],
    ...o,
  });
  const conditions = (o: Partial<SystemObservation>) => decideSystem(observe(o)).patch?.conditions ?? [];
  const find = (list: Condition[], type: string) => list.find((c) => c.type === type);

  it('a System whose OAuth refresh token was refused is not Ready, naming the authorize route', () => {
    const refused = system({ authType: 'oauth' });
    refused.metadata.annotations = { 'kubeglue.dev/oauth-status': 'needs-reauthorization' };
    const ready = find(
      conditions({ system: refused, credentials: { state: 'present', secretName: 's', problems: [] } }),
      'Ready',
    );
    expect(ready?.status).toBe('False');
    expect(ready?.reason).toBe(SystemReason.OAuthReauthorizationRequired);
    expect(ready?.message).toContain('/v1/systems/crm/oauth/authorize?environment=prod');
  });

  it.each([
    [{}, 'True', SystemReason.NoCredentialsNeeded],
    [{ system: system({ authType: 'bearer' }) }, 'True', SystemReason.NoStoredCredentials],
    [{ credentials: { state: 'missing' as const, secretName: 's' } }, 'False', SystemReason.SecretNotFound],
    [
      { credentials: { state: 'unreadable' as const, secretName: 's' } },
      'False',
      SystemReason.SecretUnreadable,
    ],
    [
      {
        system: system({ authType: 'basic' }),
        credentials: { state: 'present' as const, secretName: 's', problems: [] },
      },
      'True',
      SystemReason.CredentialsReady,
    ],
    [
      {
        system: system({ authType: 'basic' }),
        credentials: { state: 'present' as const, secretName: 's', problems: ['password: missing'] },
      },
      'False',
      SystemReason.CredentialsInvalid,
    ],
    [{ siblings: [system({}, 'crm-prod-2')] }, 'False', SystemReason.DuplicateSystem],
  ])('Ready for %j', (o, status, reason) => {
    expect(find(conditions(o), 'Ready')).toMatchObject({ status, reason });
  });

  it('names missing keys, never values', () => {
    const ready = find(
      conditions({
        system: system({ authType: 'basic' }),
        credentials: { state: 'present', secretName: 'crm-creds', problems: ['password: missing'] },
      }),
      'Ready',
    );
    expect(ready?.message).toBe(
      "The credentials Secret 'crm-creds' does not fit authType basic: password: missing",
    );
  });

  it('links the other environment', () => {
    const linked = find(
      conditions({ siblings: [system({ environment: 'dev' }, 'crm-dev')] }),
      'EnvironmentsLinked',
    );
    expect(linked).toMatchObject({
      status: 'True',
      reason: SystemLinkedReason.Linked,
      message: "The dev environment of system 'crm' is System crm-dev",
    });
    const single = find(conditions({}), 'EnvironmentsLinked');
    expect(single).toMatchObject({ status: 'False', reason: SystemLinkedReason.SingleEnvironment });
  });

  it('patches nothing when the status is current', () => {
    const patch = decideSystem(observe({})).patch;
    expect(decideSystem(observe({ system: { ...system({}), status: patch } }))).toEqual({});
  });
});
