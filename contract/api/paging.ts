import { z } from 'zod';

/**
 * The `limit` of a list query: a positive integer, `fallback` when absent, and clamped to `max` rather than
 * refused above it, so a client asking for "as many as allowed" (superglue's CLI sends limit=1000) gets a
 * full page; the response's `limit` says what was used.
 */
export function pageLimit(fallback: number, max: number) {
  return z.coerce
    .number()
    .int()
    .min(1)
    .default(fallback)
    .transform((limit) => Math.min(limit, max))
    .describe(`Default ${fallback}; values above ${max} are clamped to ${max}.`);
}
