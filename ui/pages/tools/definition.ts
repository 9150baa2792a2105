/**
 * The tool definition as the builder edits it: a plain JSON object changed one field at a time, so that a
 * field the builder has no control for (an unknown one, `instruction`, a step's `graphql`) passes through
 * untouched and in its place. The JSON text stays the one source: the builder parses it, changes a copy
 * and writes it back; switching views never rewrites what the user did not edit.
 */

import { type ErrorIssue, formatIssuePath } from '../../../contract/api/errors/issues.ts';

export type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What the JSON editors say of a definition that is JSON but not an object. */
export const DEFINITION_NOT_OBJECT = 'the definition must be a JSON object: { "id": …, "steps": […] }';

/** The definition in the text, or why the builder cannot show it. */
export function parseDefinition(
  text: string,
): { ok: true; value: JsonObject } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (caught) {
    return { ok: false, message: `the JSON does not parse: ${(caught as Error).message}` };
  }
  if (!isObject(value)) return { ok: false, message: 'the definition must be a JSON object' };
  if (value.steps !== undefined && !Array.isArray(value.steps)) {
    return { ok: false, message: '"steps" must be an array' };
  }
  if (Array.isArray(value.steps) && !value.steps.every(isObject)) {
    return { ok: false, message: 'every step must be an object' };
  }
  return { ok: true, value };
}

/** The text the builder writes: as the editor shows a saved definition. */
export const formatDefinition = (value: JsonObject): string => JSON.stringify(value, null, 2);

/** A copy of `object` with `key` set (in its place when present, else last), or removed when undefined. */
export function withField(object: JsonObject, key: string, value: unknown): JsonObject {
  if (value === undefined) {
    const { [key]: _removed, ...rest } = object;
    return rest;
  }
  return { ...object, [key]: value };
}

export const stepsOf = (definition: JsonObject): JsonObject[] =>
  Array.isArray(definition.steps) ? (definition.steps as JsonObject[]) : [];

export const configOf = (step: JsonObject): JsonObject => (isObject(step.config) ? step.config : {});

export const isTransform = (step: JsonObject): boolean => configOf(step).type === 'transform';

/** A copy of the definition with step `index` replaced by what `change` makes of it. */
export function withStep(definition: JsonObject, index: number, change: (step: JsonObject) => JsonObject) {
  const steps = stepsOf(definition).map((step, at) => (at === index ? change(step) : step));
  return withField(definition, 'steps', steps);
}

/** A copy with step `index`'s config field `key` set, or removed when undefined. */
export const withConfigField = (definition: JsonObject, index: number, key: string, value: unknown) =>
  withStep(definition, index, (step) => withField(step, 'config', withField(configOf(step), key, value)));

/** A step id not yet in the definition: `base`, else `base2`, `base3`, … */
export function freshStepId(definition: JsonObject, base: string): string {
  const taken = new Set(stepsOf(definition).map((step) => step.id));
  if (!taken.has(base)) return base;
  let n = 2;
  while (taken.has(`${base}${n}`)) n++;
  return `${base}${n}`;
}

export type StepKind = 'request' | 'transform';

/** A new step of `kind` at the end. */
export function withNewStep(definition: JsonObject, kind: StepKind): JsonObject {
  const step =
    kind === 'transform'
      ? {
          id: freshStepId(definition, 'transform'),
          config: { type: 'transform', transformCode: '(sourceData) => sourceData' },
        }
      : { id: freshStepId(definition, 'request'), config: { url: '', method: 'GET' } };
  return withField(definition, 'steps', [...stepsOf(definition), step]);
}

export const withoutStep = (definition: JsonObject, index: number) =>
  withField(
    definition,
    'steps',
    stepsOf(definition).filter((_step, at) => at !== index),
  );

/** Step `index` moved by `by` places (−1 up, +1 down); unchanged at either end. */
export function withStepMoved(definition: JsonObject, index: number, by: -1 | 1): JsonObject {
  const steps = [...stepsOf(definition)];
  const to = index + by;
  const moving = steps[index];
  if (moving === undefined || to < 0 || to >= steps.length) return definition;
  steps.splice(index, 1);
  steps.splice(to, 0, moving);
  return withField(definition, 'steps', steps);
}

/** An API issue as the builder places it: the step's index and the field below the step. */
export interface PlacedIssue {
  step: number | undefined;
  /** The rest of the path, e.g. `config.transformCode` (empty for the step or the tool itself). */
  field: string;
  /** The message, with the line and column inside the field's code when the API gave them. */
  message: string;
}

/**
 * Where an issue of the API belongs: `steps[1].config.transformCode` (of a saved body, or under `tool` in
 * a try's body) is step 1's `config.transformCode`.
 */
export function placeIssue(issue: ErrorIssue): PlacedIssue {
  const path = issue.path[0] === 'tool' ? issue.path.slice(1) : issue.path;
  const where =
    issue.line !== undefined ? ` (line ${issue.line}${issue.column ? `, column ${issue.column}` : ''})` : '';
  const message = `${issue.message}${where}`;
  if (path[0] !== 'steps' || typeof path[1] !== 'number')
    return { step: undefined, field: formatIssuePath(path), message };
  return { step: path[1], field: formatIssuePath(path.slice(2)), message };
}

/** The protocol a step URL names by its scheme, for the body hint; `http` without a scheme (a system path). */
export function protocolOfUrl(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case undefined:
    case 'http':
    case 'https':
      return 'http';
    case 'postgres':
    case 'postgresql':
      return 'postgres';
    case 'mysql':
    case 'mariadb':
      return 'mysql';
    case 'redis':
    case 'rediss':
      return 'redis';
    case 'ftp':
    case 'ftps':
      return 'ftp';
    case 'sftp':
      return 'sftp';
    case 'smb':
      return 'smb';
    default:
      return 'unknown';
  }
}

/** What the body of a request step to `protocol` looks like (docs/tools.md, contract/api/tool.ts). */
export const BODY_HINTS: Readonly<Record<string, string>> = {
  http: 'Any content: text, or JSON sent as application/json. For GraphQL, set the step\'s "graphql" in the JSON view.',
  postgres: '{"query": "SELECT * FROM users WHERE id = $1", "params": ["<<id>>"]}',
  mysql: '{"query": "SELECT * FROM users WHERE id = ?", "params": ["<<id>>"]}',
  redis:
    '{"command": "HGETALL", "args": ["user:<<id>>"]} or {"commands": [["GET", "a"]], "transaction": false}',
  ftp: '{"operation": "list|get|put|delete|rename|mkdir|exists|stat", "path": "/in", "content": "…"}',
  sftp: '{"operation": "list|get|put|delete|rename|mkdir|exists|stat", "path": "/in", "content": "…"}',
  smb: '{"operation": "list|get|put|delete|rename|mkdir|exists|stat", "path": "/in", "content": "…"}',
  unknown: 'A scheme no step speaks: http(s), postgres, mysql/mariadb, redis(s), ftp(s), sftp, smb.',
};
