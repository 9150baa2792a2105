import { type ClusterConfig, loadClusterConfig } from '../config/cluster.ts';
import { type Config, loadConfig } from '../config/config.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import {
  ClusterTransport,
  createClusterKubeglueResources,
  type KubeglueResources,
} from './resources/index.ts';
import { requireMasterKey } from './secrets/secret-box.ts';

export interface ClusterRole {
  config: Config;
  cluster: ClusterConfig;
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
export function openClusterRole(role: 'api' | 'operator'): ClusterRole {
  const config = loadConfig(process.env, role);
  const cluster = loadClusterConfig();
  if (!config.databaseUrl) {
    throw new Error('KUBEGLUE_DATABASE_URL is required: the Kubernetes deployment keeps runs in Postgres');
  }
  const masterKey = requireMasterKey(config.masterKey);
  const transport = new ClusterTransport(
    loadKubeConfig({
      ...(cluster.kubeconfig ? { path: cluster.kubeconfig } : {}),
      ...(cluster.kubeContext ? { context: cluster.kubeContext } : {}),
    }),
    { userAgent: `kubeglue-${role}` },
  );
  return {
    config,
    cluster,
    databaseUrl: config.databaseUrl,
    masterKey,
    transport,
    resources: createClusterKubeglueResources(transport, config.namespace),
  };
}
