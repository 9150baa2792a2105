/**
 * The structured summary kept as a system's documentation: what a tool author and the engine can use, never
 * the raw bytes. Pure types and small helpers; no I/O.
 */

export interface OpenApiParameter {
  name: string;
  in: string;
  required: boolean;
  type?: string;
  description?: string;
}

export interface OpenApiOperation {
  method: string;
  path: string;
  operationId?: string;
  summary?: string;
  /** The operation's description when it also has a summary (else the description is the summary). */
  description?: string;
  tags?: string[];
  parameters: OpenApiParameter[];
  /** Names of the security schemes the operation accepts (its own requirement, else the document's). */
  security?: string[];
}

export interface SecurityScheme {
  /** The key under components.securitySchemes (securityDefinitions in Swagger 2.0). */
  id: string;
  type: string;
  /** apiKey: where the key goes (header, query, cookie) and under which name. */
  in?: string;
  name?: string;
  /** http: the scheme (bearer, basic). */
  scheme?: string;
  description?: string;
}

export interface OpenApiDocument {
  kind: 'openapi';
  source: string;
  /** `3.1.0`, `2.0`, … */
  specVersion: string;
  title?: string;
  version?: string;
  servers: string[];
  securitySchemes: SecurityScheme[];
  /** Scheme ids of the document-wide security requirement, in order. */
  security: string[];
  operations: OpenApiOperation[];
  /** Why the document failed validation (it is summarised all the same). */
  validationError?: string;
  /** Why it was not validated: a bound of KUBEGLUE_DOCS_OPENAPI_* (the summary does not need it). */
  validationSkipped?: string;
}

export interface TextSection {
  heading?: string;
  text: string;
  code?: string[];
  /** HTML: the heading's id, so a search result can link to the section (`page.html#anchor`). */
  anchor?: string;
  /** PDF: the page the section is on (from 1). Summaries made before it was kept say `Page n` in the heading. */
  page?: number;
}

export type TextFormat = 'html' | 'pdf' | 'markdown' | 'text';

export interface TextDocument {
  kind: 'text';
  source: string;
  format: TextFormat;
  title?: string;
  sections: TextSection[];
}

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  default?: string;
}

export interface ForeignKeyInfo {
  columns: string[];
  references: { table: string; columns: string[] };
}

export interface TableInfo {
  schema: string;
  name: string;
  columns: ColumnInfo[];
  primaryKey: string[];
  foreignKeys: ForeignKeyInfo[];
  /** The server's estimate (pg_class.reltuples, information_schema TABLES.TABLE_ROWS); -1 when it has none. */
  rowEstimate: number;
}

export interface ViewInfo {
  schema: string;
  name: string;
  columns: ColumnInfo[];
}

/** The SQL databases whose schema is kept as documentation; the document is the same for each. */
export type DatabaseSchemaKind = 'postgres-schema' | 'mysql-schema';

export interface DatabaseSchemaDocument {
  kind: DatabaseSchemaKind;
  source: string;
  tables: TableInfo[];
  views: ViewInfo[];
}

export interface GraphqlArgument {
  name: string;
  /** As schema language writes it: `[Task!]!`. */
  type: string;
  description?: string;
  defaultValue?: string;
}

export interface GraphqlField {
  name: string;
  type: string;
  description?: string;
  args: GraphqlArgument[];
  /** The deprecation reason of a deprecated field. */
  deprecated?: string;
}

export interface GraphqlType {
  kind: 'type' | 'interface' | 'input' | 'enum' | 'union' | 'scalar';
  name: string;
  description?: string;
  /** Fields of a type or interface; an input's fields (without args). */
  fields: GraphqlField[];
  /** An enum's values. */
  values?: string[];
  /** A union's members, an interface's implementations. */
  possibleTypes?: string[];
}

/** A GraphQL schema: introspected at its endpoint, or read from schema language (parsers/graphql-schema.ts). */
export interface GraphqlSchemaDocument {
  kind: 'graphql-schema';
  source: string;
  /** The endpoint introspected, when it was. */
  endpoint?: string;
  queryType?: string;
  mutationType?: string;
  subscriptionType?: string;
  /** The root fields: what a query, mutation or subscription can ask for. */
  operations: Array<GraphqlField & { operation: 'query' | 'mutation' | 'subscription' }>;
  /** Every other type (built-in scalars and introspection types left out). */
  types: GraphqlType[];
}

export type SummaryDocument = OpenApiDocument | TextDocument | DatabaseSchemaDocument | GraphqlSchemaDocument;

/** A fetched or unpacked part that was not kept, and why. */
export interface SkippedPart {
  source: string;
  reason: string;
}

export interface DocumentationSummary {
  documents: SummaryDocument[];
  skipped: SkippedPart[];
  /** Text beyond the retained-size limit was dropped. */
  truncated: boolean;
}

/** Text documents are cut to this many characters per section (a page-long paragraph is not a section). */
export const MAX_SECTION_CHARS = 20_000;

export function collapseWhitespace(text: string): string {
  return text
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
