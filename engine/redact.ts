import type { JsonValue } from '../contract/json.ts';
import { fileText, isFileRef } from './file-ref.ts';
import { secretForms } from './secret-forms.ts';

/**
 * Values at least this long are replaced wherever they occur, also inside longer strings. Shorter ones
 * would mangle ordinary text if treated the same way ("ab" inside "table"), so they are replaced only
 * where they stand as a whole token (see below).
 */
const MIN_SUBSTRING_LENGTH = 4;

/** Characters that continue a token: a short secret next to one of them is part of a longer word. */
const TOKEN_CHAR = '[\\p{L}\\p{N}_]';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Replaces every known credential value by its placeholder (`<<systemId_key>>`) wherever it occurs, also in
 * the forms URLs and JSON text carry it in (percent-encoded, form-encoded, JSON-escaped: secret-forms.ts).
 * Callers add derived values (e.g. a Basic auth header value) as secrets of their own.
 *
 * - Values of 4+ characters are replaced anywhere, in one pass, longest first (a secret containing another
 *   is replaced whole; a placeholder, put in or already there, is never searched again).
 * - Values of 1-3 characters are replaced where they are a whole token: not preceded or followed by a
 *   letter, digit or `_` (a whole string value is such a token). `pw1` is scrubbed from `token=pw1` and
 *   from `"pw1"`, but `pw1x` and `apw1` stay as they are. Object keys are left to the first rule.
 * - File references in the data (`__file__` objects) have their text content scrubbed too (decoded,
 *   replaced, encoded again, size updated). Binary content cannot be scrubbed: a secret inside an image
 *   or a zip stays in it.
 */
export class Redactor {
  readonly #replacements: Array<[string, string]> = [];
  readonly #short = new Map<string, string>();
  #shortPattern: RegExp | undefined;
  #placeholders: RegExp | undefined;
  readonly #placeholderSet = new Set<string>();
  /** What #substrings replaces in one pass: each secret (4+ characters) and each placeholder, longest first. */
  #substringPattern: RegExp | undefined;
  #substitutes = new Map<string, string>();

  add(value: string, placeholder: string): void {
    if (value.length === 0) return;
    this.#placeholderSet.add(placeholder);
    this.#placeholders = undefined;
    this.#substringPattern = undefined;
    for (const form of secretForms(value)) {
      if (form.length >= MIN_SUBSTRING_LENGTH) this.#replacements.push([form, placeholder]);
      else {
        this.#short.set(form, placeholder);
        this.#shortPattern = undefined;
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.#replacements.sort((a, b) => b[0].length - a[0].length);
  }

  get size(): number {
    return this.#replacements.length + this.#short.size;
  }

  string(text: string): string {
    return this.#shortTokens(this.#substrings(text));
  }

  #substrings(text: string): string {
    if (!this.#replacements.some(([secret]) => text.includes(secret))) return text;
    // One pass, so a placeholder put in is never searched again (a secret `shop` must not turn
    // `<<shop_username>>` into `<<<<crm_tenant>>_username>>`). The placeholders are alternatives too, mapped
    // to themselves, and the longest alternative wins at each place: a placeholder already in the text
    // stays whole, and a secret that contains a placeholder's text is still replaced whole.
    if (!this.#substringPattern) {
      const to = new Map<string, string>();
      for (const placeholder of this.#placeholderSet) to.set(placeholder, placeholder);
      for (const [secret, placeholder] of this.#replacements)
        if (!to.has(secret)) to.set(secret, placeholder);
      const alternatives = [...to.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
      this.#substitutes = to;
      this.#substringPattern = new RegExp(alternatives.join('|'), 'g');
    }
    const substitutes = this.#substitutes;
    return text.replace(this.#substringPattern, (match) => substitutes.get(match) ?? match);
  }

  #shortTokens(text: string): string {
    if (this.#short.size === 0) return text;
    this.#shortPattern ??= new RegExp(
      `(?<!${TOKEN_CHAR})(?:${[...this.#short.keys()]
        .sort((a, b) => b.length - a.length)
        .map(escapeRegExp)
        .join('|')})(?!${TOKEN_CHAR})`,
      'gu',
    );
    const pattern = this.#shortPattern;
    const replace = (segment: string) => segment.replace(pattern, (match) => this.#short.get(match) ?? match);
    // Placeholders put in by the first rule stay intact (`<<db_pw>>` must not lose its `pw`).
    this.#placeholders ??= new RegExp(`(${[...this.#placeholderSet].map(escapeRegExp).join('|')})`, 'u');
    return text
      .split(this.#placeholders)
      .map((segment) => (this.#placeholderSet.has(segment) ? segment : replace(segment)))
      .join('');
  }

  value<T extends JsonValue | undefined>(value: T): T {
    if (this.size === 0) return value;
    return this.#walk(value) as T;
  }

  #walk(value: JsonValue | undefined): JsonValue | undefined {
    if (typeof value === 'string') return this.string(value);
    if (Array.isArray(value)) return value.map((item) => this.#walk(item) as JsonValue);
    if (value && typeof value === 'object') {
      const file = isFileRef(value);
      const out: { [key: string]: JsonValue } = {};
      for (const [key, child] of Object.entries(value)) {
        // The bytes of a file are scrubbed decoded, never as base64 text.
        out[this.#substrings(key)] =
          file && key === 'contentBase64' ? child : (this.#walk(child) as JsonValue);
      }
      if (file) this.#fileContent(out);
      return out;
    }
    return value;
  }

  /** Scrubs a file reference's text content in place (binary content is left alone). */
  #fileContent(ref: { [key: string]: JsonValue }): void {
    if (typeof ref.contentBase64 !== 'string') return;
    const bytes = Buffer.from(ref.contentBase64, 'base64');
    const text = fileText(bytes);
    if (text === null) return;
    const scrubbed = this.string(text);
    if (scrubbed === text) return;
    const encoded = Buffer.from(scrubbed, 'utf8');
    ref.contentBase64 = encoded.toString('base64');
    ref.size = encoded.byteLength;
  }
}
