/** Pure rules of the Systems API: variants, environments, placeholders, credential merging. No I/O. */

import {
  credentialPlaceholder,
  type Environment,
  type System,
  superglueAuthenticationType,
} from '../contract/api/system.ts';
import { resourceTimes, systemResourceName } from '../contract/resources/convert.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';

/** The dev and prod objects of one system id. */
export type Variants = ReadonlyMap<Environment, SystemResource>;

export function environmentOf(resource: SystemResource): Environment {
  // Objects written by kubectl or GitOps may rely on the CRD default and omit it.
  return resource.spec.environment ?? 'prod';
}

/** `<resource name>-credentials`: the Secret that holds a system variant's credentials. */
export function credentialsSecretName(resourceName: string): string {
  return `${resourceName}-credentials`;
}

/**
 * Groups System objects by spec.id and environment. Objects being deleted are left out. Two objects claiming
 * the same id and environment (possible only when written outside the API) resolve to the one with the
 * canonical name, else the first by name, so every reader picks the same.
 */
export function groupVariants(
  resources: Iterable<SystemResource>,
): Map<string, Map<Environment, SystemResource>> {
  const byId = new Map<string, Map<Environment, SystemResource>>();
  for (const resource of resources) {
    if (resource.metadata.deletionTimestamp) continue;
    const id = resource.spec.id;
    const environment = environmentOf(resource);
    let variants = byId.get(id);
    if (!variants) {
      variants = new Map();
      byId.set(id, variants);
    }
    const held = variants.get(environment);
    if (!held || preferred(resource, held, id, environment)) variants.set(environment, resource);
  }
  return byId;
}

function preferred(candidate: SystemResource, held: SystemResource, id: string, env: Environment): boolean {
  const canonical = systemResourceName(id, env);
  if (held.metadata.name === canonical) return false;
  if (candidate.metadata.name === canonical) return true;
  return candidate.metadata.name < held.metadata.name;
}

/** The base URLs of a system's variants (none for an unknown id). */
export function variantUrls(variants: Variants | undefined): string[] {
  return [...(variants?.values() ?? [])].flatMap((resource) =>
    resource.spec.url ? [resource.spec.url] : [],
  );
}

/** The variant a run in `mode` uses: the matching one, or the only one when the id has no counterpart. */
export function variantForMode(variants: Variants, mode: Environment): SystemResource | undefined {
  return variants.get(mode) ?? (variants.size === 1 ? variants.values().next().value : undefined);
}

/** The variant a REST call addresses: the named environment, else prod, else the only variant. */
export function variantForRequest(
  variants: Variants,
  environment: Environment | undefined,
): SystemResource | undefined {
  if (environment) return variants.get(environment);
  return variants.get('prod') ?? variantForMode(variants, 'prod');
}

/** Stable order for lists: by id, then dev before prod. */
export function compareVariants(a: SystemResource, b: SystemResource): number {
  if (a.spec.id !== b.spec.id) return a.spec.id < b.spec.id ? -1 : 1;
  const [ea, eb] = [environmentOf(a), environmentOf(b)];
  return ea === eb ? 0 : ea < eb ? -1 : 1;
}

/** The REST shape of one variant; credentials appear only as placeholders of the stored keys. */
export function toApiSystem(resource: SystemResource, credentialKeys: Iterable<string>): System {
  const { spec, metadata } = resource;
  const credentials: Record<string, string> = {};
  for (const key of [...credentialKeys].sort()) credentials[key] = credentialPlaceholder(spec.id, key);
  const { createdAt, updatedAt } = resourceTimes(metadata);
  return withoutUndefined({
    id: spec.id,
    name: spec.name,
    url: spec.url,
    environment: environmentOf(resource),
    documentationUrl: spec.documentationUrl,
    documentationKeywords: spec.documentationKeywords,
    authType: spec.authType,
    gateway: spec.gateway,
    rateLimit: spec.rateLimit,
    // Shown also when off, so whoever reads a system learns whether its tools' code may read credentials.
    codeAccess: spec.codeAccess === true,
    extraOrigins: spec.extraOrigins,
    allowedNetworks: spec.allowedNetworks,
    credentials,
    authentication: { type: superglueAuthenticationType(spec.authType) },
    hasUserCredentials: Object.keys(credentials).length > 0,
    createdAt,
    updatedAt,
  });
}

export type CredentialMerge =
  | { ok: true; credentials: Record<string, string> }
  /** Keys whose value is their placeholder but that have no stored value to keep. */
  | { ok: false; unknownPlaceholders: string[] };

/**
 * `given` replaces the stored set, except that a value equal to its own placeholder (`<<id_key>>`, as a GET
 * shows it) keeps the stored value, so a fetched system can be sent back unchanged.
 */
export function mergeCredentials(
  systemId: string,
  stored: Readonly<Record<string, string>>,
  given: Readonly<Record<string, string>>,
): CredentialMerge {
  const credentials: Record<string, string> = {};
  const unknownPlaceholders: string[] = [];
  for (const [key, value] of Object.entries(given)) {
    if (value !== credentialPlaceholder(systemId, key)) {
      credentials[key] = value;
    } else if (Object.hasOwn(stored, key)) {
      credentials[key] = stored[key] as string;
    } else {
      unknownPlaceholders.push(key);
    }
  }
  return unknownPlaceholders.length > 0 ? { ok: false, unknownPlaceholders } : { ok: true, credentials };
}

export function withoutUndefined<T extends object>(value: T): T {
  const result = { ...value };
  for (const key of Object.keys(result) as (keyof T)[]) if (result[key] === undefined) delete result[key];
  return result;
}
