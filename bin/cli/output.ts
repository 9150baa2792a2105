/** How the client commands print: JSON documents for scripts, aligned tables and short values for people. */
import type { Item } from './client.ts';
import type { Io, OutputMode, Terminal } from './command.ts';

export function printJson(out: Terminal, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Columns padded to their widest cell; the last one is not padded. */
export function printTable(
  out: Terminal,
  headers: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): void {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  for (const row of [headers, ...rows]) {
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
