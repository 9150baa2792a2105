import type { z } from 'zod';

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/** One line per issue, each naming the field: `steps[0].id: Invalid input: expected string, received undefined`. */
export function formatIssues(error: z.ZodError, prefix?: string): string {
  return error.issues
    .map((issue) => {
      const path = formatPath([...(prefix ? [prefix] : []), ...issue.path]);
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}
