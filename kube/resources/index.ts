export {
  CORE_KIND_SPECS,
  createEmbeddedResources,
  type EmbeddedResourcesOptions,
  type KindSpec,
  type KindSpecs,
  type ValidationResult,
} from './embedded.ts';
export * from './interface.ts';
export {
  createEmbeddedKubeglueResources,
  KUBEGLUE_KIND_SPECS,
  type KubeglueKinds,
  type KubeglueResources,
} from './kubeglue.ts';
export { validateWith } from './validate.ts';
