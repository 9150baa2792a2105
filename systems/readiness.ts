/**
 * Whether runs may use a System object, as its Ready condition says. On Kubernetes the operator's System
 * reconciler writes that condition (its credentials Secret exists and fits the auth type, no duplicate,
 * OAuth authorized); a run of a tool using a System that is not Ready would send its requests without
 * (or with broken) credentials, so it is refused before anything is sent. The embedded deployment has no
 * System reconciler and so no conditions: a System there is usable when it exists, as is one the
 * reconciler has not looked at yet.
 */
import { SystemConditionType } from '../contract/reasons.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';

/** Why a System is not ready: its object, its system id and its Ready condition's reason and message. */
export interface SystemUnreadiness {
  /** metadata.name of the System object (one per environment). */
  name: string;
  systemId: string;
  reason: string;
  message: string;
}

/**
 * The System's Ready=False condition, or undefined when it is ready, not yet checked, or checked only
 * for an earlier generation of its spec (that verdict may no longer hold: the reconciler decides anew).
 */
export function systemUnreadiness(resource: SystemResource): SystemUnreadiness | undefined {
  const ready = resource.status?.conditions?.find(
    (condition) => condition.type === SystemConditionType.Ready,
  );
  if (ready?.status !== 'False') return undefined;
  const generation = resource.metadata.generation;
  if (
    ready.observedGeneration !== undefined &&
    generation !== undefined &&
    ready.observedGeneration !== generation
  )
    return undefined;
  return {
    name: resource.metadata.name,
    systemId: resource.spec.id,
    reason: ready.reason ?? 'NotReady',
    message: ready.message ?? '',
  };
}

/** `System crm-prod (system 'crm') is not ready: SecretNotFound: …`: how messages name it. */
export function describeUnreadiness(unready: SystemUnreadiness): string {
  const why = unready.message ? `${unready.reason}: ${unready.message}` : unready.reason;
  return `System ${unready.name} (system '${unready.systemId}') is not ready: ${why}`;
}
