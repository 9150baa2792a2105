/**
 * Where things are in a JSON text, for showing problems at their line: the value at a path (the API's
 * `error.issues` name fields by path), a position inside a string literal given as a line and column of
 * the string's own text (code that does not compile, kept in a JSON string), and where JSON.parse gave up.
 */

import type { JsonPath } from './json-search.ts';

/** A place in a text: the offset and, from 1, its line and column. */
export interface TextPosition {
  offset: number;
  line: number;
  column: number;
}

export function positionAt(text: string, offset: number): TextPosition {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < clamped; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}

/** The offset where a line (from 1) starts, clamped to the text. */
export function lineStart(text: string, line: number): number {
  let offset = 0;
  for (let current = 1; current < line; current++) {
    const next = text.indexOf('\n', offset);
    if (next === -1) return offset;
    offset = next + 1;
  }
  return offset;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

/** Reads only what a path goes through and skips the rest; throws on text that is not JSON. */
class Scanner {
  pos = 0;
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  skipWhitespace(): void {
    while (this.pos < this.text.length && WHITESPACE.has(this.text[this.pos] as string)) this.pos++;
  }

  peek(): string | undefined {
    return this.text[this.pos];
  }

  readString(): string {
    const start = this.pos;
    if (this.text[this.pos] !== '"') throw new Error('expected a string');
    this.pos++;
    while (this.pos < this.text.length) {
      const char = this.text[this.pos];
      if (char === '\\') this.pos += 2;
      else if (char === '"') {
        this.pos++;
        return JSON.parse(this.text.slice(start, this.pos)) as string;
      } else this.pos++;
    }
    throw new Error('unterminated string');
  }

  skipValue(): void {
    this.skipWhitespace();
    const char = this.peek();
    if (char === '"') {
      this.readString();
      return;
    }
    if (char === '{' || char === '[') {
      let depth = 0;
      while (this.pos < this.text.length) {
        const c = this.text[this.pos];
        if (c === '"') {
          this.readString();
          continue;
        }
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') depth--;
        this.pos++;
        if (depth === 0) return;
      }
      throw new Error('unterminated container');
    }
    while (this.pos < this.text.length && !',]}'.includes(this.text[this.pos] as string)) {
      if (WHITESPACE.has(this.text[this.pos] as string)) break;
      this.pos++;
    }
  }

  /** After a member or element: true at a comma (consumed), false at the end of the container. */
  next(): boolean {
    this.skipWhitespace();
    if (this.peek() === ',') {
      this.pos++;
      return true;
    }
    return false;
  }

  /** Moves to the member `key` of the object here (at its value); its key's offset, or undefined. */
  enterMember(key: string): number | undefined {
    this.pos++; // {
    this.skipWhitespace();
    if (this.peek() === '}') return undefined;
    do {
      this.skipWhitespace();
      const keyAt = this.pos;
      const name = this.readString();
      this.skipWhitespace();
      if (this.peek() !== ':') throw new Error('expected ":"');
      this.pos++;
      this.skipWhitespace();
      if (name === key) return keyAt;
      this.skipValue();
    } while (this.next());
    return undefined;
  }

  /** Moves to the element `index` of the array here; its offset, or undefined. */
  enterElement(index: number): number | undefined {
    this.pos++; // [
    this.skipWhitespace();
    if (this.peek() === ']') return undefined;
    let current = 0;
    do {
      this.skipWhitespace();
      if (current === index) return this.pos;
      this.skipValue();
      current++;
    } while (this.next());
    return undefined;
  }
}

/** Where a path leads in a JSON text. */
export interface Located {
  /** The member's key (`"name": …`) or the element; the nearest ancestor's when the path goes further. */
  offset: number;
  /** How many parts of the path exist: the path's length when all of it does. */
  depth: number;
  /** Where the value itself starts (a string's opening quote), when all of the path exists. */
  valueOffset?: number;
}

/** undefined when the text is not JSON (as far as the path goes). */
export function locateValue(text: string, path: Readonly<JsonPath>): Located | undefined {
  const scanner = new Scanner(text);
  try {
    scanner.skipWhitespace();
    let found: Located = { offset: scanner.pos, depth: 0 };
    for (const part of path) {
      const char = scanner.peek();
      const at =
        char === '{' && typeof part === 'string'
          ? scanner.enterMember(part)
          : char === '[' && typeof part === 'number'
            ? scanner.enterElement(part)
            : undefined;
      if (at === undefined) return found;
      found = { offset: at, depth: found.depth + 1 };
    }
    return { ...found, valueOffset: scanner.pos };
  } catch {
    return undefined;
  }
}

/**
 * The offset in the JSON text of a line and column (from 1) of a string's own text, the string's literal
 * starting at `quoteOffset`: escapes are counted as the characters they stand for, `\n` as a new line.
 */
export function offsetInString(text: string, quoteOffset: number, line: number, column: number): number {
  let i = quoteOffset + 1;
  let atLine = 1;
  let atColumn = 1;
  while (i < text.length && text[i] !== '"') {
    if (atLine > line || (atLine === line && atColumn >= column)) return i;
    if (text[i] === '\\') {
      const escaped = text[i + 1];
      i += escaped === 'u' ? 6 : 2;
      if (escaped === 'n') {
        atLine++;
        atColumn = 1;
      } else atColumn++;
    } else {
      i++;
      atColumn++;
    }
  }
  return i;
}

/** Where JSON.parse stopped, read from its message (Chromium and Firefox say it differently). */
export function parseErrorOffset(text: string, error: unknown): number | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const lineColumn = /line (\d+) column (\d+)/.exec(message);
  if (lineColumn) return lineStart(text, Number(lineColumn[1])) + Number(lineColumn[2]) - 1;
  const position = /position (\d+)/.exec(message);
  if (position) return Number(position[1]);
  if (/end of (JSON )?(input|data)/i.test(message)) return text.length;
  return undefined;
}
