/**
 * What an error answer of the API is: `{ error: { message, code, hint } }`, the catalog's code and message
 * with its hint (contract/api/errors.ts; docs/errors.md), and nothing else.
 */
import { expect } from 'vitest';

/** The body of the error answer with this code and message (a string, or an asymmetric matcher). */
export function catalogError(code: string, message: unknown): unknown {
  return { error: { message, code, hint: expect.any(String) } };
}
