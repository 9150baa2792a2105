/**
 * Redis replies as JSON. kubeglue speaks RESP3 (HELLO 3) where the server can (Redis 6 and later) and
 * RESP2 otherwise. ioredis hands strings over as bytes (Buffer), numbers as their exact text and maps as
 * objects; this turns them into JSON values:
 * - bulk, simple and verbatim strings: text when the bytes are UTF-8, else `{"$base64": "…"}`;
 * - integers: numbers when exact in a double (|n| ≤ 2^53 − 1), else their decimal text; doubles: numbers,
 *   `inf`, `-inf` and `nan` as those strings; big numbers (RESP3 `(`): as integers;
 * - booleans (RESP3 `#`): true/false; nil (RESP2 null bulk/array, RESP3 `_`): null;
 * - arrays and sets: arrays; maps (RESP3 `%`, e.g. HGETALL, CONFIG GET, XINFO): objects.
 */
import { isUtf8 } from 'node:buffer';
import type { JsonValue } from '../../contract/json.ts';
import { BASE64_MARKER } from './redis-body.ts';

const INTEGER = /^[-+]?\d+$/;

/** A number's exact text (ioredis's `stringNumbers`) as a JSON value. */
function numberOf(text: string): JsonValue {
  if (INTEGER.test(text)) {
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : text.replace(/^\+/, '');
  }
  const value = Number(text);
  return Number.isFinite(value) ? value : text;
}

/** One reply value as JSON; an error inside a reply (EXEC's) is the caller's to handle before. */
export function replyToJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) {
    return isUtf8(value) ? value.toString('utf8') : { [BASE64_MARKER]: value.toString('base64') };
  }
  if (typeof value === 'string') return numberOf(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (Array.isArray(value)) return value.map(replyToJson);
  // fromEntries defines own properties: a hash field named __proto__ stays a field.
  if (value instanceof Map) {
    return Object.fromEntries([...value].map(([key, item]) => [String(replyToJson(key)), replyToJson(item)]));
  }
  if (value instanceof Set) return [...value].map(replyToJson);
  if (typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replyToJson(item)]));
  }
  return String(value);
}
