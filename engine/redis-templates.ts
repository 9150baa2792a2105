/**
 * Redis steps take their commands as arrays, one element per argument, and templates fill elements only:
 * `{"command": "HGETALL", "args": ["user:<<userId>>"]}`. A body given as text (JSON text) is rendered by text
 * substitution, where a value could close its string and add arguments or whole commands, so such a body
 * may hold no expression at all. Pure; the engine refuses at run time, tool validation at save time.
 */
import type { RequestStepConfig } from '../contract/api/tool.ts';
import type { JsonValue } from '../contract/json.ts';
import { protocolsSeen } from '../contract/step-protocols.ts';
import { compileTemplate, type TemplateExpression } from './template.ts';

export interface RedisTemplateProblem {
  field: string;
  message: string;
}

function written(expression: TemplateExpression): string {
  return `<<${expression.kind === 'name' ? expression.name : expression.source}>>`;
}

/** Problems of a Redis step body, as written (before rendering). */
export function redisBodyTemplateProblems(body: string | JsonValue | undefined): RedisTemplateProblem[] {
  if (typeof body !== 'string') return [];
  let expressions: string[];
  try {
    expressions = compileTemplate(body)
      .parts.filter((part): part is TemplateExpression => part.kind !== 'text')
      .map(written);
  } catch {
    // A template that does not parse is reported by template validation, and fails rendering.
    return [];
  }
  if (expressions.length === 0) return [];
  return [
    {
      field: 'config.body',
      message:
        `template expressions are not allowed in a Redis body given as text (${expressions.join(', ')}): the ` +
        'substituted text could add arguments or commands; write the body as an object, where each <<…>> fills ' +
        `one argument, e.g. {"command": "GET", "args": ["${expressions[0]}"]}`,
    },
  ];
}

/**
 * Whether a step is a Redis step as far as can be seen without running it: its own scheme, else (a relative
 * URL) any of its system's URLs. A URL that starts with an expression is judged at run time.
 */
export function isRedisStep(config: RequestStepConfig, systemUrls: readonly string[]): boolean {
  return protocolsSeen(config.url, systemUrls).includes('redis');
}

/** Message of a run-time refusal. */
export function redisTemplateError(problems: RedisTemplateProblem[]): Error {
  return new Error(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
}
