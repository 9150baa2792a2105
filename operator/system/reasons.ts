/** Names the System controller writes into conditions; tests and `kubectl describe` read the same. */

export const SystemConditionType = {
  /** Whether runs can use the System as stored (its credentials Secret exists and fits the auth type). */
  Ready: 'Ready',
  /** Whether the other environment (dev/prod) of the same system id exists; the message names it. */
  EnvironmentsLinked: 'EnvironmentsLinked',
} as const;

export const SystemReason = {
  /** The credentials Secret exists and has every key the auth type needs. */
  CredentialsReady: 'CredentialsReady',
  /** The auth type needs no credentials. */
  NoCredentialsNeeded: 'NoCredentialsNeeded',
  /** No Secret is referenced: runs must pass runtime credentials. */
  NoStoredCredentials: 'NoStoredCredentials',
  /** spec.credentialsSecretRef names a Secret that does not exist. */
  SecretNotFound: 'SecretNotFound',
  /** The Secret exists but cannot be read (embedded: wrong master key). */
  SecretUnreadable: 'SecretUnreadable',
  /** The Secret lacks keys the auth type needs, or has unusable values (keys are named, values never). */
  CredentialsInvalid: 'CredentialsInvalid',
  /** OAuth: the provider refused the refresh token (invalid_grant); a user must authorize the system again. */
  OAuthReauthorizationRequired: 'OAuthReauthorizationRequired',
  /** Another System has the same id and environment. */
  DuplicateSystem: 'DuplicateSystem',
  /** EnvironmentsLinked: both environments exist. */
  Linked: 'Linked',
  /** EnvironmentsLinked: only this environment exists (it serves both modes). */
  SingleEnvironment: 'SingleEnvironment',
} as const;
export type SystemReason = (typeof SystemReason)[keyof typeof SystemReason];
