/**
 * The database Secret the chart reads is `<fullname>-database`, and the install instructions say so: a
 * release not named `kubeglue` reads `<release>-kubeglue-database`, not `<release>-database`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { find, REPO, renderChart } from '../../support/helm.ts';

interface EnvVar {
  name: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

async function databaseSecretOf(release: string, set: Record<string, string> = {}) {
  const objects = await renderChart({ release, set });
  const fullname = set.fullnameOverride ?? (release.includes('kubeglue') ? release : `${release}-kubeglue`);
  const api = find(objects, 'Deployment', `${fullname}-api`);
  const containers = (api.spec as { template: { spec: { containers: { env?: EnvVar[] }[] } } }).template.spec
    .containers;
  return containers[0]?.env?.find((e) => e.name === 'KUBEGLUE_DATABASE_URL')?.valueFrom?.secretKeyRef;
}

describe('the database Secret', () => {
  it('is named <fullname>-database, whatever the release is called', async () => {
    expect(await databaseSecretOf('kubeglue')).toEqual({ name: 'kubeglue-database', key: 'url' });
    expect(await databaseSecretOf('prod')).toEqual({ name: 'prod-kubeglue-database', key: 'url' });
    expect(await databaseSecretOf('prod', { fullnameOverride: 'kg' })).toEqual({
      name: 'kg-database',
      key: 'url',
    });
  });

  it('is named so in the chart README and the Helm page', () => {
    for (const page of ['charts/kubeglue/README.md', 'docs/helm.md']) {
      const text = readFileSync(join(REPO, page), 'utf8');
      expect(text, page).not.toMatch(/<release>-database/);
      expect(text, page).toContain('<fullname>-database');
      expect(text, page).toContain('prod-kubeglue-database');
    }
  });
});
