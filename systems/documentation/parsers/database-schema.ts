/**
 * The schema of an SQL database as documentation, whatever the database: each dialect reads its catalog
 * its own way (postgres-schema.ts, mysql-schema.ts) into relations of this shape, and one shaping keeps
 * tables (columns, primary key, foreign keys, row estimate) and views. Pure.
 */
import { z } from 'zod';
import type { DatabaseSchemaDocument, DatabaseSchemaKind } from './summary.ts';

/** Relations read at most (a database with more keeps the first, by schema and name). */
export const MAX_RELATIONS = 1000;

const Column = z.object({
  name: z.string(),
  type: z.string(),
  nullable: z.boolean(),
  default: z.string().nullable(),
});

export const Relation = z.object({
  schema: z.string(),
  name: z.string(),
  /** Postgres' relkind: `r`/`p`/`f` tables, `v`/`m` views (MySQL's are mapped onto `r` and `v`). */
  kind: z.string(),
  rowEstimate: z.number(),
  columns: z.array(Column),
  primaryKey: z.array(z.string()),
  foreignKeys: z.array(
    z.object({ columns: z.array(z.string()), table: z.string(), refColumns: z.array(z.string()) }),
  ),
});
export type Relation = z.infer<typeof Relation>;

/** The relations → the kept document. */
export function shapeRelations(
  relations: readonly Relation[],
  kind: DatabaseSchemaKind,
  source: string,
): DatabaseSchemaDocument {
  const document: DatabaseSchemaDocument = { kind, source, tables: [], views: [] };
  for (const relation of relations) {
    const columns = relation.columns.map((column) => ({
      name: column.name,
      type: column.type,
      nullable: column.nullable,
      ...(column.default !== null ? { default: column.default } : {}),
    }));
    if (relation.kind === 'v' || relation.kind === 'm') {
      document.views.push({ schema: relation.schema, name: relation.name, columns });
      continue;
    }
    document.tables.push({
      schema: relation.schema,
      name: relation.name,
      columns,
      primaryKey: relation.primaryKey,
      foreignKeys: relation.foreignKeys.map((key) => ({
        columns: key.columns,
        references: { table: key.table, columns: key.refColumns },
      })),
      rowEstimate: relation.rowEstimate,
    });
  }
  return document;
}
