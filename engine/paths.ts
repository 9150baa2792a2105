import type { JsonObject, JsonValue } from '../contract/json.ts';

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Own-property assignment that treats `__proto__` as an ordinary key (as JSON.parse does). */
export function setOwnKey(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else target[key] = value;
}

/**
 * Reads a value from a response body by a user-written path, as `pagination.cursorPath` needs.
 * The whole path is first tried as one literal key, because real APIs use keys such as
 * `@odata.nextLink` that contain dots. Otherwise it is a dotted path (`meta.next`, `data.0.id`;
 * `data[0].id` is accepted as well). A leading `$.` (JSONPath habit) is ignored.
 * Only own properties are read, so `__proto__` or `constructor` never reach the prototype chain.
 * Returns undefined when any segment is missing.
 */
export function getByPath(value: JsonValue | undefined, path: string): JsonValue | undefined {
  const trimmed = path.trim();
  if (trimmed === '$') return value;
  const bare = trimmed.startsWith('$.') ? trimmed.slice(2) : trimmed;
  if (bare === '') return value;
  if (isJsonObject(value) && Object.hasOwn(value, bare)) return value[bare];

  const segments = bare.replace(/\[(\d+)\]/g, '.$1').split('.');
  let current: JsonValue | undefined = value;
  for (const segment of segments) {
    if (segment === '') continue;
    current = childOf(current, segment);
    if (current === undefined) return undefined;
  }
  return current;
}

function childOf(value: JsonValue | undefined, segment: string): JsonValue | undefined {
  if (Array.isArray(value)) {
    if (!/^\d+$/.test(segment)) return undefined;
    return value[Number(segment)];
  }
  if (isJsonObject(value) && Object.hasOwn(value, segment)) return value[segment];
  return undefined;
}
