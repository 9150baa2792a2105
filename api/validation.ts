import type { z } from 'zod';
import { KG_ERR_VALIDATION } from '../contract/api/errors.ts';
import { zodIssues } from '../contract/format-issues.ts';

/** Parses external input with a zod schema; a failure is a 400 naming every bad field (and its path). */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw KG_ERR_VALIDATION(what, zodIssues(result.error, undefined, schema));
}
