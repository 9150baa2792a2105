import type { z } from 'zod';
import { type ErrorIssue, formatIssue } from './api/errors.ts';

/** What formatIssues reads of a zod schema to find an object's known keys (zod 4's definition). */
interface SchemaDef {
  _zod?: {
    def?: {
      type?: string;
      shape?: Record<string, unknown>;
      innerType?: unknown;
      in?: unknown;
      element?: unknown;
      valueType?: unknown;
    };
  };
}

/** The keys of the object schema at `path` inside `schema`, through optional/default/pipe/array wrappers. */
function knownKeysAt(schema: unknown, path: ReadonlyArray<PropertyKey>): string[] {
  let current = schema as SchemaDef | undefined;
  let index = 0;
  for (let guard = 0; current && guard < 100; guard++) {
    const def = current._zod?.def;
    if (!def) return [];
    if (
      def.type === 'optional' ||
      def.type === 'nullable' ||
      def.type === 'default' ||
      def.type === 'prefault'
    ) {
      current = def.innerType as SchemaDef;
    } else if (def.type === 'pipe') {
      current = def.in as SchemaDef;
    } else if (index === path.length) {
      return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
    } else if (def.type === 'object' && def.shape) {
      current = def.shape[String(path[index++])] as SchemaDef;
    } else if (def.type === 'array') {
      index++;
      current = def.element as SchemaDef;
    } else if (def.type === 'record') {
      index++;
      current = def.valueType as SchemaDef;
    } else {
      return [];
    }
  }
  return [];
}

/** Names other products and older clients use for a field kubeglue calls otherwise. */
const SYNONYMS: Readonly<Record<string, string>> = {
  payload: 'inputs',
  input: 'inputs',
  params: 'inputs',
  parameters: 'inputs',
  variables: 'inputs',
  args: 'inputs',
  credential: 'credentials',
  option: 'options',
  config: 'options',
};

/** Edits from a to b: insertions, deletions, substitutions and swaps of two neighbours, one each. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] ?? 0) + 1);
      }
      current[j] = best;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The known key an unknown one most likely meant: a synonym, else a near spelling (case included). */
export function suggestKey(unknown: string, known: readonly string[]): string | undefined {
  const synonym = SYNONYMS[unknown.toLowerCase()];
  if (synonym && known.includes(synonym)) return synonym;
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = editDistance(unknown.toLowerCase(), key.toLowerCase());
    if (distance <= Math.max(1, Math.floor(key.length / 3)) && (!best || distance < best.distance)) {
      best = { key, distance };
    }
  }
  return best?.key;
}

function describeIssue(issue: z.core.$ZodIssue, schema: unknown): string {
  if (issue.code !== 'unrecognized_keys' || schema === undefined) return issue.message;
  const known = knownKeysAt(schema, issue.path);
  const hints = issue.keys.flatMap((key) => {
    const suggestion = suggestKey(key, known);
    return suggestion ? [`'${key}': did you mean '${suggestion}'?`] : [];
  });
  return hints.length > 0 ? `${issue.message} (${hints.join(', ')})` : issue.message;
}

/**
 * Each issue at its field (`['steps', 0, 'id']`). With the schema, an unknown key gets the known key it
 * most likely meant (`payload` → `inputs`).
 */
export function zodIssues(error: z.ZodError, prefix?: string, schema?: z.ZodType): ErrorIssue[] {
  return error.issues.map((issue) => ({
    path: [
      ...(prefix ? [prefix] : []),
      ...issue.path.map((part) => (typeof part === 'number' ? part : String(part))),
    ],
    message: describeIssue(issue, schema),
  }));
}

/**
 * One line per issue, each naming the field: `steps[0].id: Invalid input: expected string, received undefined`.
 */
export function formatIssues(error: z.ZodError, prefix?: string, schema?: z.ZodType): string {
  return zodIssues(error, prefix, schema).map(formatIssue).join('; ');
}
