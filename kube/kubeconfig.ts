import { KubeConfig } from '@kubernetes/client-node';

export interface KubeConfigSource {
  /** A kubeconfig file; else in-cluster (service account) when running in a Pod, else $KUBECONFIG / ~/.kube/config. */
  path?: string;
  /** A context other than the file's current one. */
  context?: string;
}

/** Where to find the API server and how to authenticate, as kubectl would decide it. */
export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const config = new KubeConfig();
  if (source.path) config.loadFromFile(source.path);
  else if (process.env.KUBERNETES_SERVICE_HOST && !process.env.KUBECONFIG) config.loadFromCluster();
  else config.loadFromDefault();
  if (source.context) config.setCurrentContext(source.context);
  return config;
}

/** The namespace of the current context (in a Pod: the service account's), if it names one. */
export function currentNamespace(config: KubeConfig): string | undefined {
  return config.getContextObject(config.getCurrentContext())?.namespace || undefined;
}
