import { API_VERSION } from '../../contract/resources/meta.ts';
import type { Event, Lease, Pod, Secret } from '../types.ts';
import type { CoreKinds, KindMap, WireObject } from './interface.ts';

export type ValidationResult = { ok: true } | { ok: false; message: string };

/** What a Resources implementation needs to know of a kind (all kinds are namespaced). */
export interface KindSpec<T extends WireObject> {
  kind: string;
  /** Lower-case plural, as in the resource's REST path (`tools`). */
  plural: string;
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
  /**
   * Whether status is a subresource (default true): then create and update leave status alone and only
   * patchStatus writes it. Without one, status is plain content (and patchStatus is refused).
   */
  statusSubresource?: boolean;
  /** Embedded only: a CRD-schema-like check of the object about to be stored; failure answers 422 Invalid. */
  validate?: (obj: T) => ValidationResult;
}

export type KindSpecs<M extends KindMap> = { [P in keyof M]: KindSpec<M[P]> };

export const CORE_KIND_SPECS: KindSpecs<CoreKinds> = {
  tools: { kind: 'Tool', plural: 'tools', apiVersion: API_VERSION },
  systems: { kind: 'System', plural: 'systems', apiVersion: API_VERSION },
  toolRuns: { kind: 'ToolRun', plural: 'toolruns', apiVersion: API_VERSION },
  toolSchedules: { kind: 'ToolSchedule', plural: 'toolschedules', apiVersion: API_VERSION },
};

export const SECRET_KIND: KindSpec<Secret> = {
  kind: 'Secret',
  plural: 'secrets',
  apiVersion: 'v1',
  statusSubresource: false,
};

export const POD_KIND: KindSpec<Pod> = { kind: 'Pod', plural: 'pods', apiVersion: 'v1' };

export const LEASE_KIND: KindSpec<Lease> = {
  kind: 'Lease',
  plural: 'leases',
  apiVersion: 'coordination.k8s.io/v1',
  statusSubresource: false,
  validate: (lease) => {
    const duration = lease.spec?.leaseDurationSeconds;
    if (duration !== undefined && !(Number.isInteger(duration) && duration > 0)) {
      return { ok: false, message: 'spec.leaseDurationSeconds: Invalid value: must be greater than 0' };
    }
    return { ok: true };
  },
};

export const EVENT_KIND: KindSpec<Event> = {
  kind: 'Event',
  plural: 'events',
  apiVersion: 'v1',
  statusSubresource: false,
  validate: (event) =>
    event.involvedObject && typeof event.involvedObject === 'object'
      ? { ok: true }
      : { ok: false, message: 'involvedObject: Required value' },
};

/** The core kinds the operator uses beside kubeglue's own. */
export type CoordinationKinds = { leases: Lease; events: Event };

export const COORDINATION_KIND_SPECS: KindSpecs<CoordinationKinds> = {
  leases: LEASE_KIND,
  events: EVENT_KIND,
};

/** `/apis/<group>/<version>` or `/api/v1`. */
export function apiPrefix(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** `tools.kubeglue.dev` (or `secrets` in the core group), as in the API server's messages. */
export function qualifiedResource(spec: { plural: string; apiVersion: string }): string {
  const group = spec.apiVersion.includes('/') ? spec.apiVersion.split('/')[0] : '';
  return group ? `${spec.plural}.${group}` : spec.plural;
}

/** `Tool.kubeglue.dev` (or `Secret`). */
export function qualifiedKind(spec: { kind: string; apiVersion: string }): string {
  const group = spec.apiVersion.includes('/') ? spec.apiVersion.split('/')[0] : '';
  return group ? `${spec.kind}.${group}` : spec.kind;
}
