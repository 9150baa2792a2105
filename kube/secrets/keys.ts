/**
 * The keys Secret of a Kubernetes installation (KUBEGLUE_KEYS_SECRET): the master key, the first admin
 * API key and the notification signing secret. The first api replica to start creates it with random
 * values; every other replica and the operator read it; nothing ever rewrites it. Whatever renders the
 * manifests (helm install, helm template, Argo CD, Flux) never holds a key, so no render, online or
 * offline, can replace the key that encrypts stored credentials.
 */
import { randomBytes } from 'node:crypto';
import { COMPONENT_LABEL, MANAGED_BY_LABEL, PART_OF_LABEL } from '../../contract/resources/labels.ts';
import { parseMasterKey } from '../../platform/secret-box.ts';
import { isResourceError, type ResourceClient } from '../resources/index.ts';
import type { Secret } from '../types.ts';

/** The keys of the Secret's data. */
export const KEYS_SECRET_ENTRIES = {
  masterKey: 'master-key',
  adminKey: 'admin-key',
  notifySecret: 'notify-secret',
} as const;

/**
 * Argo CD must neither prune the Secret (it is in no manifest) nor show the application out of sync
 * for it. The Secret carries no app.kubernetes.io/instance label, which Argo CD tracks by default.
 */
const GITOPS_ANNOTATIONS = {
  'argocd.argoproj.io/sync-options': 'Prune=false',
  'argocd.argoproj.io/compare-options': 'IgnoreExtraneous',
};

export interface InstallationKeys {
  masterKey: Buffer;
  adminKey?: string;
  notifySecret?: string;
}

type SecretClient = Pick<ResourceClient<Secret>, 'get' | 'create'>;

function decoded(secret: Secret, key: string): string | undefined {
  const value = secret.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
}

/** The keys a Secret holds; throws (never with a value) when it has no usable master key. */
export function keysOf(secret: Secret): InstallationKeys {
  const name = secret.metadata.name;
  const text = decoded(secret, KEYS_SECRET_ENTRIES.masterKey);
  if (text === undefined) {
    throw new Error(
      `the keys Secret ${name} has no ${KEYS_SECRET_ENTRIES.masterKey}; kubeglue never adds one to an existing ` +
        'Secret (it may have replaced a key that encrypts stored credentials): restore it from your backup, ' +
        `or delete the Secret on a new installation`,
    );
  }
  const masterKey = parseMasterKey(text);
  if (!masterKey) {
    throw new Error(
      `${KEYS_SECRET_ENTRIES.masterKey} of the keys Secret ${name} must be 32 bytes as 64 hex characters or base64`,
    );
  }
  const adminKey = decoded(secret, KEYS_SECRET_ENTRIES.adminKey);
  const notifySecret = decoded(secret, KEYS_SECRET_ENTRIES.notifySecret);
  return {
    masterKey,
    ...(adminKey ? { adminKey } : {}),
    ...(notifySecret ? { notifySecret } : {}),
  };
}

export interface EnsureKeysOptions {
  name: string;
  namespace: string;
  /** The first admin API key, in the API's format. */
  newAdminKey: () => string;
  /** Who creates it (the managed-by label). */
  creator: string;
  log: (line: string) => void;
}

/** Reads the keys Secret, creating it with random keys when it does not exist (the first api replica). */
export async function ensureKeysSecret(
  secrets: SecretClient,
  opts: EnsureKeysOptions,
): Promise<InstallationKeys> {
  const existing = await secrets.get(opts.name);
  if (existing) return keysOf(existing);
  const secret: Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: opts.name,
      namespace: opts.namespace,
      labels: { [PART_OF_LABEL]: 'kubeglue', [COMPONENT_LABEL]: 'keys', [MANAGED_BY_LABEL]: opts.creator },
      annotations: GITOPS_ANNOTATIONS,
    },
    type: 'Opaque',
    data: Object.fromEntries(
      Object.entries({
        [KEYS_SECRET_ENTRIES.masterKey]: randomBytes(32).toString('base64'),
        [KEYS_SECRET_ENTRIES.adminKey]: opts.newAdminKey(),
        [KEYS_SECRET_ENTRIES.notifySecret]: `whsec_${randomBytes(32).toString('base64')}`,
      }).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
  };
  try {
    const created = await secrets.create(secret);
    opts.log(`created the keys Secret ${opts.name} (back it up: its master-key encrypts stored credentials)`);
    return keysOf(created);
  } catch (error) {
    // Another replica created it first: use theirs.
    if (!isResourceError(error, 'AlreadyExists')) throw error;
    const raced = await secrets.get(opts.name);
    if (!raced) throw new Error(`the keys Secret ${opts.name} was created and is gone again`);
    return keysOf(raced);
  }
}

export interface WaitForKeysOptions {
  name: string;
  retryMs: number;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** Reads the keys Secret, waiting until the api has created it (the operator). */
export async function waitForKeysSecret(
  secrets: Pick<SecretClient, 'get'>,
  opts: WaitForKeysOptions,
): Promise<InstallationKeys> {
  let told = false;
  for (;;) {
    const secret = await secrets.get(opts.name);
    if (secret) return keysOf(secret);
    if (!told) {
      opts.log(`waiting for the keys Secret ${opts.name}, which the api creates at its first start`);
      told = true;
    }
    opts.signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, opts.retryMs));
  }
}
