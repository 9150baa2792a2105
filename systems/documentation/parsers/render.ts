/** The summary as plain text (`GET /v1/systems/{id}/documentation?format=text`). Pure. */
import type {
  ColumnInfo,
  DocumentationSummary,
  ForeignKeyInfo,
  GraphqlField,
  GraphqlSchemaDocument,
  GraphqlType,
  SecurityScheme,
  SummaryDocument,
} from './summary.ts';

/** `apiKey in header "X-Key"`, `http bearer`, `oauth2`. */
export function schemeText(scheme: SecurityScheme): string {
  const where =
    scheme.type === 'apiKey' ? ` in ${scheme.in} "${scheme.name}"` : scheme.scheme ? ` ${scheme.scheme}` : '';
  return `${scheme.type}${where}`;
}

/** `name type NOT NULL`. */
export function columnText(column: ColumnInfo): string {
  return `${column.name} ${column.type}${column.nullable ? '' : ' NOT NULL'}`;
}

export function foreignKeyText(key: ForeignKeyInfo): string {
  return `FOREIGN KEY (${key.columns.join(', ')}) REFERENCES ${key.references.table} (${key.references.columns.join(', ')})`;
}

/** `tasks(first: Int = 10, after: String): TaskConnection!`, as schema language writes a field. */
export function graphqlFieldText(field: GraphqlField): string {
  const args = field.args.map(
    (arg) => `${arg.name}: ${arg.type}${arg.defaultValue !== undefined ? ` = ${arg.defaultValue}` : ''}`,
  );
  return `${field.name}${args.length > 0 ? `(${args.join(', ')})` : ''}: ${field.type}`;
}

/** `type Task`, `enum Status`, `input NewTask`. */
export function graphqlTypeTitle(type: GraphqlType): string {
  return `${type.kind} ${type.name}`;
}

/** A type's members, one line each: fields with their descriptions, an enum's values, a union's members. */
export function graphqlTypeLines(type: GraphqlType): string[] {
  const lines = type.fields.map(
    (field) =>
      `- ${graphqlFieldText(field)}${field.description ? `: ${field.description}` : ''}` +
      `${field.deprecated ? ` (deprecated: ${field.deprecated})` : ''}`,
  );
  if (type.values?.length) lines.push(`Values: ${type.values.join(', ')}`);
  if (type.possibleTypes?.length)
    lines.push(`${type.kind === 'union' ? 'Members' : 'Implemented by'}: ${type.possibleTypes.join(', ')}`);
  return lines;
}

function renderGraphql(document: GraphqlSchemaDocument, lines: string[]): void {
  lines.push('# GraphQL schema', `Source: ${document.source}`);
  if (document.endpoint) lines.push(`Endpoint: ${document.endpoint} (POST)`);
  for (const operation of document.operations) {
    lines.push('', `${operation.operation} ${graphqlFieldText(operation)}`);
    if (operation.description) lines.push(`  ${operation.description}`);
  }
  for (const type of document.types) {
    lines.push('', `${graphqlTypeTitle(type)}${type.description ? ` - ${type.description}` : ''}`);
    for (const line of graphqlTypeLines(type)) lines.push(`  ${line}`);
  }
}

function columns(list: ColumnInfo[]): string {
  return list.map((column) => `  ${columnText(column)}`).join('\n');
}

function renderDocument(document: SummaryDocument): string {
  const lines: string[] = [];
  switch (document.kind) {
    case 'openapi': {
      lines.push(
        `# ${document.title ?? 'API'}${document.version ? ` ${document.version}` : ''} (OpenAPI ${document.specVersion})`,
      );
      lines.push(`Source: ${document.source}`);
      if (document.servers.length > 0) lines.push(`Servers: ${document.servers.join(', ')}`);
      for (const scheme of document.securitySchemes) {
        lines.push(`Security scheme ${scheme.id}: ${schemeText(scheme)}`);
      }
      for (const operation of document.operations) {
        lines.push(
          '',
          `${operation.method} ${operation.path}${operation.summary ? ` - ${operation.summary}` : ''}`,
        );
        for (const parameter of operation.parameters) {
          lines.push(
            `  ${parameter.in} ${parameter.name}${parameter.type ? ` (${parameter.type})` : ''}${parameter.required ? ' required' : ''}${parameter.description ? `: ${parameter.description}` : ''}`,
          );
        }
      }
      break;
    }
    case 'text':
      lines.push(`# ${document.title ?? document.source}`, `Source: ${document.source}`);
      for (const section of document.sections) {
        lines.push('');
        if (section.heading) lines.push(`## ${section.heading}`);
        if (section.text) lines.push(section.text);
        for (const code of section.code ?? []) lines.push('```', code, '```');
      }
      break;
    case 'postgres-schema':
    case 'mysql-schema':
      lines.push(`# Database schema`, `Source: ${document.source}`);
      for (const table of document.tables) {
        lines.push(
          '',
          `TABLE ${table.schema}.${table.name} (~${Math.max(0, table.rowEstimate)} rows)`,
          columns(table.columns),
        );
        if (table.primaryKey.length > 0) lines.push(`  PRIMARY KEY (${table.primaryKey.join(', ')})`);
        for (const key of table.foreignKeys) lines.push(`  ${foreignKeyText(key)}`);
      }
      for (const view of document.views)
        lines.push('', `VIEW ${view.schema}.${view.name}`, columns(view.columns));
      break;
    case 'graphql-schema':
      renderGraphql(document, lines);
      break;
  }
  return lines.join('\n');
}

export function summaryToText(summary: DocumentationSummary): string {
  const parts = summary.documents.map(renderDocument);
  if (summary.skipped.length > 0) {
    parts.push(['# Not kept', ...summary.skipped.map((part) => `${part.source}: ${part.reason}`)].join('\n'));
  }
  if (summary.truncated) parts.push('(truncated: the retained-size limit was reached)');
  return `${parts.join('\n\n')}\n`;
}
