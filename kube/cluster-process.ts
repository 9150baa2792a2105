import { loadSettings, SETTINGS, type Settings } from '../config/config.ts';
import { requireMasterKey } from '../platform/secret-box.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import {
  ClusterTransport,
  createClusterKubeglueResources,
  createClusterResources,
  type KubeglueResources,
  SECRET_KIND,
} from './resources/index.ts';
import { ensureKeysSecret, type InstallationKeys, waitForKeysSecret } from './secrets/keys.ts';

/** A process of the Kubernetes deployment (api or operator), opened: not an RBAC ClusterRole. */
export interface ClusterProcess<R extends 'api' | 'operator'> {
  settings: Settings<R>;
  /** Postgres: the Kubernetes deployment keeps runs there. */
  databaseUrl: string;
  masterKey: Buffer;
  /** The admin key and notification secret of the keys Secret, when the keys came from there. */
  keys: Omit<InstallationKeys, 'masterKey'>;
  transport: ClusterTransport;
  resources: KubeglueResources;
}

export interface OpenOptions {
  /**
   * The api: create the keys Secret (KUBEGLUE_KEYS_SECRET) when it does not exist, with this first admin
   * key. Without it (the operator) the process waits for the Secret.
   */
  newAdminKey?: () => string;
  log: (line: string) => void;
}

/** How often the operator looks for the keys Secret the api creates. */
const KEYS_RETRY_MS = 2_000;

/**
 * What `kubeglue api` and `kubeglue operator` both start from: their settings (refusing to start
 * without Postgres or a master key), the API server connection, kubeglue's resources in the namespace
 * and the keys: KUBEGLUE_MASTER_KEY, else the keys Secret KUBEGLUE_KEYS_SECRET.
 */
export async function openClusterProcess<R extends 'api' | 'operator'>(
  role: R,
  options: OpenOptions,
): Promise<ClusterProcess<R>> {
  const settings = loadSettings(role);
  // What both roles read.
  const {
    databaseUrl,
    masterKey: key,
    keysSecret,
    kubeconfig,
    kubeContext,
    namespace,
  } = settings as Settings<'api' | 'operator'>;
  if (!databaseUrl) {
    throw new Error(
      `${SETTINGS.tree.databaseUrl.name} is required: the Kubernetes deployment keeps runs in Postgres`,
    );
  }
  // Checked before connecting: a process without either fails at once, naming both.
  const given = key !== undefined || !keysSecret ? requireMasterKey(key) : undefined;
  const transport = new ClusterTransport(
    loadKubeConfig({
      ...(kubeconfig ? { path: kubeconfig } : {}),
      ...(kubeContext ? { context: kubeContext } : {}),
    }),
    { userAgent: `kubeglue-${role}` },
  );
  let keys: InstallationKeys;
  if (given) keys = { masterKey: given };
  else {
    const { secrets } = createClusterResources(transport, { namespace, kinds: { secrets: SECRET_KIND } });
    const name = keysSecret as string;
    keys = options.newAdminKey
      ? await ensureKeysSecret(secrets, {
          name,
          namespace,
          newAdminKey: options.newAdminKey,
          creator: `kubeglue-${role}`,
          log: options.log,
        })
      : await waitForKeysSecret(secrets, { name, retryMs: KEYS_RETRY_MS, log: options.log });
  }
  const { masterKey, ...others } = keys;
  return {
    settings,
    databaseUrl,
    masterKey,
    keys: others,
    transport,
    resources: createClusterKubeglueResources(transport, namespace),
  };
}
