/** Database values as JSON without losing precision: what SQL steps (Postgres, MySQL) share. */
import type { JsonValue } from '../../contract/json.ts';

/** Significant digits a double holds exactly. */
const MAX_EXACT_DIGITS = 15;

/** An integer's text as a number when it is a safe integer, else the exact decimal text. */
export function safeInteger(text: string): number | string {
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : text;
}

/** An exact decimal's text as a number when at most 15 significant digits (exact in a double), else the text. */
export function exactDecimal(text: string): number | string {
  const digits = text
    .replace(/^[-+]?0*/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  const value = Number(text);
  return Number.isFinite(value) && digits.length <= MAX_EXACT_DIGITS ? value : text;
}

/**
 * What a driver's own conversions leave, as JSON: binary as base64 (Postgres bytea, MySQL binary strings),
 * big integers exact, dates as ISO text, and the objects and arrays a driver parsed (JSON, geometry).
 */
export function sqlValueJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return safeInteger(value.toString());
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Array.isArray(value)) return value.map(sqlValueJson);
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) out[key] = sqlValueJson(item);
    return out;
  }
  return String(value);
}
