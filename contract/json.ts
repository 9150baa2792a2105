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

/**
 * An instant, as every /v1 body and query states one: ISO 8601 date-time with an offset (`Z` or `+02:00`).
 * JSON has no date type; this is the one place the API's instants get their format.
 */
export const Instant = z.iso.datetime({ offset: true });
