/**
 * The System reconciler's decision, pure: from what was observed of the System, its credentials Secret
 * (key names and problems only, never a value) and its sibling objects (the same system id), to its
 * Ready and EnvironmentsLinked conditions, patched only when they differ.
 */

import { SystemConditionType, SystemLinkedReason, SystemReason } from '../../contract/reasons.ts';
import type { SystemResource, SystemStatus } from '../../contract/resources/kinds.ts';
import { OAUTH_STATUS_ANNOTATION } from '../../contract/resources/labels.ts';
import { authorizeRoute, OAUTH_NEEDS_REAUTHORIZATION } from '../../systems/oauth/settings.ts';
import { conditionIs, type DesiredCondition, setCondition } from '../conditions.ts';

/** The credentials as the observer found them: names of keys and of problems, no values. */
export type CredentialCheck =
  | { state: 'none' }
  | { state: 'missing'; secretName: string }
  | { state: 'unreadable'; secretName: string }
  /** problems: `key: what is wrong` for each key the auth type wants and the Secret does not give. */
  | { state: 'present'; secretName: string; problems: string[] };

export interface SystemObservation {
  now: Date;
  system: SystemResource;
  credentials: CredentialCheck;
  /** Other System objects of the same system id (any environment). */
  siblings: Pick<SystemResource, 'metadata' | 'spec'>[];
}

export interface SystemDecision {
  patch?: Partial<SystemStatus>;
}

const NEEDS_NO_CREDENTIALS = new Set(['none', undefined]);

export function readyCondition(o: SystemObservation): DesiredCondition & { reason: SystemReason } {
  const generation = o.system.metadata.generation ?? 1;
  // Its status (True or False) is the one the reason is declared with (contract/reasons.ts).
  const condition = (reason: SystemReason, message: string) => ({
    type: SystemConditionType.Ready,
    reason,
    message,
    observedGeneration: generation,
  });
  const environment = o.system.spec.environment ?? 'prod';
  const duplicates = o.siblings.filter((s) => (s.spec.environment ?? 'prod') === environment);
  if (duplicates.length > 0) {
    return condition(
      SystemReason.DuplicateSystem,
      `System ${duplicates.map((s) => s.metadata.name).join(', ')} has the same id '${o.system.spec.id}' and environment ${environment}`,
    );
  }
  if (o.system.metadata.annotations?.[OAUTH_STATUS_ANNOTATION] === OAUTH_NEEDS_REAUTHORIZATION) {
    return condition(
      SystemReason.OAuthReauthorizationRequired,
      `The OAuth provider refused the refresh token of system '${o.system.spec.id}' (invalid_grant); ` +
        `authorize it again: ${authorizeRoute(o.system.spec.id, environment)}`,
    );
  }
  const authType = o.system.spec.authType;
  const c = o.credentials;
  switch (c.state) {
    case 'none':
      return NEEDS_NO_CREDENTIALS.has(authType)
        ? condition(SystemReason.NoCredentialsNeeded, 'The system needs no credentials')
        : condition(
            SystemReason.NoStoredCredentials,
            `No credentials are stored for authType ${authType}; runs must pass them as runtime credentials`,
          );
    case 'missing':
      return condition(
        SystemReason.SecretNotFound,
        `The credentials Secret '${c.secretName}' does not exist`,
      );
    case 'unreadable':
      return condition(
        SystemReason.SecretUnreadable,
        `The credentials Secret '${c.secretName}' cannot be read`,
      );
    case 'present':
      return c.problems.length === 0
        ? condition(
            SystemReason.CredentialsReady,
            authType
              ? `The credentials Secret '${c.secretName}' fits authType ${authType}`
              : `The credentials Secret '${c.secretName}' exists`,
          )
        : condition(
            SystemReason.CredentialsInvalid,
            `The credentials Secret '${c.secretName}' does not fit authType ${authType}: ${c.problems.join('; ')}`,
          );
  }
}

export function linkedCondition(o: SystemObservation): DesiredCondition {
  const environment = o.system.spec.environment ?? 'prod';
  const other = environment === 'prod' ? 'dev' : 'prod';
  const counterpart = o.siblings.find((s) => (s.spec.environment ?? 'prod') === other);
  return counterpart
    ? {
        type: SystemConditionType.EnvironmentsLinked,
        reason: SystemLinkedReason.Linked,
        message: `The ${other} environment of system '${o.system.spec.id}' is System ${counterpart.metadata.name}`,
      }
    : {
        type: SystemConditionType.EnvironmentsLinked,
        reason: SystemLinkedReason.SingleEnvironment,
        message: `System '${o.system.spec.id}' has no ${other} environment; this one serves both modes`,
      };
}

export function decideSystem(o: SystemObservation): SystemDecision {
  const status = o.system.status ?? {};
  let conditions = status.conditions;
  let changed = false;
  for (const desired of [readyCondition(o), linkedCondition(o)]) {
    if (conditionIs(conditions, desired)) continue;
    conditions = setCondition(conditions, desired, o.now);
    changed = true;
  }
  const generation = o.system.metadata.generation ?? 1;
  const patch: Partial<SystemStatus> = {};
  if (changed) patch.conditions = conditions;
  if (status.observedGeneration !== generation) patch.observedGeneration = generation;
  return Object.keys(patch).length > 0 ? { patch } : {};
}
