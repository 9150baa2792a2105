import { loadSettings, type Settings } from '../config/config.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import {
  ClusterTransport,
  createClusterKubeglueResources,
  type KubeglueResources,
} from './resources/index.ts';
import { requireMasterKey } from './secrets/secret-box.ts';

/** A process of the Kubernetes deployment (api or operator), opened: not an RBAC ClusterRole. */
export interface ClusterProcess<R extends 'api' | 'operator'> {
  settings: Settings<R>;
  /** Postgres: the Kubernetes deployment keeps runs there. */
  databaseUrl: string;
  masterKey: Buffer;
  transport: ClusterTransport;
  resources: KubeglueResources;
}

/**
 * What `kubeglue api` and `kubeglue operator` both start from: their settings (refusing to start
 * without Postgres or a master key), the API server connection and kubeglue's resources in the
 * namespace.
 */
export function openClusterProcess<R extends 'api' | 'operator'>(role: R): ClusterProcess<R> {
  const settings = loadSettings(role);
  // What both roles read.
  const {
    databaseUrl,
    masterKey: key,
    kubeconfig,
    kubeContext,
    namespace,
  } = settings as Settings<'api' | 'operator'>;
  if (!databaseUrl) {
    throw new Error('KUBEGLUE_DATABASE_URL is required: the Kubernetes deployment keeps runs in Postgres');
  }
  const masterKey = requireMasterKey(key);
  const transport = new ClusterTransport(
    loadKubeConfig({
      ...(kubeconfig ? { path: kubeconfig } : {}),
      ...(kubeContext ? { context: kubeContext } : {}),
    }),
    { userAgent: `kubeglue-${role}` },
  );
  return {
    settings,
    databaseUrl,
    masterKey,
    transport,
    resources: createClusterKubeglueResources(transport, namespace),
  };
}
