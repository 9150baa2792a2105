import { createHash } from 'node:crypto';
import type { Environment } from '../api/system.ts';
import { MAX_INSTRUCTION_LENGTH, type Tool } from '../api/tool.ts';
import type {
  SystemResource,
  SystemSpec,
  ToolManifest,
  ToolResource,
  ToolScheduleResource,
  ToolSpec,
} from './kinds.ts';
import { ENVIRONMENT_LABEL, SYSTEM_ID_LABEL, UPDATED_AT_ANNOTATION } from './labels.ts';
import { API_VERSION, type ObjectMeta } from './meta.ts';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DERIVED_SLUG_MAX = 40;

export function isDns1123Subdomain(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

/** 10 hex digits of the value's SHA-256: keeps derived names of distinct ids apart. */
export function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 10);
}

/** A readable, DNS-safe fragment of any id (lower-case, `-` for the rest, at most 40 characters). */
export function slug(value: string): string {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, DERIVED_SLUG_MAX)
    .replace(/^-+|-+$/g, '');
}

/**
 * The metadata.name for an id: the id itself when it is a DNS-1123 subdomain, else a readable slug
 * plus a hash of the id, so distinct ids never share a name by accident. The id then lives in spec.id.
 */
export function resourceNameForId(id: string): string {
  if (isDns1123Subdomain(id)) return id;
  return `${slug(id) || 'id'}-${shortHash(id)}`;
}

/** A label value naming an id: the id when it is a valid label value, else slug + hash. */
export function labelValueForId(id: string): string {
  if (id.length <= 63 && LABEL_VALUE.test(id)) return id;
  return `${slug(id).slice(0, 40) || 'id'}-${shortHash(id)}`;
}

export function toolIdOf(resource: Pick<ToolResource, 'metadata' | 'spec'>): string {
  return resource.spec.id ?? resource.metadata.name;
}

/** The schedule id the REST API shows: spec.id, else the name (server-chosen ids, kubectl's schedules). */
export function scheduleIdOf(resource: Pick<ToolScheduleResource, 'metadata' | 'spec'>): string {
  return resource.spec.id ?? resource.metadata.name;
}

/**
 * The metadata.name of a schedule whose id the request chose: the id and a hash of the tool and the id, so
 * schedule ids are unique per tool only (another tool's `nightly` neither blocks nor reveals this one)
 * and the same (tool, id) always meets the same name (two creates of it at once: one AlreadyExists).
 */
export function scheduleResourceName(toolId: string, scheduleId: string): string {
  const hash = shortHash(`${toolId}\0${scheduleId}`);
  const readable = scheduleId.slice(0, 253 - hash.length - 1).replace(/[-.]+$/, '');
  return `${readable}-${hash}`;
}

/**
 * An instant as every /v1 answer gives it: ISO 8601 in UTC with milliseconds (`2026-01-02T03:04:05.000Z`,
 * `Date#toISOString`), as runs always had it. Kubernetes writes whole seconds (`creationTimestamp`, status
 * times: `2026-01-02T03:04:05Z`); without this a tool answered `createdAt` in one format and `updatedAt`
 * (the annotation) in the other. Undefined for what is no instant.
 */
export function apiInstant(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/**
 * `createdAt` and `updatedAt` of a Tool, System or ToolSchedule: the creationTimestamp, and the updated-at
 * annotation (absent, as on an object kubectl applied: the creation). Never earlier than the creation: the
 * annotation is written just before the API server stamps the creation, in whole seconds and on its own
 * clock.
 */
export function resourceTimes(metadata: ObjectMeta): { createdAt?: string; updatedAt?: string } {
  const createdAt = apiInstant(metadata.creationTimestamp);
  const annotated = apiInstant(metadata.annotations?.[UPDATED_AT_ANNOTATION]);
  const updatedAt = createdAt && (!annotated || annotated < createdAt) ? createdAt : annotated;
  return { ...(createdAt ? { createdAt } : {}), ...(updatedAt ? { updatedAt } : {}) };
}

/** REST Tool → Tool resource. Server fields become metadata; unchanged metadata of `existing` is kept. */
export function toolToResource(tool: Tool, namespace: string, existing?: ToolResource): ToolResource {
  const { id, createdAt: _c, updatedAt, ...fields } = tool;
  const name = resourceNameForId(id);
  const spec: ToolSpec = name === id ? fields : { id, ...fields };
  const annotations = { ...existing?.metadata.annotations };
  annotations[UPDATED_AT_ANNOTATION] = updatedAt ?? new Date().toISOString();
  return {
    apiVersion: API_VERSION,
    kind: 'Tool',
    metadata: { ...existing?.metadata, name, namespace, annotations },
    spec,
    ...(existing?.status ? { status: existing.status } : {}),
  };
}

/**
 * REST Tool → the manifest to keep in Git: the resource `toolToResource` writes, without what the server
 * sets (the updated-at annotation), so applying it again changes nothing but the tool itself.
 */
export function toolManifest(tool: Tool, namespace: string): ToolManifest {
  const { apiVersion, kind, metadata, spec } = toolToResource(tool, namespace);
  return { apiVersion, kind, metadata: { name: metadata.name, namespace }, spec };
}

/**
 * An instruction stored before MAX_INSTRUCTION_LENGTH existed (or applied while an older CRD was
 * installed) is read cut to it: the tool still parses, runs and lists, and is saved cut when it is changed.
 */
function withinInstructionLimit<T extends { instruction?: string | undefined }>(part: T): T {
  const { instruction } = part;
  if (instruction === undefined || instruction.length <= MAX_INSTRUCTION_LENGTH) return part;
  return { ...part, instruction: instruction.slice(0, MAX_INSTRUCTION_LENGTH) };
}

/** Tool resource → REST Tool. */
export function toolFromResource(resource: ToolResource): Tool {
  const { id: _id, ...spec } = resource.spec;
  const fields = { ...withinInstructionLimit(spec), steps: spec.steps.map(withinInstructionLimit) };
  return { id: toolIdOf(resource), ...fields, ...resourceTimes(resource.metadata) };
}

/** One object per (id, environment): `<name>-prod`, `<name>-dev`, sharing the system-id label. */
export function systemResourceName(id: string, environment: Environment): string {
  return `${resourceNameForId(id).slice(0, 240)}-${environment}`;
}

export interface SystemFields extends Omit<SystemSpec, 'credentialsSecretRef'> {
  updatedAt?: string;
}

export function systemToResource(
  system: SystemFields,
  namespace: string,
  credentialsSecretName: string | undefined,
  existing?: SystemResource,
): SystemResource {
  const { updatedAt, ...fields } = system;
  const spec: SystemSpec = {
    ...fields,
    ...(credentialsSecretName ? { credentialsSecretRef: { name: credentialsSecretName } } : {}),
  };
  return {
    apiVersion: API_VERSION,
    kind: 'System',
    metadata: {
      ...existing?.metadata,
      name: systemResourceName(system.id, system.environment),
      namespace,
      labels: {
        ...existing?.metadata.labels,
        [SYSTEM_ID_LABEL]: labelValueForId(system.id),
        [ENVIRONMENT_LABEL]: system.environment,
      },
      annotations: {
        ...existing?.metadata.annotations,
        [UPDATED_AT_ANNOTATION]: updatedAt ?? new Date().toISOString(),
      },
    },
    spec,
    ...(existing?.status ? { status: existing.status } : {}),
  };
}
