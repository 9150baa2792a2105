import type { JsonValue } from '../../crds/json.ts';

/** Values shorter than this are too likely to occur by chance in ordinary data to be scrubbed. */
const MIN_SECRET_LENGTH = 4;

/**
 * Replaces every known credential value by its placeholder (`<<systemId_key>>`) wherever it occurs,
 * also inside longer strings and in URL-encoded form. Callers add derived forms (e.g. a Basic
 * auth header value) as secrets of their own.
 */
export class Redactor {
  readonly #replacements: Array<[string, string]> = [];

  add(value: string, placeholder: string): void {
    if (value.length < MIN_SECRET_LENGTH) return;
    for (const form of new Set([value, encodeURIComponent(value)]))
      this.#replacements.push([form, placeholder]);
    // Longest first, so a secret that contains another is replaced whole.
    this.#replacements.sort((a, b) => b[0].length - a[0].length);
  }

  get size(): number {
    return this.#replacements.length;
  }

  string(text: string): string {
    let out = text;
    for (const [secret, placeholder] of this.#replacements) {
      if (out.includes(secret)) out = out.split(secret).join(placeholder);
    }
    return out;
  }

  value<T extends JsonValue | undefined>(value: T): T {
    if (this.#replacements.length === 0) return value;
    return this.#walk(value) as T;
  }

  #walk(value: JsonValue | undefined): JsonValue | undefined {
    if (typeof value === 'string') return this.string(value);
    if (Array.isArray(value)) return value.map((item) => this.#walk(item) as JsonValue);
    if (value && typeof value === 'object') {
      const out: { [key: string]: JsonValue } = {};
      for (const [key, child] of Object.entries(value))
        out[this.string(key)] = this.#walk(child) as JsonValue;
      return out;
    }
    return value;
  }
}
