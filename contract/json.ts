import { z } from 'zod';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const JsonValue: z.ZodType<JsonValue> = z
  .lazy(() =>
    z.union([
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      z.array(JsonValue),
      z.record(z.string(), JsonValue),
    ]),
  )
  .meta({ id: 'JsonValue', description: 'Any JSON value.' });
export const JsonObject = z.record(z.string(), JsonValue);

/** The JSON value the text holds, or undefined when it is not JSON (what a peer sent, a file's text). */
export function parseJsonOrUndefined(text: string): JsonValue | undefined {
  try {
    // JSON.parse only ever yields JSON values; re-validating a large text would only cost time.
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

/**
 * An instant, as every /v1 body and query states one: ISO 8601 date-time with an offset (`Z` or `+02:00`).
 * JSON has no date type; this is the one place the API's instants get their format.
 */
export const Instant = z.iso.datetime({ offset: true });
