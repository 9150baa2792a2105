/**
 * Rendering a request step's URL so that substituted values cannot change more of the URL than the tool
 * author meant them to.
 *
 * - An expression at the very start of the URL inserts its value as is: it may supply the scheme, host,
 *   path and query (`<<base_url>>/users`, `<<(s) => s.next>>`). The author wrote it so explicitly.
 * - Every other expression is percent-encoded for where it stands: in the path as one path segment
 *   (`/`, `?`, `#`, `%`… encoded; a segment that would come out as `.` or `..` fails the step), in the
 *   query and the fragment as a query value (`&`, `=`, `#`, `+`… encoded). Numbers and plain words encode
 *   as themselves.
 * - In the userinfo (`postgres://app:<<db_password>>@db/app`) a value is encoded as userinfo, so it
 *   cannot end it (`@`, `:`, `/` are encoded).
 * - An expression inside the scheme, the host or the port (`https://<<tenant>>.example.com`) fails the
 *   step: write the whole origin as one leading expression instead
 *   (`<<(s) => "https://" + s.tenant + ".example.com">>/x`).
 */
import type { JsonObject } from '../contract/json.ts';
import {
  compileTemplate,
  type Evaluate,
  renderScalar,
  resolveExpression,
  TemplateError,
  type TemplateExpression,
  type TemplatePart,
} from './template.ts';

type Position = 'start' | 'authority' | 'path' | 'query' | 'fragment';

/** Where the next character of a URL whose text so far is `text` would go. */
function positionAfter(text: string): Position {
  if (text === '') return 'start';
  if (text.includes('#')) return 'fragment';
  if (text.includes('?')) return 'query';
  // `scheme:`, `scheme:/`, `scheme://host…` and `//host…` (no path yet) are still in the authority.
  if (/^[a-z][a-z0-9+.-]*:(\/\/[^/]*|\/?)$/i.test(text) || /^\/\/[^/]*$/.test(text)) return 'authority';
  return 'path';
}

export class UrlTemplateError extends TemplateError {
  constructor(message: string, position: number) {
    super('syntax', message, position);
    this.name = 'UrlTemplateError';
  }
}

/**
 * Whether the expression at `index` (in the authority) is in the userinfo: an `@` follows in the literal
 * text before the authority ends.
 */
function inUserinfo(parts: readonly TemplatePart[], index: number): boolean {
  for (const part of parts.slice(index + 1)) {
    if (part.kind !== 'text') continue;
    const end = part.text.search(/[/?#]/);
    const authorityText = end === -1 ? part.text : part.text.slice(0, end);
    if (authorityText.includes('@')) return true;
    if (end !== -1) return false;
  }
  return false;
}

function expressionText(expression: TemplateExpression): string {
  const source = expression.kind === 'name' ? expression.name : expression.source;
  return `<<${source.length > 60 ? `${source.slice(0, 57)}...` : source}>>`;
}

function authorityError(expression: TemplateExpression): UrlTemplateError {
  return new UrlTemplateError(
    `Template expression ${expressionText(expression)} at position ${expression.position} is inside the ` +
      'scheme or host of the URL; only an expression at the very start of the URL may supply them ' +
      '(write the whole origin as one expression, e.g. <<(s) => "https://" + s.tenant + ".example.com">>/path)',
    expression.position,
  );
}

/**
 * Problems of a URL template that can be seen without running it (save-time validation): expressions
 * inside the scheme or host. Throws TemplateError for a template that does not parse.
 */
export function urlTemplateProblems(url: string): string[] {
  const parts = compileTemplate(url).parts;
  let text = '';
  const problems: string[] = [];
  for (const [index, part] of parts.entries()) {
    if (part.kind === 'text') {
      text += part.text;
      continue;
    }
    // A leading expression supplies text we cannot know; whatever follows it is judged at run time.
    if (index === 0) return [];
    if (positionAfter(text) === 'authority' && !inUserinfo(parts, index)) {
      problems.push(authorityError(part).message);
    }
    // A placeholder keeps the position moving the way a value without structure would.
    text += 'x';
  }
  return problems;
}

function isDotSegment(segment: string): boolean {
  const decoded = segment.replace(/%2e/gi, '.');
  return decoded === '.' || decoded === '..';
}

/** The range of the path within `url` (after the authority, before `?`/`#`). */
function pathRange(url: string): [number, number] {
  const end = url.search(/[?#]/);
  const stop = end === -1 ? url.length : end;
  const authority = /^(?:[a-z][a-z0-9+.-]*:)?\/\/[^/?#]*/i.exec(url);
  return [authority ? authority[0].length : 0, stop];
}

/** Fails when a path segment that contains substituted text is a dot segment (it would climb the path). */
function checkDotSegments(url: string, substituted: Array<[number, number, TemplateExpression]>): void {
  const [start, stop] = pathRange(url);
  let segmentStart = start;
  for (let i = start; i <= stop; i++) {
    if (i < stop && url[i] !== '/') continue;
    const segment = url.slice(segmentStart, i);
    if (isDotSegment(segment)) {
      const inside = substituted.find(([from, to]) => from < i && to > segmentStart);
      if (inside) {
        throw new UrlTemplateError(
          `Template expression ${expressionText(inside[2])} makes the URL path segment '${segment}', which would ` +
            'move up the path; a value in the path is one segment and cannot be "." or ".."',
          inside[2].position,
        );
      }
    }
    segmentStart = i + 1;
  }
}

export interface UrlRenderOptions {
  /** The value of the leading expression when the caller already resolved it (see leadingExpression). */
  leading?: string | undefined;
}

/** The expression the URL starts with, if any: the one that may supply scheme and host. */
export function leadingExpression(url: string): TemplateExpression | undefined {
  const first = compileTemplate(url).parts[0];
  return first !== undefined && first.kind !== 'text' ? first : undefined;
}

/** Renders a step URL with position-aware encoding (see the top of this file). */
export async function renderStepUrl(
  url: string,
  sourceData: JsonObject,
  evaluate: Evaluate,
  options: UrlRenderOptions = {},
): Promise<string> {
  const template = compileTemplate(url);
  let out = '';
  const substituted: Array<[number, number, TemplateExpression]> = [];
  for (const [index, part] of template.parts.entries()) {
    if (part.kind === 'text') {
      out += part.text;
      continue;
    }
    if (index === 0) {
      out += options.leading ?? renderScalar(await resolveExpression(part, sourceData, evaluate));
      continue;
    }
    const position = positionAfter(out);
    if (position === 'authority' && !inUserinfo(template.parts, index)) throw authorityError(part);
    const value = renderScalar(await resolveExpression(part, sourceData, evaluate));
    const encoded = encodeURIComponent(value);
    if (position === 'path') substituted.push([out.length, out.length + encoded.length, part]);
    out += encoded;
  }
  if (substituted.length > 0) checkDotSegments(out, substituted);
  return out;
}
