import { beforeAll, expect, it } from 'vitest';
import { generateApiKey } from '../../../api/api-keys.ts';
import { createClusterResources, type ResourceClient, SECRET_KIND } from '../../../kube/resources/index.ts';
import { ensureKeysSecret, waitForKeysSecret } from '../../../kube/secrets/keys.ts';
import type { Secret } from '../../../kube/types.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

const log = () => {};
const base64 = (text: string) => Buffer.from(text).toString('base64');

/**
 * The keys Secret (KUBEGLUE_KEYS_SECRET) on a real API server: made once by the first api replica,
 * read by the others and the operator, never rewritten. It is what lets the chart render no key.
 */
describeKube('the keys Secret', () => {
  const bed = useKubeTestBed('keys-secret');
  let secrets: ResourceClient<Secret>;
  const ensure = (name: string) =>
    ensureKeysSecret(secrets, {
      name,
      namespace: bed.namespace.name,
      newAdminKey: generateApiKey,
      creator: 'kubeglue-api',
      log,
    });

  beforeAll(() => {
    secrets = createClusterResources(bed.transport, {
      namespace: bed.namespace.name,
      kinds: { secrets: SECRET_KIND },
    }).secrets;
  });

  it('is created once when api replicas start together, and they share its keys', async () => {
    const [a, b, c] = await Promise.all([ensure('first'), ensure('first'), ensure('first')]);
    expect(a.masterKey).toHaveLength(32);
    expect(b.masterKey.equals(a.masterKey) && c.masterKey.equals(a.masterKey)).toBe(true);
    expect(a.adminKey).toMatch(/^kg_/);
    expect(a.notifySecret).toMatch(/^whsec_/);
    const stored = await secrets.get('first');
    // Argo CD neither prunes it nor tracks it (no app.kubernetes.io/instance label); no owner deletes it.
    expect(stored?.metadata.labels).toEqual({
      'app.kubernetes.io/part-of': 'kubeglue',
      'app.kubernetes.io/component': 'keys',
      'app.kubernetes.io/managed-by': 'kubeglue-api',
    });
    expect(stored?.metadata.annotations).toMatchObject({
      'argocd.argoproj.io/sync-options': 'Prune=false',
    });
    expect(stored?.metadata.ownerReferences).toBeUndefined();
    // A later start reads it and changes nothing.
    expect((await ensure('first')).masterKey.equals(a.masterKey)).toBe(true);
    expect((await secrets.get('first'))?.metadata.resourceVersion).toBe(stored?.metadata.resourceVersion);
  });

  it('is waited for by the operator until the api has made it', async () => {
    let found = false;
    const waiting = waitForKeysSecret(secrets, { name: 'second', retryMs: 50, log }).then((keys) => {
      found = true;
      return keys;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(found).toBe(false);
    const made = await ensure('second');
    expect((await waiting).masterKey.equals(made.masterKey)).toBe(true);
    expect((await waiting).notifySecret).toBe(made.notifySecret);
  });

  it('is used as it is when it exists already (an upgrade from a chart that rendered the keys)', async () => {
    const hex = 'ab'.repeat(32);
    await secrets.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'third' },
      data: { 'master-key': base64(hex), 'admin-key': base64('kg_preset-admin-key-0123456789') },
    });
    const keys = await ensure('third');
    expect(keys.masterKey.toString('hex')).toBe(hex);
    expect(keys.adminKey).toBe('kg_preset-admin-key-0123456789');
    expect(keys.notifySecret).toBeUndefined();
  });

  it('never gets a master key added: a Secret without one stops the start, naming it', async () => {
    await secrets.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'fourth' },
      data: { 'admin-key': base64('kg_preset-admin-key-0123456789') },
    });
    await expect(ensure('fourth')).rejects.toThrow(/keys Secret fourth has no master-key/);
    expect(Object.keys((await secrets.get('fourth'))?.data ?? {})).toEqual(['admin-key']);
  });
});
