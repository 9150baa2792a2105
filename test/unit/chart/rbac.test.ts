import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../../contract/generate.ts';
import { RBAC, type RbacRole } from '../../../contract/rbac.ts';
import { CHART_DIR, find, REPO, renderChart } from '../../support/helm.ts';

const ROLES = Object.keys(RBAC) as RbacRole[];

describe('the chart RBAC', () => {
  it('renders the rules of contract/rbac.ts into a Role per role, bound to that role`s ServiceAccount', async () => {
    const objects = await renderChart({ namespace: 'team-a' });
    for (const role of ROLES) {
      const rendered = find(objects, 'Role', `kubeglue-${role}`);
      expect(rendered.metadata.namespace).toBe('team-a');
      expect(rendered.rules, role).toEqual(RBAC[role]);
      const binding = find(objects, 'RoleBinding', `kubeglue-${role}`);
      expect(binding.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: `kubeglue-${role}`,
      });
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: `kubeglue-${role}`, namespace: 'team-a' },
      ]);
    }
    expect(objects.filter((o) => o.kind === 'Role').map((o) => o.metadata.name)).toHaveLength(ROLES.length);
  });

  it('renders the same rules cluster-wide when rbac.clusterWide is set', async () => {
    const objects = await renderChart({ namespace: 'team-a', set: { 'rbac.clusterWide': true } });
    expect(objects.some((o) => o.kind === 'Role' || o.kind === 'RoleBinding')).toBe(false);
    for (const role of ROLES) {
      const rendered = find(objects, 'ClusterRole', `team-a-kubeglue-${role}`);
      expect(rendered.metadata.namespace).toBeUndefined();
      expect(rendered.rules, role).toEqual(RBAC[role]);
      const binding = find(objects, 'ClusterRoleBinding', `team-a-kubeglue-${role}`);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: `kubeglue-${role}`, namespace: 'team-a' },
      ]);
    }
  });

  it('renders no RBAC with rbac.create=false', async () => {
    const objects = await renderChart({ set: { 'rbac.create': false } });
    expect(objects.filter((o) => /Role/.test(o.kind))).toEqual([]);
  });

  it('keeps the generated rules template identical to contract/rbac.ts (run `npm run generate`)', () => {
    const path = join('charts', 'kubeglue', 'templates', '_rbac-rules.tpl');
    expect(readFileSync(join(REPO, path), 'utf8')).toBe(generatedFiles().get(path));
    expect(readFileSync(join(CHART_DIR, 'templates', 'rbac.yaml'), 'utf8')).toContain('kubeglue.rbacRules.');
  });
});
