/**
 * A database system's schema as its documentation: which URLs have one (the SQL protocols of
 * contract/step-protocols.ts), the documentation source each is recorded under, and how each is read: with
 * the system's own credentials, as read-only steps of the protocol's engine module (loaded with the first
 * schema to read), within the processing's deadline and the system's egress rules.
 */
import { literalScheme, stepScheme } from '../../contract/step-protocols.ts';
import type { EgressGuard } from '../../engine/protocols/egress-policy.ts';
import { MAX_RELATIONS } from './parsers/database-schema.ts';
import { SCHEMA_QUERIES, type SchemaQuery, shapeMysqlSchema } from './parsers/mysql-schema.ts';
import { SCHEMA_QUERY, shapeSchema } from './parsers/postgres-schema.ts';
import type { DatabaseSchemaDocument } from './parsers/summary.ts';

export type SchemaDialect = 'postgres' | 'mysql';

/** The documentation source (DocumentationState.source) of each database's schema. */
export const SCHEMA_SOURCES: Readonly<Record<SchemaDialect, string>> = {
  postgres: 'postgres-schema',
  mysql: 'mysql-schema',
};

/** The database a URL points at, when it is one whose schema kubeglue reads. */
export function schemaDialect(url: string | undefined): SchemaDialect | undefined {
  const scheme = url === undefined ? undefined : literalScheme(url);
  const protocol = scheme === undefined ? undefined : stepScheme(scheme)?.protocol;
  return protocol === 'postgres' || protocol === 'mysql' ? protocol : undefined;
}

/** The dialect a documentation source was recorded for, if it is a schema. */
export function schemaSourceDialect(source: string): SchemaDialect | undefined {
  return (Object.keys(SCHEMA_SOURCES) as SchemaDialect[]).find(
    (dialect) => SCHEMA_SOURCES[dialect] === source,
  );
}

/** `scheme://host:port/database`: how the document names its source (never the userinfo). */
function label(url: string, dialect: SchemaDialect): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return dialect;
  }
}

export interface SchemaRead {
  url: string;
  credentials: Record<string, string>;
  signal: AbortSignal;
  deadline: number;
  egress: EgressGuard;
}

export async function readDatabaseSchema(
  dialect: SchemaDialect,
  read: SchemaRead,
): Promise<DatabaseSchemaDocument> {
  const step = { ...read, modify: false };
  if (dialect === 'postgres') {
    const { executePostgresStep } = await import('../../engine/protocols/postgres.ts');
    const rows = await executePostgresStep({
      ...step,
      body: { query: SCHEMA_QUERY, params: [MAX_RELATIONS] },
    });
    return shapeSchema(rows, label(read.url, dialect));
  }
  const { executeMysqlStep } = await import('../../engine/protocols/mysql.ts');
  const rows = {} as Record<SchemaQuery, unknown>;
  for (const query of Object.keys(SCHEMA_QUERIES) as SchemaQuery[]) {
    rows[query] = await executeMysqlStep({ ...step, body: SCHEMA_QUERIES[query] });
  }
  return shapeMysqlSchema(rows, label(read.url, dialect));
}
