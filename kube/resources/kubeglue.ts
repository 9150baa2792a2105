import {
  SystemResource,
  ToolResource,
  ToolRunResource,
  ToolScheduleResource,
} from '../../contract/resources/kinds.ts';
import type { ResourceStore } from '../../store/index.ts';
import { createClusterResources } from './cluster.ts';
import type { ClusterTransport } from './cluster-transport.ts';
import { createEmbeddedResources } from './embedded.ts';
import type { ResourceClients } from './interface.ts';
import { CORE_KIND_SPECS, type KindSpecs } from './kinds.ts';
import { validateWith } from './validate.ts';

export type KubeglueKinds = {
  tools: ToolResource;
  systems: SystemResource;
  toolRuns: ToolRunResource;
  toolSchedules: ToolScheduleResource;
};

/** Typed clients of kubeglue's own kinds; what API handlers and reconcilers are given. */
export type KubeglueResources = ResourceClients<KubeglueKinds>;

/** The kinds with the checks their CRD schemas make on a real API server. */
export const KUBEGLUE_KIND_SPECS: KindSpecs<KubeglueKinds> = {
  tools: { ...CORE_KIND_SPECS.tools, validate: validateWith(ToolResource) },
  systems: { ...CORE_KIND_SPECS.systems, validate: validateWith(SystemResource) },
  toolRuns: { ...CORE_KIND_SPECS.toolRuns, validate: validateWith(ToolRunResource) },
  toolSchedules: { ...CORE_KIND_SPECS.toolSchedules, validate: validateWith(ToolScheduleResource) },
};

export function createEmbeddedKubeglueResources(
  store: ResourceStore,
  namespace: string,
  now?: () => Date,
): KubeglueResources {
  return createEmbeddedResources<KubeglueKinds>(store, {
    namespace,
    kinds: KUBEGLUE_KIND_SPECS,
    ...(now ? { now } : {}),
  });
}

/** On a real cluster the CRDs' schemas validate; nothing is checked twice here. */
export function createClusterKubeglueResources(
  transport: ClusterTransport,
  namespace: string,
): KubeglueResources {
  return createClusterResources<KubeglueKinds>(transport, { namespace, kinds: KUBEGLUE_KIND_SPECS });
}
