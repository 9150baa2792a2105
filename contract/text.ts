/**
 * Control characters: the one definition of what ids, names and descriptions may not hold, and of what
 * the CLI escapes when it prints stored text. A terminal takes ESC (`\x1b`), the C1 range (`\x9b` is a
 * one-byte CSI) and the other C0 characters as commands: `ESC ]52;…` writes the clipboard, `ESC [2J`
 * clears the screen, colours and cursor moves forge what a reader sees. Kept as the body of a regular
 * expression character class, so the same text is a zod pattern, the CRD's OpenAPI `pattern` (which the
 * API server checks with RE2, where `\xNN` is the code point U+00NN as it is for JavaScript) and the CLI's
 * escaping. The bidirectional formatting characters count too: they reorder what a reader sees
 * ("Trojan Source"), so a name can display as another. They are kept in the class as the characters
 * themselves, not as `\uNNNN`, which RE2 does not read. Free text (a description) may hold them.
 */
import { z } from 'zod';

/** The bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E–F, U+202A–E, U+2066–9). */
const BIDI_CONTROLS = '\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069';

/** C0 (U+0000–U+001F), DEL (U+007F), C1 (U+0080–U+009F) and the bidi controls, as a character class body. */
export const CONTROL_CHARACTERS = `\\x00-\\x1f\\x7f-\\x9f${BIDI_CONTROLS}`;

/**
 * C0 and C1 without tab, line feed and carriage return, which free text such as a description holds; bidi
 * marks stay allowed there, because Arabic and Hebrew prose needs them (RLM) and a description names nothing.
 */
export const CONTROL_CHARACTERS_BUT_LINE_BREAKS = '\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f';

/** An id or a name: one line, no control character. */
export function plainText(schema: z.ZodString = z.string()): z.ZodString {
  return schema.regex(
    new RegExp(`^[^${CONTROL_CHARACTERS}]*$`),
    'must not contain control characters (U+0000–U+001F, U+007F–U+009F: tabs, line breaks, ESC; bidi controls)',
  );
}

/** Free text that may run over lines (a description): tabs and line breaks, no other control character. */
export function multilineText(schema: z.ZodString = z.string()): z.ZodString {
  return schema.regex(
    new RegExp(`^[^${CONTROL_CHARACTERS_BUT_LINE_BREAKS}]*$`),
    'must not contain control characters other than tab and line breaks (such as ESC, U+0000–U+001F, U+007F–U+009F)',
  );
}

/**
 * An id that templates and code address by name (a step's `<<id>>` and `sourceData[id]`, a system's
 * `<<systemId_key>>`): 1 to 128 characters, a letter or "_" first, then letters, digits, "_" and "-".
 */
export function templateId(): z.ZodString {
  return z
    .string()
    .min(1)
    .max(128)
    .regex(
      /^[A-Za-z_][A-Za-z0-9_-]*$/,
      'must start with a letter or "_" and contain only letters, digits, "_" and "-"',
    );
}
