/**
 * A MySQL or MariaDB database's schema as documentation: three information_schema queries (relations,
 * their columns, their primary and foreign key columns; each run by the caller as a read-only step with the
 * run's bounds) whose flat rows become the relations database-schema.ts shapes. The URL's database is read,
 * or every database but the server's own when the URL names none. Pure but for the query texts.
 */
import { z } from 'zod';
import { MAX_RELATIONS, type Relation, shapeRelations } from './database-schema.ts';
import type { DatabaseSchemaDocument } from './summary.ts';

/** The relations read: tables and views of the URL's database (or all user databases), first by name. */
const RELATIONS = `
SELECT TABLE_SCHEMA, TABLE_NAME
  FROM information_schema.TABLES
 WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
   AND (DATABASE() IS NULL OR TABLE_SCHEMA = DATABASE())
   AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED', 'VIEW')
 ORDER BY TABLE_SCHEMA, TABLE_NAME
 LIMIT ${MAX_RELATIONS}`;

/** Every query below reads its rows for the relations above only. */
export const SCHEMA_QUERIES = {
  relations: `
SELECT t.TABLE_SCHEMA AS \`schema\`, t.TABLE_NAME AS name, t.TABLE_TYPE AS type, t.TABLE_ROWS AS estimate
  FROM information_schema.TABLES t
  JOIN (${RELATIONS}) r ON r.TABLE_SCHEMA = t.TABLE_SCHEMA AND r.TABLE_NAME = t.TABLE_NAME
 ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME`,
  columns: `
SELECT c.TABLE_SCHEMA AS \`schema\`, c.TABLE_NAME AS \`table\`, c.COLUMN_NAME AS name, c.COLUMN_TYPE AS type,
       c.IS_NULLABLE AS nullable, c.COLUMN_DEFAULT AS \`default\`
  FROM information_schema.COLUMNS c
  JOIN (${RELATIONS}) r ON r.TABLE_SCHEMA = c.TABLE_SCHEMA AND r.TABLE_NAME = c.TABLE_NAME
 ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION`,
  keys: `
SELECT k.TABLE_SCHEMA AS \`schema\`, k.TABLE_NAME AS \`table\`, k.CONSTRAINT_NAME AS name,
       tc.CONSTRAINT_TYPE AS type, k.COLUMN_NAME AS \`column\`, k.REFERENCED_TABLE_SCHEMA AS refSchema,
       k.REFERENCED_TABLE_NAME AS refTable, k.REFERENCED_COLUMN_NAME AS refColumn
  FROM information_schema.KEY_COLUMN_USAGE k
  JOIN information_schema.TABLE_CONSTRAINTS tc
    ON tc.TABLE_SCHEMA = k.TABLE_SCHEMA AND tc.TABLE_NAME = k.TABLE_NAME AND tc.CONSTRAINT_NAME = k.CONSTRAINT_NAME
  JOIN (${RELATIONS}) r ON r.TABLE_SCHEMA = k.TABLE_SCHEMA AND r.TABLE_NAME = k.TABLE_NAME
 WHERE tc.CONSTRAINT_TYPE IN ('PRIMARY KEY', 'FOREIGN KEY')
 ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`,
} as const;

export type SchemaQuery = keyof typeof SCHEMA_QUERIES;

const RelationRow = z.object({
  schema: z.string(),
  name: z.string(),
  type: z.string(),
  estimate: z.union([z.number(), z.string()]).nullable(),
});
const ColumnRow = z.object({
  schema: z.string(),
  table: z.string(),
  name: z.string(),
  type: z.string(),
  nullable: z.string(),
  default: z.string().nullable(),
});
const KeyRow = z.object({
  schema: z.string(),
  table: z.string(),
  name: z.string(),
  type: z.string(),
  column: z.string(),
  refSchema: z.string().nullable(),
  refTable: z.string().nullable(),
  refColumn: z.string().nullable(),
});

/**
 * MariaDB quotes literal defaults (`'open'`) and writes an explicit DEFAULT NULL as `NULL`; expressions
 * (`current_timestamp()`) stay as written. The document keeps what a column gets when none is given.
 */
function defaultOf(text: string | null): string | null {
  return text === null || text === 'NULL' ? null : text;
}

/** The answers of the three queries (each an array of rows) → the kept document. */
export function shapeMysqlSchema(rows: Record<SchemaQuery, unknown>, source: string): DatabaseSchemaDocument {
  const relations = new Map<string, Relation>();
  const keyOf = (schema: string, name: string) => `${schema}\u0000${name}`;
  for (const row of z.array(RelationRow).parse(rows.relations)) {
    relations.set(keyOf(row.schema, row.name), {
      schema: row.schema,
      name: row.name,
      kind: row.type === 'VIEW' ? 'v' : 'r',
      rowEstimate: row.estimate === null ? -1 : Number(row.estimate),
      columns: [],
      primaryKey: [],
      foreignKeys: [],
    });
  }
  for (const row of z.array(ColumnRow).parse(rows.columns)) {
    relations.get(keyOf(row.schema, row.table))?.columns.push({
      name: row.name,
      type: row.type,
      nullable: row.nullable === 'YES',
      default: defaultOf(row.default),
    });
  }
  const foreignKeys = new Map<string, Relation['foreignKeys'][number]>();
  for (const row of z.array(KeyRow).parse(rows.keys)) {
    const relation = relations.get(keyOf(row.schema, row.table));
    if (!relation) continue;
    if (row.type === 'PRIMARY KEY') {
      relation.primaryKey.push(row.column);
      continue;
    }
    const id = `${keyOf(row.schema, row.table)}\u0000${row.name}`;
    let key = foreignKeys.get(id);
    if (!key) {
      const table =
        row.refSchema === null || row.refSchema === row.schema
          ? row.refTable
          : `${row.refSchema}.${row.refTable}`;
      key = { columns: [], table: table ?? '', refColumns: [] };
      foreignKeys.set(id, key);
      relation.foreignKeys.push(key);
    }
    key.columns.push(row.column);
    if (row.refColumn !== null) key.refColumns.push(row.refColumn);
  }
  return shapeRelations([...relations.values()], 'mysql-schema', source);
}
