/**
 * One migration, in both dialects. Why two texts and not one description that generates both: DDL differs on
 * nearly every line (types, collations, gin and partial indexes, comments, defaults), so a generator would be
 * a small schema language of its own that hides the real schema behind it. Two plain texts, side by side in one
 * entry with one id and one name, keep each schema readable as its database sees it, make it impossible to add
 * a migration for one backend only (both fields are required), and every store test runs against both.
 */
export interface Migration {
  id: number;
  name: string;
  /** PostgreSQL. */
  pg: string;
  /** SQLite, with the representations store/dialect.ts describes. */
  sqlite: string;
}

/**
 * SQLite's CHECK for a timestamp column: exactly the format dialect.ts writes, so that comparing the text
 * orders by time (a shipped migration's text must never change, so neither may this).
 */
export function iso(column: string): string {
  return `CHECK (${column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')`;
}

/** SQLite's DEFAULT now(), in that format. */
export const NOW = `(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
