import type { z } from 'zod';
import type { WireObject } from './interface.ts';
import type { ValidationResult } from './kinds.ts';

/** A KindSpec.validate hook from a zod schema of the whole resource; messages name the failing fields. */
export function validateWith<T extends WireObject>(schema: z.ZodType): (obj: T) => ValidationResult {
  return (obj) => {
    const result = schema.safeParse(obj);
    if (result.success) return { ok: true };
    const message = result.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '<root>'}: ${issue.message}`)
      .join(', ');
    return { ok: false, message };
  };
}
