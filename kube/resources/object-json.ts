import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { ObjectMeta } from '../../contract/resources/meta.ts';
import type { WireObject } from './interface.ts';

/** The JSON form of an object, as stored and served: undefined properties are gone. */
export function toJsonObject(value: object): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}

/** Stored objects were validated when written, so reading them back as T is safe. */
export function fromJsonObject<T extends WireObject>(json: JsonObject): T {
  return json as unknown as T;
}

function isPlainObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7386 JSON merge patch: objects merge recursively, null removes a key, anything else replaces. */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isPlainObject(patch)) return patch;
  const result: JsonObject = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** JSON with sorted keys, so two objects compare equal when their content is equal. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) return inner;
    const entries = Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries);
  });
}

/** Like the API server's omitempty: empty lists and maps are not kept. */
export function withoutEmptyFields(metadata: ObjectMeta): ObjectMeta {
  const result: ObjectMeta = { ...metadata };
  if (result.labels && Object.keys(result.labels).length === 0) delete result.labels;
  if (result.annotations && Object.keys(result.annotations).length === 0) delete result.annotations;
  if (result.finalizers && result.finalizers.length === 0) delete result.finalizers;
  if (result.ownerReferences && result.ownerReferences.length === 0) delete result.ownerReferences;
  for (const key of Object.keys(result) as (keyof ObjectMeta)[])
    if (result[key] === undefined) delete result[key];
  return result;
}
