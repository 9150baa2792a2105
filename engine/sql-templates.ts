/**
 * SQL steps (Postgres, MySQL/MariaDB) must not build SQL text from templates: a value substituted into the SQL
 * is an injection waiting to happen. Values go through parameters (`$1` or `?` in the query, the value in
 * `params` of an object body), where templates stay allowed. A body given as text (plain SQL, or JSON text) is rendered by text
 * substitution, so an expression anywhere in it could rewrite the SQL — in JSON text a value can close its
 * string and add its own "query" — and such bodies may hold no expression at all. Pure; the engine refuses
 * at run time, tool validation at save time.
 */

import type { RequestStepConfig } from '../contract/api/tool.ts';
import type { JsonValue } from '../contract/json.ts';
import { protocolsSeen } from '../contract/step-protocols.ts';
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

/** The SQL steps: each names its protocol and its placeholders in messages. */
export type SqlDialect = 'postgres' | 'mysql';

const DIALECTS: Readonly<Record<SqlDialect, { name: string; placeholders: string; first: string }>> = {
  postgres: { name: 'Postgres', placeholders: '$1, $2, …', first: '$1' },
  mysql: { name: 'MySQL', placeholders: '?', first: '?' },
};

const HINT = (dialect: SqlDialect, first: string) =>
  `write ${DIALECTS[dialect].placeholders} in the query and give the values in "params" of an object body, e.g. ` +
  `{"query": "SELECT … WHERE id = ${DIALECTS[dialect].first}", "params": ["${first}"]}`;

/** Problems of an SQL step body, as written (before rendering). */
export function sqlBodyTemplateProblems(
  body: string | JsonValue | undefined,
  dialect: SqlDialect = 'postgres',
): SqlTemplateProblem[] {
  if (typeof body === 'string') {
    const expressions = expressionsOf(body);
    if (expressions.length === 0) return [];
    return [
      {
        field: 'config.body',
        expressions,
        message:
          `template expressions are not allowed in a ${DIALECTS[dialect].name} body given as text (${expressions.join(', ')}): ` +
          `the substituted text could change the SQL (SQL injection); ${HINT(dialect, expressions[0] as string)}`,
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
          `part of the SQL (SQL injection); ${HINT(dialect, expressions[0] as string)}`,
      },
    ];
  }
  return [];
}

/**
 * Which SQL a step speaks as far as can be seen without running it: its own scheme, else (a relative URL)
 * its system's URLs (variants of one system may differ; the first SQL one decides). A URL that starts with
 * an expression is only known when rendered, and judged at run time.
 */
export function sqlStepDialect(
  config: RequestStepConfig,
  systemUrls: readonly string[],
): SqlDialect | undefined {
  return protocolsSeen(config.url, systemUrls).find(
    (protocol): protocol is SqlDialect => protocol === 'postgres' || protocol === 'mysql',
  );
}

/** Message of a run-time refusal. */
export function sqlTemplateError(problems: SqlTemplateProblem[]): Error {
  return new Error(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
}
