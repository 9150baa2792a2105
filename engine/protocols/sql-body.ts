/**
 * The body of an SQL step (Postgres, MySQL): `{ "query": "...", "params": [...] }` (`values` accepted for
 * `params`), that object as JSON text, or plain SQL without parameters. Values are only ever bound by the
 * driver; the text is never changed here.
 */
import { z } from 'zod';
import type { JsonValue } from '../../contract/json.ts';

const QueryBody = z
  .object({
    query: z.string().trim().min(1, 'query must not be empty'),
    params: z.array(z.json()).optional(),
    values: z.array(z.json()).optional(),
  })
  .refine((body) => body.params === undefined || body.values === undefined, {
    message: 'give either params or values, not both',
  });

export interface SqlQuery {
  text: string;
  params: JsonValue[];
}

/**
 * The query of a body; `invalid(message)` makes the protocol's own error for a body that is not one.
 * `example` is the placeholder form the message shows (`$1`, `?`).
 */
export function parseSqlBody(body: unknown, invalid: (message: string) => Error, example: string): SqlQuery {
  const fromObject = (value: unknown): SqlQuery => {
    const parsed = QueryBody.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`,
      );
      throw invalid(`expected { "query": "... ${example} ...", "params": [...] }; ${issues.join('; ')}`);
    }
    return { text: parsed.data.query, params: parsed.data.params ?? parsed.data.values ?? [] };
  };
  if (typeof body === 'string') {
    const trimmed = body.trim();
    if (trimmed === '') throw invalid('the SQL text is empty');
    if (trimmed.startsWith('{')) {
      let json: unknown;
      try {
        json = JSON.parse(trimmed);
      } catch {
        throw invalid('it starts with "{" but is not valid JSON');
      }
      return fromObject(json);
    }
    return { text: trimmed, params: [] };
  }
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) return fromObject(body);
  throw invalid('expected an object with "query" or an SQL string');
}
