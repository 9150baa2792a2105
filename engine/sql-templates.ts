/**
 * Postgres steps must not build SQL text from templates: a value substituted into the SQL is an injection
 * waiting to happen. Values go through parameters (`$1` in the query, the value in `params` of an object
 * body), where templates stay allowed. A body given as text (plain SQL, or JSON text) is rendered by text
 * substitution, so an expression anywhere in it could rewrite the SQL — in JSON text a value can close its
 * string and add its own "query" — and such bodies may hold no expression at all. Pure; the engine refuses
 * at run time, tool validation at save time.
 */

import type { RequestStepConfig } from '../contract/api/tool.ts';
import type { JsonValue } from '../contract/json.ts';
import { isJsonObject } from './paths.ts';
import { compileTemplate, type TemplateExpression } from './template.ts';

export interface SqlTemplateProblem {
  /** The field of the step holding the text: `config.body.query` or `config.body`. */
  field: string;
  /** The expressions as written, `<<id>>`. */
  expressions: string[];
  message: string;
}

function written(expression: TemplateExpression): string {
  return `<<${expression.kind === 'name' ? expression.name : expression.source}>>`;
}

function expressionsOf(text: string): string[] {
  try {
    return compileTemplate(text)
      .parts.filter((part): part is TemplateExpression => part.kind !== 'text')
      .map(written);
  } catch {
    // A template that does not parse is reported by template validation, and fails rendering.
    return [];
  }
}

const HINT = (first: string) =>
  `write $1, $2, … in the query and give the values in "params" of an object body, e.g. ` +
  `{"query": "SELECT … WHERE id = $1", "params": ["${first}"]}`;

/** Problems of a Postgres step body, as written (before rendering). */
export function sqlBodyTemplateProblems(body: string | JsonValue | undefined): SqlTemplateProblem[] {
  if (typeof body === 'string') {
    const expressions = expressionsOf(body);
    if (expressions.length === 0) return [];
    return [
      {
        field: 'config.body',
        expressions,
        message:
          `template expressions are not allowed in a Postgres body given as text (${expressions.join(', ')}): ` +
          `the substituted text could change the SQL (SQL injection); ${HINT(expressions[0] as string)}`,
      },
    ];
  }
  if (isJsonObject(body ?? null) && typeof (body as { query?: unknown }).query === 'string') {
    const expressions = expressionsOf((body as { query: string }).query);
    if (expressions.length === 0) return [];
    return [
      {
        field: 'config.body.query',
        expressions,
        message:
          `template expressions are not allowed in SQL text (${expressions.join(', ')}): the value would become ` +
          `part of the SQL (SQL injection); ${HINT(expressions[0] as string)}`,
      },
    ];
  }
  return [];
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
const POSTGRES_SCHEMES = new Set(['postgres', 'postgresql']);

/**
 * Whether a step is a Postgres step as far as can be seen without running it: its own scheme, else (a
 * relative URL) any of its system's URLs (variants of one system may differ). A URL that starts with an
 * expression is only known when rendered, and judged at run time.
 */
export function isPostgresStep(config: RequestStepConfig, systemUrls: readonly string[]): boolean {
  const url = config.url.trim();
  if (url.startsWith('<<')) return false;
  const own = SCHEME.exec(url)?.[1];
  if (own !== undefined) return POSTGRES_SCHEMES.has(own.toLowerCase());
  return systemUrls.some((systemUrl) =>
    POSTGRES_SCHEMES.has(SCHEME.exec(systemUrl.trim())?.[1]?.toLowerCase() ?? ''),
  );
}

/** Message of a run-time refusal. */
export function sqlTemplateError(problems: SqlTemplateProblem[]): Error {
  return new Error(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
}
