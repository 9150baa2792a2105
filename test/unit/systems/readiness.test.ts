import { describe, expect, it } from 'vitest';
import type { SystemResource } from '../../../contract/resources/kinds.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import { describeUnreadiness, systemUnreadiness } from '../../../systems/readiness.ts';

function system(generation: number, conditions?: Condition[]): SystemResource {
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'System',
    metadata: { name: 'crm-prod', generation },
    spec: { id: 'crm', environment: 'prod', url: 'https://crm.example' } as SystemResource['spec'],
    ...(conditions ? { status: { conditions } } : {}),
  };
}

const notFound = (observedGeneration: number): Condition => ({
  type: 'Ready',
  status: 'False',
  reason: 'SecretNotFound',
  message: "The credentials Secret 'crm-creds' does not exist",
  observedGeneration,
  lastTransitionTime: '2026-03-01T10:00:00Z',
});

describe('whether runs may use a System', () => {
  it('not when its Ready condition for the current spec is False; the description names it and why', () => {
    const unready = systemUnreadiness(system(2, [notFound(2)]));
    expect(unready).toEqual({
      name: 'crm-prod',
      systemId: 'crm',
      reason: 'SecretNotFound',
      message: "The credentials Secret 'crm-creds' does not exist",
    });
    expect(describeUnreadiness(unready as NonNullable<typeof unready>)).toBe(
      "System crm-prod (system 'crm') is not ready: SecretNotFound: The credentials Secret 'crm-creds' does not exist",
    );
  });

  it('yes without conditions (the embedded deployment, or not checked yet), when Ready, or when the verdict is of an older spec', () => {
    expect(systemUnreadiness(system(1))).toBeUndefined();
    expect(
      systemUnreadiness(system(1, [{ ...notFound(1), status: 'True', reason: 'CredentialsReady' }])),
    ).toBeUndefined();
    expect(systemUnreadiness(system(3, [notFound(2)]))).toBeUndefined();
  });
});
