/**
 * A Postgres database's schema as documentation: one catalog query (run by the caller in a read-only
 * transaction with a statement timeout) whose answer database-schema.ts shapes.
 */
import { z } from 'zod';
import { Relation, shapeRelations } from './database-schema.ts';
import type { DatabaseSchemaDocument } from './summary.ts';

/** Tables and views of every schema but the system ones, at most `$1` relations, as one JSON value. */
export const SCHEMA_QUERY = `
WITH rels AS (
  SELECT c.oid, n.nspname AS schema, c.relname AS name, c.relkind, c.reltuples
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
     AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
     AND n.nspname NOT LIKE 'pg_temp_%' AND n.nspname NOT LIKE 'pg_toast_temp_%'
     AND NOT c.relispartition
   ORDER BY n.nspname, c.relname
   LIMIT $1
)
SELECT json_agg(json_build_object(
  'schema', r.schema,
  'name', r.name,
  'kind', r.relkind,
  'rowEstimate', r.reltuples,
  'columns', (
    SELECT coalesce(json_agg(json_build_object(
             'name', a.attname,
             'type', pg_catalog.format_type(a.atttypid, a.atttypmod),
             'nullable', NOT a.attnotnull,
             'default', pg_catalog.pg_get_expr(d.adbin, d.adrelid)) ORDER BY a.attnum), '[]'::json)
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped),
  'primaryKey', (
    SELECT coalesce(json_agg(a.attname ORDER BY k.ord), '[]'::json)
      FROM pg_catalog.pg_constraint con
      CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
      JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
     WHERE con.conrelid = r.oid AND con.contype = 'p'),
  'foreignKeys', (
    SELECT coalesce(json_agg(json_build_object(
             'columns', (SELECT json_agg(a.attname ORDER BY k.ord)
                           FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                           JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum),
             'table', con.confrelid::regclass::text,
             'refColumns', (SELECT json_agg(a.attname ORDER BY k.ord)
                              FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
                              JOIN pg_catalog.pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum))
             ORDER BY con.conname), '[]'::json)
      FROM pg_catalog.pg_constraint con
     WHERE con.conrelid = r.oid AND con.contype = 'f')
) ORDER BY r.schema, r.name) AS relations
FROM rels r`;

/** The query's rows (`[{relations: [...] | null}]`) → the kept document. */
export function shapeSchema(rows: unknown, source: string): DatabaseSchemaDocument {
  const parsed = z.array(z.object({ relations: z.array(Relation).nullable() })).parse(rows);
  return shapeRelations(parsed[0]?.relations ?? [], 'postgres-schema', source);
}
