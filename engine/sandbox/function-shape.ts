/**
 * Static check that a source which already compiles is one function expression: `(s) => …`,
 * `async s => …`, `function (a, b) { … }`, optionally parenthesized. Nothing is executed, so it is
 * safe to call where user code must not run (the API and the operator, at save time).
 *
 * The scanner only needs the top-level structure: it skips strings, template literals, comments and
 * regular expression literals (told apart from division by the previous token, as JavaScript
 * tokenizers do) and groups brackets. The runtime check in the driver remains authoritative.
 */

export type ShapeVerdict = { ok: true } | { ok: false; message: string };

type TokenKind = 'word' | 'punct' | 'literal' | 'open' | 'close';

interface Token {
  kind: TokenKind;
  text: string;
  /** Bracket depth; an opening bracket and its closing one share the depth outside them. */
  depth: number;
}

/** After these words an expression starts, so `/` opens a regular expression. */
const EXPRESSION_KEYWORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

const EXAMPLE = '(sourceData) => sourceData.items';
const NOT_A_FUNCTION = `the source must be a function expression such as ${EXAMPLE}`;

const CLOSER: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
const WORD_START = /[\p{ID_Start}$_\\]/u;
const WORD_PART = /[\p{ID_Continue}$\\\u200c\u200d]/u;
const DIGIT = /[0-9]/;

export function checkFunctionShape(source: string): ShapeVerdict {
  const tokens = tokenize(source);
  if (tokens === undefined) return { ok: false, message: `${NOT_A_FUNCTION} (it could not be scanned)` };
  return shapeOf(tokens, 0, tokens.length, 0, source);
}

function shapeOf(tokens: Token[], start: number, end: number, depth: number, source: string): ShapeVerdict {
  const top: Token[] = [];
  for (let i = start; i < end; i++) {
    const token = tokens[i];
    if (token !== undefined && token.depth === depth) top.push(token);
  }
  if (top.length === 0) return { ok: false, message: `${NOT_A_FUNCTION}, but it is empty` };
  // Only `( … )` at the top: look inside the parentheses.
  if (top.length === 2 && top[0]?.kind === 'open' && top[0].text === '(') {
    return shapeOf(tokens, start + 1, end - 1, depth + 1, source);
  }
  const at = (i: number): Token | undefined => top[i];
  const isWord = (i: number, text?: string): boolean =>
    at(i)?.kind === 'word' && (text === undefined || at(i)?.text === text);
  const isPunct = (i: number, text: string): boolean => at(i)?.kind === 'punct' && at(i)?.text === text;
  const isOpen = (i: number, text: string): boolean => at(i)?.kind === 'open' && at(i)?.text === text;

  let p = 0;
  if (isWord(0, 'async') && !isPunct(1, '=>')) p = 1;

  if (isWord(p, 'function')) {
    p += 1;
    if (isPunct(p, '*')) p += 1;
    if (isWord(p)) p += 1;
    if (!isOpen(p, '(')) return notAFunction(source);
    p += 2;
    if (!isOpen(p, '{')) return notAFunction(source);
    p += 2;
    return p === top.length ? { ok: true } : trailing();
  }
  if (isWord(p, 'class')) {
    return { ok: false, message: `${NOT_A_FUNCTION}; a class cannot be called as a function` };
  }
  const arrowParams = isWord(p) && !EXPRESSION_KEYWORDS.has(at(p)?.text ?? '') ? 1 : isOpen(p, '(') ? 2 : 0;
  if (arrowParams === 0 || !isPunct(p + arrowParams, '=>')) return notAFunction(source);
  p += arrowParams + 1;
  if (isOpen(p, '{')) return p + 2 === top.length ? { ok: true } : trailing();
  for (let i = p; i < top.length; i++) {
    if (isPunct(i, ',')) return trailing();
  }
  return p < top.length ? { ok: true } : notAFunction(source);
}

function trailing(): ShapeVerdict {
  return {
    ok: false,
    message: `${NOT_A_FUNCTION}, but the function is followed by more code (a call, a comma or an operator)`,
  };
}

function notAFunction(source: string): ShapeVerdict {
  const start = source.trim().replace(/\s+/g, ' ');
  const excerpt = start.length > 40 ? `${start.slice(0, 40)}…` : start;
  return { ok: false, message: `${NOT_A_FUNCTION}, but it is not a function: ${excerpt}` };
}

interface Frame {
  /** `(`, `[`, `{`, or `${` for a template literal substitution. */
  opener: string;
}

/** Splits the source into tokens; undefined when it cannot be scanned (unterminated, unbalanced). */
function tokenize(src: string): Token[] | undefined {
  const tokens: Token[] = [];
  const stack: Frame[] = [];
  let regexAllowed = true;
  let i = 0;

  const push = (kind: TokenKind, text: string, depth = stack.length): void => {
    tokens.push({ kind, text, depth });
  };

  /** Scans template characters from `from`; returns the index after the closing backtick or `${`. */
  const templateChunk = (from: number): { next: number; substitution: boolean } | undefined => {
    let j = from;
    while (j < src.length) {
      const c = src[j];
      if (c === '\\') j += 2;
      else if (c === '`') return { next: j + 1, substitution: false };
      else if (c === '$' && src[j + 1] === '{') return { next: j + 2, substitution: true };
      else j += 1;
    }
    return undefined;
  };

  while (i < src.length) {
    const c = src[i] ?? '';
    const next = src[i + 1];
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      i = end === -1 ? src.length : end + 1;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      if (end === -1) return undefined;
      i = end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== c) {
        if (src[j] === '\n') return undefined;
        j += src[j] === '\\' ? 2 : 1;
      }
      if (j >= src.length) return undefined;
      push('literal', c);
      i = j + 1;
      regexAllowed = false;
    } else if (c === '`') {
      push('literal', '`');
      const chunk = templateChunk(i + 1);
      if (chunk === undefined) return undefined;
      if (chunk.substitution) stack.push({ opener: '${' });
      i = chunk.next;
      regexAllowed = chunk.substitution;
    } else if (c === '/') {
      if (regexAllowed) {
        let j = i + 1;
        let inClass = false;
        while (j < src.length && (inClass || src[j] !== '/')) {
          const r = src[j];
          if (r === '\n') return undefined;
          if (r === '\\') j += 1;
          else if (r === '[') inClass = true;
          else if (r === ']') inClass = false;
          j += 1;
        }
        if (j >= src.length) return undefined;
        j += 1;
        while (j < src.length && /[a-z]/i.test(src[j] ?? '')) j += 1;
        push('literal', '/');
        i = j;
        regexAllowed = false;
      } else {
        push('punct', '/');
        i += 1;
        regexAllowed = true;
      }
    } else if (c === '(' || c === '[' || c === '{') {
      push('open', c);
      stack.push({ opener: c });
      i += 1;
      regexAllowed = true;
    } else if (c === ')' || c === ']' || c === '}') {
      const frame = stack.pop();
      if (frame === undefined) return undefined;
      i += 1;
      if (frame.opener === '${') {
        if (c !== '}') return undefined;
        const chunk = templateChunk(i);
        if (chunk === undefined) return undefined;
        if (chunk.substitution) stack.push({ opener: '${' });
        i = chunk.next;
        regexAllowed = chunk.substitution;
        continue;
      }
      if (CLOSER[frame.opener] !== c) return undefined;
      push('close', c);
      regexAllowed = c === '}';
    } else if (c === '=' && next === '>') {
      push('punct', '=>');
      i += 2;
      regexAllowed = true;
    } else if (DIGIT.test(c) || (c === '.' && DIGIT.test(next ?? ''))) {
      let j = i + 1;
      while (j < src.length && /[0-9A-Za-z_.]/.test(src[j] ?? '')) j += 1;
      push('literal', '0');
      i = j;
      regexAllowed = false;
    } else if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < src.length && WORD_PART.test(src[j] ?? '')) j += 1;
      const word = src.slice(i, j);
      push('word', word);
      i = j;
      regexAllowed = EXPRESSION_KEYWORDS.has(word);
    } else {
      push('punct', c);
      i += 1;
      regexAllowed = true;
    }
  }
  return stack.length === 0 ? tokens : undefined;
}
