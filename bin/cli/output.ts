/**
 * How the client commands print: JSON documents for scripts, aligned tables and short values for people.
 * What the API sends (ids, names, run errors, events) may hold control characters: text output shows
 * each as an escape (`\x1b`) through `printable`, JSON output as `\u001b`, so no stored text reaches the
 * terminal as a command (contract/text.ts).
 */
import { CONTROL_CHARACTERS } from '../../contract/text.ts';
import type { Item } from './client.ts';
import type { Io, OutputMode, Terminal } from './command.ts';

const CONTROL = new RegExp(`[${CONTROL_CHARACTERS}]`, 'g');
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (character: string) => character.charCodeAt(0).toString(16).padStart(2, '0');

/**
 * Text from the API as one printable line: every control character escaped (`\x1b`, and `\n`, `\r`, `\t`
 * for line breaks and tabs, which would break a line or a table apart). Every text printer uses it.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (character) => SHORT_ESCAPES[character] ?? `\\x${hex(character)}`);
}

/** The control characters JSON.stringify leaves as they are: DEL and C1 (`\x9b` is a one-byte CSI). */
const UNESCAPED_BY_JSON = /[\x7f-\x9f]/g;

/**
 * One JSON document. JSON.stringify escapes C0 inside strings (`\u001b`); DEL and C1 are escaped the same
 * way here. Outside strings a document holds none of them, so it parses to the same value.
 */
export function printJson(out: Terminal, value: unknown): void {
  const json = JSON.stringify(value, null, 2).replace(
    UNESCAPED_BY_JSON,
    (character) => `\\u00${hex(character)}`,
  );
  out.write(`${json}\n`);
}

/** Columns padded to their widest cell; the last one is not padded. */
export function printTable(
  out: Terminal,
  headers: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): void {
  const shown = rows.map((row) => row.map(printable));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...shown.map((row) => (row[column] ?? '').length)),
  );
  for (const row of [headers, ...shown]) {
    const cells = row.map((cell, column) =>
      column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0),
    );
    out.write(`${cells.join('  ').trimEnd()}\n`);
  }
}

/** A listing: a JSON array of the items as the API sent them, or a table (`No <plural>.` when empty). */
export function printList<T>(
  io: Pick<Io, 'stdout'>,
  output: OutputMode,
  items: ReadonlyArray<Item<T>>,
  table: { plural: string; headers: readonly string[]; row(value: T): string[] },
): void {
  if (output === 'json')
    printJson(
      io.stdout,
      items.map((item) => item.raw),
    );
  else if (items.length === 0) io.stdout.write(`No ${table.plural}.\n`);
  else
    printTable(
      io.stdout,
      table.headers,
      items.map((item) => table.row(item.value)),
    );
}

/** A timestamp to the second, in UTC (`2025-03-01 14:02:07Z`); `-` when there is none. */
export function shortTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** `350 ms`, `4.2 s`, `3 min 5 s`; `-` when unknown. */
export function shortDuration(ms: number | undefined): string {
  if (ms === undefined) return '-';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** At most `width` characters, one line. */
export function clip(text: string | undefined, width: number): string {
  const line = (text ?? '').replace(/\s+/g, ' ').trim();
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** What stands where the API key was. */
const BLANKED_KEY = '<redacted>';

/** A key shorter than this is not blanked inside longer text (it would cut words apart); no API accepts one. */
const MIN_KEY_LENGTH = 4;

/**
 * `text` without the API key: a server or a proxy may echo the request's Authorization header in an error.
 * Blanked as sent, JSON-escaped and percent-encoded, the forms an answer may quote it in.
 */
export function withoutKey(text: string, key: string): string {
  if (key.length < MIN_KEY_LENGTH) return text;
  const forms = new Set([key, JSON.stringify(key).slice(1, -1), encodeURIComponent(key)]);
  let out = text;
  for (const form of forms) if (out.includes(form)) out = out.split(form).join(BLANKED_KEY);
  return out;
}
