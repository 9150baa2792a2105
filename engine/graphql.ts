/**
 * GraphQL over HTTP, the part that is GraphQL's: a request step with `graphql: {query, variables,
 * operationName}` goes out through the HTTP step's path (auth, redirects, retries, egress, gateway) as a
 * POST with a JSON body, and its answer is read here. Rules, decided here (docs/graphql.md):
 * - The query is text the server parses: no template expression may build it (an input would become
 *   GraphQL, an injection); values go in `variables`, whose string leaves are templates as in a JSON body.
 *   Refused at save (tools/graphql-check.ts) and again here at run time. The operationName's schema
 *   allows a GraphQL name only.
 * - An answer with `errors` and no `data` (absent or null) fails the step with the errors' messages, each
 *   with its path, location and `extensions.code` in a few characters; whatever the HTTP status (a 4xx
 *   answer whose body holds GraphQL errors reads the same way).
 * - An answer with `data` and `errors` succeeds: the step's data is `data`, and each error becomes a note
 *   of the step result (GraphQL nulls the fields that failed, so transforms see null there).
 * - A 2xx answer that is not a GraphQL response (no object with data or errors) fails the step.
 * Pure: no I/O.
 */
import type { GraphqlRequest } from '../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { isJsonObject } from './paths.ts';
import { compileTemplate, type TemplateExpression } from './template.ts';

/** What a GraphQL step asks for (the GraphQL-over-HTTP spec's media type first, plain JSON for older servers). */
export const GRAPHQL_ACCEPT = 'application/graphql-response+json, application/json;q=0.9';

/** Errors a failure message names; the rest are counted. */
const ERRORS_IN_MESSAGE = 5;
/** Errors of one answer that become notes; the rest are counted in one more note. */
const ERRORS_AS_NOTES = 10;
/** Characters kept of one error's message. */
const ERROR_MESSAGE_CHARS = 300;

export interface GraphqlTemplateProblem {
  /** `config.graphql.query`. */
  field: string;
  message: string;
}

function expressionsOf(text: string): string[] {
  try {
    return compileTemplate(text)
      .parts.filter((part): part is TemplateExpression => part.kind !== 'text')
      .map((part) => `<<${part.kind === 'name' ? part.name : part.source}>>`);
  } catch {
    // A template that does not parse is reported by template validation; here it is text.
    return [];
  }
}

/** Template expressions in the query, which must hold none (an operationName is a GraphQL name: the schema). */
export function graphqlTemplateProblems(request: GraphqlRequest): GraphqlTemplateProblem[] {
  const problems: GraphqlTemplateProblem[] = [];
  const query = expressionsOf(request.query);
  if (query.length > 0) {
    problems.push({
      field: 'config.graphql.query',
      message:
        `template expressions are not allowed in a GraphQL query (${query.join(', ')}): the substituted text ` +
        'would become GraphQL (an injection); declare a variable and give its value in variables, e.g. ' +
        `query ($id: ID!) { task(id: $id) { title } } with "variables": {"id": "${query[0]}"}`,
    });
  }
  return problems;
}

/** The JSON body of the POST: the query, the rendered variables, and the operation's name. */
export function graphqlBody(request: GraphqlRequest, variables: JsonObject): JsonObject {
  return {
    query: request.query,
    ...(request.operationName !== undefined ? { operationName: request.operationName } : {}),
    variables,
  };
}

/** One GraphQL error as the answer gives it (only the parts a message uses). */
export interface GraphqlError {
  message: string;
  path?: Array<string | number>;
  locations?: Array<{ line: number; column: number }>;
  code?: string;
}

function parseError(value: JsonValue): GraphqlError {
  if (!isJsonObject(value)) return { message: typeof value === 'string' ? value : JSON.stringify(value) };
  const message = typeof value.message === 'string' ? value.message : JSON.stringify(value);
  const path = Array.isArray(value.path)
    ? value.path.filter(
        (part): part is string | number => typeof part === 'string' || typeof part === 'number',
      )
    : undefined;
  const locations = Array.isArray(value.locations)
    ? value.locations.flatMap((location) =>
        isJsonObject(location) && typeof location.line === 'number' && typeof location.column === 'number'
          ? [{ line: location.line, column: location.column }]
          : [],
      )
    : undefined;
  const extensions = value.extensions;
  const code = isJsonObject(extensions) && typeof extensions.code === 'string' ? extensions.code : undefined;
  return {
    message,
    ...(path?.length ? { path } : {}),
    ...(locations?.length ? { locations } : {}),
    ...(code !== undefined ? { code } : {}),
  };
}

/** `Task 7 not found (at task.assignee, 1:45, NOT_FOUND)`: the message and where, compactly. */
export function describeGraphqlError(error: GraphqlError): string {
  const message =
    error.message.length > ERROR_MESSAGE_CHARS
      ? `${error.message.slice(0, ERROR_MESSAGE_CHARS)}…`
      : error.message;
  const where = [
    error.path ? `at ${error.path.join('.')}` : undefined,
    error.locations?.map((location) => `${location.line}:${location.column}`).join(' '),
    error.code,
  ].filter(Boolean);
  return where.length > 0 ? `${message} (${where.join(', ')})` : message;
}

function listed(errors: readonly GraphqlError[]): string {
  const shown = errors.slice(0, ERRORS_IN_MESSAGE).map(describeGraphqlError);
  const more = errors.length - shown.length;
  return `${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}

/** The errors of an answer that is a GraphQL response, or undefined for one that is not. */
function responseParts(
  answer: JsonValue,
): { data: JsonValue | undefined; errors: GraphqlError[] } | undefined {
  if (!isJsonObject(answer)) return undefined;
  const hasData = Object.hasOwn(answer, 'data');
  const errors = Array.isArray(answer.errors) ? answer.errors.map(parseError) : undefined;
  if (!hasData && errors === undefined) return undefined;
  return { data: hasData ? answer.data : undefined, errors: errors ?? [] };
}

export class GraphqlStepError extends Error {
  override name = 'GraphqlStepError';
}

function snippet(value: JsonValue): string {
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * The step's data from a 2xx answer: its `data`. Errors without data throw GraphqlStepError; errors beside
 * data are told to `onNote`, one note each (at most ERRORS_AS_NOTES, then how many more).
 */
export function graphqlData(answer: JsonValue, onNote: (note: string) => void): JsonValue {
  const parts = responseParts(answer);
  if (!parts) {
    throw new GraphqlStepError(
      `the answer is not a GraphQL response (a JSON object with data or errors): ${snippet(answer)}`,
    );
  }
  if (parts.data === undefined || parts.data === null) {
    if (parts.errors.length === 0)
      throw new GraphqlStepError('the GraphQL answer has neither data nor errors');
    throw new GraphqlStepError(`GraphQL errors and no data: ${listed(parts.errors)}`);
  }
  for (const error of parts.errors.slice(0, ERRORS_AS_NOTES)) {
    onNote(`GraphQL error beside data: ${describeGraphqlError(error)}`);
  }
  if (parts.errors.length > ERRORS_AS_NOTES) {
    onNote(`GraphQL errors beside data: ${parts.errors.length - ERRORS_AS_NOTES} more not listed`);
  }
  return parts.data;
}

/**
 * A non-2xx answer (an HTTP status error carrying the body it read) whose body is a GraphQL response with
 * errors: the error that says so, `HTTP 401 POST <url>: GraphQL errors: …`. Undefined for any other error
 * (which then fails the step as it is).
 */
export function graphqlStatusError(error: unknown): Error | undefined {
  const { status, body, method, url } = error as {
    status?: unknown;
    body?: unknown;
    method?: unknown;
    url?: unknown;
  };
  if (typeof status !== 'number' || typeof body !== 'string') return undefined;
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(body) as JsonValue;
  } catch {
    return undefined;
  }
  const parts = responseParts(parsed);
  if (!parts || parts.errors.length === 0) return undefined;
  const request = typeof method === 'string' && typeof url === 'string' ? ` ${method} ${url}` : '';
  const failure = new GraphqlStepError(`HTTP ${status}${request}: GraphQL errors: ${listed(parts.errors)}`);
  return Object.assign(failure, { status });
}
