export { type ClusterResourcesOptions, createClusterResources } from './cluster.ts';
export {
  ClusterTransport,
  type TransportOptions,
} from './cluster-transport.ts';
export {
  createEmbeddedResources,
  type EmbeddedResourcesOptions,
} from './embedded.ts';
export * from './interface.ts';
export {
  apiPrefix,
  COORDINATION_KIND_SPECS,
  CORE_KIND_SPECS,
  type CoordinationKinds,
  EVENT_KIND,
  type KindSpec,
  type KindSpecs,
  LEASE_KIND,
  POD_KIND,
  qualifiedKind,
  qualifiedResource,
  SECRET_KIND,
  type ValidationResult,
} from './kinds.ts';
export {
  createClusterKubeglueResources,
  createEmbeddedKubeglueResources,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type KubeglueResources,
} from './kubeglue.ts';
export { validateWith } from './validate.ts';
