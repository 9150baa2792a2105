import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLAIN_MANIFESTS, renderPlainManifests } from '../../../contract/generate.ts';
import { RBAC } from '../../../contract/rbac.ts';
import { find, parseObjects, REPO } from '../../support/helm.ts';

const committed = () => readFileSync(join(REPO, PLAIN_MANIFESTS), 'utf8');

describe('deploy/kubeglue.yaml', () => {
  it('is the chart rendered with default values (run `npm run generate` after changing the chart)', async () => {
    expect(committed()).toBe(await renderPlainManifests());
  });

  it('holds CRDs, RBAC, Deployments, Services and NetworkPolicies in namespace kubeglue, nothing a 1.20 server refuses', () => {
    const objects = parseObjects(committed());
    const kinds = new Set(objects.map((o) => o.kind));
    for (const kind of [
      'CustomResourceDefinition',
      'ServiceAccount',
      'Role',
      'RoleBinding',
      'Deployment',
      'Service',
      'NetworkPolicy',
    ]) {
      expect(kinds, kind).toContain(kind);
    }
    // No PDB API serves every supported version (policy/v1 from 1.21, policy/v1beta1 until 1.24).
    expect(kinds).not.toContain('PodDisruptionBudget');
    expect(committed()).not.toContain('x-kubernetes-validations');
    for (const object of objects.filter((o) => o.kind !== 'CustomResourceDefinition')) {
      expect(object.metadata.namespace, `${object.kind}/${object.metadata.name}`).toBe('kubeglue');
      expect(object.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('kubectl');
    }
    expect(find(objects, 'Role', 'kubeglue-operator').rules).toEqual(RBAC.operator);
  });

  it('holds no keys: it expects the database Secret its header tells how to create, the api makes the keys', () => {
    const text = committed();
    const objects = parseObjects(text);
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const api = find(objects, 'Deployment', 'kubeglue-api');
    const refs = JSON.stringify(api.spec);
    expect(refs).toContain('{"name":"KUBEGLUE_KEYS_SECRET","value":"kubeglue-keys"}');
    expect(refs).toContain('"secretKeyRef":{"name":"kubeglue-database","key":"url"}');
    const header = text.slice(0, text.indexOf('\n---'));
    expect(header).toContain('create secret generic kubeglue-database');
    expect(header).toContain('get secret kubeglue-keys');
  });
});
