/**
 * Template expressions `<<…>>` in request steps (url, headers, queryParams, body).
 *
 * Parsing (`compileTemplate`) splits a string once into literal text and expressions; rendering
 * resolves the expressions against sourceData on every request. JavaScript is never run here:
 * function-form expressions go to an injected `Evaluate` (the isolated-vm sandbox in production).
 *
 * Rules beyond semantics.md, decided here:
 * - An expression is a *function* when its trimmed text starts like one: `function`, `(`, or
 *   `ident =>`, optionally after `async`. Otherwise it is a *name*: one or more letters, digits,
 *   `_ $ @ . : -` (so step ids like `get-users` work). Anything else (`<<a + 1>>`) is rejected when
 *   the template is compiled, which happens at save-time validation too.
 * - The scanner ends an expression at the first `>>` outside quotes, template literals, comments,
 *   regex literals and brackets. A shift therefore has to sit inside brackets
 *   (`<<(s) => (s.n >> 1)>>`); a bare top-level `>>` ends the expression.
 * - `\<<` in literal text is a literal `<<`; no other backslash sequence is special outside expressions.
 * - A header or query value is dropped when it is exactly one expression resolving to null or "",
 *   or when a value containing expressions renders to ""; literal strings are sent as written (even
 *   ""). A literal null in the record and an empty array are dropped too. Array elements that are
 *   null or "" are left out. Header arrays are joined with ", "; query arrays become repeated keys.
 * - In a JSON body, a string leaf that is exactly one expression takes the JSON value of the
 *   expression (a number stays a number, an object stays an object); object keys are not templated.
 */
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { isJsonObject, setOwnKey } from './paths.ts';

/**
 * Runs a JavaScript function source with JSON arguments (the sandbox). `undefined` results are
 * allowed and render as null.
 */
export type Evaluate = (source: string, args: JsonValue[]) => Promise<JsonValue | undefined>;

export type TemplateErrorCode = 'syntax' | 'undefined-variable' | 'evaluation';

export class TemplateError extends Error {
  readonly code: TemplateErrorCode;
  /** Character offset of the `<<` that starts the offending expression. */
  readonly position: number;

  constructor(code: TemplateErrorCode, message: string, position: number, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TemplateError';
    this.code = code;
    this.position = position;
  }
}

export type TemplatePart =
  | { kind: 'text'; text: string }
  | { kind: 'name'; name: string; position: number }
  | { kind: 'function'; source: string; position: number };

export type TemplateExpression = Exclude<TemplatePart, { kind: 'text' }>;

export interface Template {
  readonly text: string;
  /** Literal text (with `\<<` already unescaped) and expressions, in order. */
  readonly parts: readonly TemplatePart[];
  /** The expression when the whole text is exactly one expression, else null. */
  readonly single: TemplateExpression | null;
  readonly hasExpressions: boolean;
}

const FUNCTION_START =
  /^(?:async\s*)?(?:function\b|\(|[\p{ID_Start}_$][\p{ID_Continue}$\u200C\u200D]*\s*=>)/u;
const NAME = /^[\p{L}\p{N}_$@.:-]+$/u;

const CACHE_LIMIT = 1000;
/** Long texts (big bodies) are parsed each time rather than pinned in memory. */
const CACHEABLE_LENGTH = 64 * 1024;
const cache = new Map<string, Template>();

/** Parses `text` (cached, bounded LRU). Throws TemplateError with code `syntax`. */
export function compileTemplate(text: string): Template {
  const cached = cache.get(text);
  if (cached !== undefined) {
    cache.delete(text);
    cache.set(text, cached);
    return cached;
  }
  const template = parseTemplate(text);
  if (text.length <= CACHEABLE_LENGTH) {
    cache.set(text, template);
    if (cache.size > CACHE_LIMIT) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
  }
  return template;
}

/** Every expression in `text`, for save-time validation (compile-check the `function` ones). */
export function listExpressions(text: string): TemplateExpression[] {
  return compileTemplate(text).parts.filter((part): part is TemplateExpression => part.kind !== 'text');
}

/** Every expression in the string leaves of a JSON value (a JSON body or a queryParams record). */
export function listExpressionsInValue(value: JsonValue): TemplateExpression[] {
  if (typeof value === 'string') return listExpressions(value);
  if (Array.isArray(value)) return value.flatMap(listExpressionsInValue);
  if (isJsonObject(value)) return Object.values(value).flatMap(listExpressionsInValue);
  return [];
}

function parseTemplate(text: string): Template {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('<<', i);
    if (open === -1) {
      literal += text.slice(i);
      break;
    }
    if (open > 0 && text[open - 1] === '\\') {
      literal += `${text.slice(i, open - 1)}<<`;
      i = open + 2;
      continue;
    }
    literal += text.slice(i, open);
    if (literal !== '') parts.push({ kind: 'text', text: literal });
    literal = '';
    const close = findExpressionEnd(text, open);
    parts.push(classifyExpression(text.slice(open + 2, close), open));
    i = close + 2;
  }
  if (literal !== '') parts.push({ kind: 'text', text: literal });

  const expressions = parts.filter((part): part is TemplateExpression => part.kind !== 'text');
  const only = parts.length === 1 ? parts[0] : undefined;
  return {
    text,
    parts,
    single: only !== undefined && only.kind !== 'text' ? only : null,
    hasExpressions: expressions.length > 0,
  };
}

function classifyExpression(raw: string, position: number): TemplateExpression {
  const source = raw.trim();
  if (source === '') {
    throw new TemplateError('syntax', `Empty template expression '<<>>' at position ${position}`, position);
  }
  if (FUNCTION_START.test(source)) return { kind: 'function', source, position };
  if (NAME.test(source)) return { kind: 'name', name: source, position };
  throw new TemplateError(
    'syntax',
    `Template expression '<<${abbreviate(source)}>>' at position ${position} is neither a key name nor a function; ` +
      'use <<name>> or <<(sourceData) => expression>>',
    position,
  );
}

type Frame = '(' | '[' | '{' | '${' | '`';

/** Characters after which a `/` starts a regex literal rather than a division. */
const REGEX_PRECEDERS = new Set([
  '',
  '(',
  ',',
  '=',
  ':',
  '[',
  '!',
  '&',
  '|',
  '?',
  '{',
  '}',
  ';',
  '+',
  '-',
  '*',
  '%',
  '<',
  '>',
  '~',
  '^',
]);

/**
 * Returns the index of the `>>` that closes the expression opened at `open`. Quotes, template
 * literals (with `${}` nesting), comments, regex literals and brackets are skipped, so a `>>`
 * inside any of them does not count.
 */
function findExpressionEnd(text: string, open: number): number {
  const unterminated = (what: string): TemplateError =>
    new TemplateError(
      'syntax',
      `Unterminated template expression: '<<' at position ${open} has no matching '>>'${what}`,
      open,
    );
  const stack: Frame[] = [];
  // Last non-space code character, to tell a regex literal from a division.
  let previous = '';
  let i = open + 2;
  while (i < text.length) {
    const ch = text[i]!;
    const top = stack[stack.length - 1];
    if (top === '`') {
      if (ch === '\\') i += 2;
      else if (ch === '`') {
        stack.pop();
        previous = ')';
        i += 1;
      } else if (ch === '$' && text[i + 1] === '{') {
        stack.push('${');
        previous = '{';
        i += 2;
      } else i += 1;
      continue;
    }
    if (stack.length === 0 && ch === '>' && text[i + 1] === '>') return i;
    switch (ch) {
      case '"':
      case "'": {
        i = skipQuoted(text, i);
        if (i === -1) throw unterminated(' (unclosed string)');
        previous = ')';
        continue;
      }
      case '`':
        stack.push('`');
        i += 1;
        continue;
      case '(':
      case '[':
      case '{':
        stack.push(ch);
        previous = ch;
        i += 1;
        continue;
      case ')':
      case ']':
      case '}':
        if (top !== undefined) stack.pop();
        previous = ch === '}' ? '}' : ')';
        i += 1;
        continue;
      case '/': {
        const next = text[i + 1];
        if (next === '/') {
          const newline = text.indexOf('\n', i);
          if (newline === -1) throw unterminated(' (a // comment runs to the end of the text)');
          i = newline + 1;
          continue;
        }
        if (next === '*') {
          const end = text.indexOf('*/', i + 2);
          if (end === -1) throw unterminated(' (unclosed /* comment)');
          i = end + 2;
          continue;
        }
        if (REGEX_PRECEDERS.has(previous)) {
          const end = skipRegex(text, i);
          if (end !== -1) {
            i = end;
            previous = ')';
            continue;
          }
        }
        previous = '/';
        i += 1;
        continue;
      }
      default:
        if (!/\s/.test(ch)) previous = /[\p{ID_Continue}$]/u.test(ch) ? ')' : ch;
        i += 1;
    }
  }
  throw unterminated(stack.length > 0 ? ` (unclosed '${stack[stack.length - 1]}')` : '');
}

/** Index after the closing quote of the string starting at `start`, or -1 if it never closes. */
function skipQuoted(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') i += 2;
    else if (ch === quote) return i + 1;
    else if (ch === '\n') return -1;
    else i += 1;
  }
  return -1;
}

/** Index after a regex literal starting at `start`, or -1 when it is not one (no close on the line). */
function skipRegex(text: string, start: number): number {
  let inClass = false;
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') i += 2;
    else if (ch === '\n') return -1;
    else if (inClass) {
      if (ch === ']') inClass = false;
      i += 1;
    } else if (ch === '[') {
      inClass = true;
      i += 1;
    } else if (ch === '/') {
      i += 1;
      while (i < text.length && /[a-z]/i.test(text[i]!)) i += 1;
      return i;
    } else i += 1;
  }
  return -1;
}

function abbreviate(source: string): string {
  return source.length > 60 ? `${source.slice(0, 57)}...` : source;
}

// ---------------------------------------------------------------------------------------------
// Rendering

/** The name an `undefined-variable` error is about (kept aside: the error's own fields are its contract). */
const undefinedNames = new WeakMap<TemplateError, string>();

export function undefinedVariableOf(error: unknown): string | undefined {
  return error instanceof TemplateError ? undefinedNames.get(error) : undefined;
}

/** The JSON value of one expression (a name looked up, a function evaluated in the sandbox). */
export async function resolveExpression(
  expression: TemplateExpression,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<JsonValue> {
  if (expression.kind === 'name') {
    if (Object.hasOwn(sourceData, expression.name)) return sourceData[expression.name]!;
    const error = new TemplateError(
      'undefined-variable',
      `Template variable '${expression.name}' is not defined; available keys: ${describeKeys(sourceData)}`,
      expression.position,
    );
    undefinedNames.set(error, expression.name);
    throw error;
  }
  let value: JsonValue | undefined;
  try {
    value = await evaluate(expression.source, [sourceData]);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new TemplateError(
      'evaluation',
      `Template expression '<<${abbreviate(expression.source)}>>' failed: ${message}`,
      expression.position,
      { cause: error },
    );
  }
  return value === undefined ? null : value;
}

const LISTED_KEYS_LIMIT = 100;

/** Key names only (sorted), never values, so credentials stay secret. */
function describeKeys(sourceData: JsonObject): string {
  const keys = Object.keys(sourceData).sort();
  if (keys.length === 0) return '(none)';
  if (keys.length <= LISTED_KEYS_LIMIT) return keys.join(', ');
  return `${keys.slice(0, LISTED_KEYS_LIMIT).join(', ')}, … (${keys.length - LISTED_KEYS_LIMIT} more)`;
}

/** Strings as is; numbers and booleans with String(); objects, arrays and null as JSON. */
export function renderScalar(value: JsonValue | undefined): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value ?? null);
}

async function renderTemplateText(
  template: Template,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<string> {
  let out = '';
  // Sequential on purpose: expressions run in the order they are written.
  for (const part of template.parts) {
    out +=
      part.kind === 'text' ? part.text : renderScalar(await resolveExpression(part, sourceData, evaluate));
  }
  return out;
}

/** Renders `text` to a string. Substituted values are never scanned again. */
export async function renderString(
  text: string,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<string> {
  return renderTemplateText(compileTemplate(text), sourceData, evaluate);
}

/**
 * Renders `text` keeping the JSON type when the whole text is exactly one expression
 * (so `<<ids>>` can be an array and `<<token>>` can be null); otherwise renders to a string.
 */
export async function renderValue(
  text: string,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<JsonValue> {
  const template = compileTemplate(text);
  if (template.single !== null) return resolveExpression(template.single, sourceData, evaluate);
  return renderTemplateText(template, sourceData, evaluate);
}

/** Resolves every string leaf of a JSON value; a leaf that is exactly one expression keeps the value's type. */
export async function renderJson(
  value: JsonValue,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<JsonValue> {
  if (typeof value === 'string') return renderValue(value, sourceData, evaluate);
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    for (const item of value) out.push(await renderJson(item, sourceData, evaluate));
    return out;
  }
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      setOwnKey(out, key, await renderJson(item, sourceData, evaluate));
    }
    return out;
  }
  return value;
}

/** A string body renders as text; a JSON body resolves every string leaf (see renderJson). */
export async function renderBody(
  body: string | JsonValue,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<JsonValue> {
  if (typeof body === 'string') return renderString(body, sourceData, evaluate);
  return renderJson(body, sourceData, evaluate);
}

const DROPPED = Symbol('dropped');

/**
 * One header or query value: the rendered value, or DROPPED when it resolved to null/""
 * (see the drop rule at the top of this file). Arrays are kept for the caller to expand.
 */
async function renderParameter(
  value: JsonValue,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<JsonValue | typeof DROPPED> {
  if (value === null) return DROPPED;
  if (typeof value !== 'string') return renderJson(value, sourceData, evaluate);
  const template = compileTemplate(value);
  if (!template.hasExpressions) return renderTemplateText(template, sourceData, evaluate);
  const rendered =
    template.single !== null
      ? await resolveExpression(template.single, sourceData, evaluate)
      : await renderTemplateText(template, sourceData, evaluate);
  return rendered === null || rendered === '' ? DROPPED : rendered;
}

/**
 * The strings a rendered header or query value stands for. A non-array value is one string (the
 * drop rule was applied by renderParameter). An array gives one string per element; null and ""
 * elements are dropped like whole values, and an element that is itself an array (an expression
 * inside a written array that produced an array) is flattened one level.
 */
function parameterStrings(value: JsonValue): string[] {
  if (!Array.isArray(value)) return [renderScalar(value)];
  const out: string[] = [];
  for (const element of value) {
    const items = Array.isArray(element) ? element : [element];
    for (const item of items) if (item !== null && item !== '') out.push(renderScalar(item));
  }
  return out;
}

/**
 * Header values. Names are literal. Dropped values (see top of file) are left out; an array
 * value is joined with ", " (the HTTP list syntax), an empty array drops the header.
 */
export async function renderHeaders(
  headers: Readonly<Record<string, JsonValue>>,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers)) {
    const rendered = await renderParameter(raw, sourceData, evaluate);
    if (rendered === DROPPED) continue;
    const values = parameterStrings(rendered);
    if (values.length === 0) continue;
    setOwnKey(out, name, values.join(', '));
  }
  return out;
}

/**
 * Query parameters as ordered pairs. Names are literal. Dropped values are left out; an array
 * (written in the record or produced by an expression) becomes one pair per element, with a
 * string element that is itself a template rendered too.
 */
export async function renderQuery(
  queryParams: Readonly<Record<string, JsonValue>>,
  sourceData: JsonObject,
  evaluate: Evaluate,
): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const [name, raw] of Object.entries(queryParams)) {
    const rendered = await renderParameter(raw, sourceData, evaluate);
    if (rendered === DROPPED) continue;
    for (const text of parameterStrings(rendered)) out.push([name, text]);
  }
  return out;
}
