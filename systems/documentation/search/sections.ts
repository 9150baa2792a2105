/**
 * What a search looks through: a kept summary cut into sections, each with a title, its text and where it
 * came from. A section is what the summary already keeps apart:
 * - a text document (HTML page, Markdown, plain text, PDF): each of its sections — an HTML page is cut at
 *   its headings (the URL gets the heading's id as its fragment), Markdown at `#` headings, a PDF per page;
 * - an OpenAPI document: each operation (method and path), plus one for its servers and security schemes;
 * - a database schema: each table and view;
 * - a GraphQL schema: each operation (a root field of Query, Mutation, Subscription: its arguments and what
 *   its result holds), each other type, and one for the endpoint and root types.
 * Summaries stored before sections kept their PDF page say it only in the heading (`Page 3`): read there.
 * Pure.
 */
import {
  columnText,
  foreignKeyText,
  graphqlFieldText,
  graphqlTypeLines,
  graphqlTypeTitle,
  schemeText,
} from '../parsers/render.ts';
import type {
  ColumnInfo,
  DatabaseSchemaDocument,
  DocumentationSummary,
  GraphqlSchemaDocument,
  OpenApiDocument,
  OpenApiOperation,
  SummaryDocument,
  TextDocument,
  TextSection,
} from '../parsers/summary.ts';

export interface SectionSource {
  /** The document as the summary names it: its URL, `upload:<name>`, or `<archive>!/<entry>`. */
  document: string;
  /** The document's URL (with the section's fragment when it has one), when it was fetched. */
  url?: string;
  openApiPath?: string;
  method?: string;
  /** PDF: the page, from 1. */
  page?: number;
  /** A database schema's table or view: `schema.name`. */
  table?: string;
  /** A GraphQL schema's operation (`Query.tasks`) or type (`Task`). */
  graphql?: string;
}

export interface SearchSection {
  title: string;
  text: string;
  source: SectionSource;
}

/** A fetched document's URL: an http(s) source that is not an entry inside an archive. */
function urlOf(document: string, fragment?: string): string | undefined {
  if (!/^https?:\/\//i.test(document) || document.includes('!/')) return undefined;
  try {
    const url = new URL(document);
    if (fragment) url.hash = fragment;
    return url.toString();
  } catch {
    return undefined;
  }
}

function sourceOf(document: string, extra: Omit<SectionSource, 'document' | 'url'> = {}, fragment?: string) {
  const url = urlOf(document, fragment);
  return { document, ...(url ? { url } : {}), ...extra };
}

const OLD_PAGE_HEADING = /^Page (\d+)(?: \(continued\))?$/;

function pageOf(document: TextDocument, section: TextSection): number | undefined {
  if (section.page !== undefined) return section.page;
  if (document.format !== 'pdf') return undefined;
  const old = section.heading ? OLD_PAGE_HEADING.exec(section.heading) : null;
  return old ? Number(old[1]) : undefined;
}

function textSections(document: TextDocument): SearchSection[] {
  const fallbackTitle = document.title ?? document.source.replace(/^.*[/!:]/, '');
  return document.sections.map((section) => {
    const code = (section.code ?? []).map((block) => `\`\`\`\n${block}\n\`\`\``);
    const page = pageOf(document, section);
    // A PDF's headings are its page labels: the document's name says more next to them.
    const heading =
      document.format === 'pdf' && section.heading ? `${fallbackTitle}, ${section.heading}` : section.heading;
    return {
      title: heading ?? fallbackTitle,
      text: [section.text, ...code].filter(Boolean).join('\n\n'),
      source: sourceOf(document.source, page === undefined ? {} : { page }, section.anchor),
    };
  });
}

function operationSection(document: OpenApiDocument, operation: OpenApiOperation): SearchSection {
  const lines: string[] = [];
  if (operation.operationId) lines.push(`operationId: ${operation.operationId}`);
  if (operation.tags?.length) lines.push(`Tags: ${operation.tags.join(', ')}`);
  if (operation.description) lines.push(operation.description);
  if (operation.parameters.length > 0) {
    lines.push('Parameters:');
    for (const parameter of operation.parameters) {
      const traits = [parameter.type, parameter.required ? 'required' : undefined].filter(Boolean);
      lines.push(
        `- ${parameter.in} ${parameter.name}${traits.length ? ` (${traits.join(', ')})` : ''}` +
          `${parameter.description ? `: ${parameter.description}` : ''}`,
      );
    }
  }
  const security = operation.security ?? document.security;
  if (security.length > 0) lines.push(`Security: ${security.join(', ')}`);
  return {
    title: `${operation.method} ${operation.path}${operation.summary ? ` - ${operation.summary}` : ''}`,
    text: lines.join('\n'),
    source: sourceOf(document.source, { openApiPath: operation.path, method: operation.method }),
  };
}

/** The document's servers and how it authenticates, which a question about auth or base URLs looks for. */
function overviewSection(document: OpenApiDocument): SearchSection | undefined {
  if (document.servers.length === 0 && document.securitySchemes.length === 0) return undefined;
  const lines = [`OpenAPI ${document.specVersion}`];
  if (document.servers.length > 0) lines.push(`Servers: ${document.servers.join(', ')}`);
  if (document.securitySchemes.length > 0) lines.push('Security schemes (authentication):');
  for (const scheme of document.securitySchemes) {
    lines.push(`- ${scheme.id}: ${schemeText(scheme)}${scheme.description ? `: ${scheme.description}` : ''}`);
  }
  if (document.security.length > 0)
    lines.push(`Required unless an operation says otherwise: ${document.security.join(', ')}`);
  const name = `${document.title ?? 'API'}${document.version ? ` ${document.version}` : ''}`;
  return {
    title: `${name}: servers and authentication`,
    text: lines.join('\n'),
    source: sourceOf(document.source),
  };
}

function schemaSections(document: DatabaseSchemaDocument): SearchSection[] {
  const column = (c: ColumnInfo) => `- ${columnText(c)}${c.default ? ` DEFAULT ${c.default}` : ''}`;
  const tables = document.tables.map((table) => {
    const name = `${table.schema}.${table.name}`;
    const lines = table.columns.map(column);
    if (table.primaryKey.length > 0) lines.push(`PRIMARY KEY (${table.primaryKey.join(', ')})`);
    for (const key of table.foreignKeys) lines.push(foreignKeyText(key));
    if (table.rowEstimate >= 0) lines.push(`About ${table.rowEstimate} rows`);
    return {
      title: `TABLE ${name}`,
      text: lines.join('\n'),
      source: sourceOf(document.source, { table: name }),
    };
  });
  const views = document.views.map((view) => {
    const name = `${view.schema}.${view.name}`;
    return {
      title: `VIEW ${name}`,
      text: view.columns.map(column).join('\n'),
      source: sourceOf(document.source, { table: name }),
    };
  });
  return [...tables, ...views];
}

function graphqlSections(document: GraphqlSchemaDocument): SearchSection[] {
  const types = new Map(document.types.map((type) => [type.name, type]));
  const roots = {
    query: document.queryType,
    mutation: document.mutationType,
    subscription: document.subscriptionType,
  };
  const overview: SearchSection = {
    title: 'GraphQL schema: endpoint and root types',
    text: [
      document.endpoint
        ? `GraphQL endpoint: ${document.endpoint} (POST, JSON body {query, variables, operationName})`
        : undefined,
      ...Object.entries(roots).map(([operation, name]) => (name ? `${operation} type: ${name}` : undefined)),
      `${document.operations.length} operations, ${document.types.length} types`,
    ]
      .filter(Boolean)
      .join('\n'),
    source: sourceOf(document.source),
  };
  const operations = document.operations.map((operation) => {
    const lines = [`${operation.operation} ${graphqlFieldText(operation)}`];
    if (operation.description) lines.push(operation.description);
    if (operation.deprecated) lines.push(`Deprecated: ${operation.deprecated}`);
    if (operation.args.length > 0) lines.push('Arguments:');
    for (const arg of operation.args) {
      lines.push(
        `- ${arg.name}: ${arg.type}${arg.defaultValue !== undefined ? ` = ${arg.defaultValue}` : ''}` +
          `${arg.description ? `: ${arg.description}` : ''}`,
      );
    }
    // What the result holds, so a search for one of its fields finds the operation too.
    const result = types.get(operation.type.replace(/[[\]!]/g, ''));
    if (result) lines.push(`Returns ${graphqlTypeTitle(result)}:`, ...graphqlTypeLines(result));
    const root = roots[operation.operation] ?? operation.operation;
    return {
      title: `${operation.operation} ${operation.name}: ${operation.type}${operation.description ? ` - ${operation.description}` : ''}`,
      text: lines.join('\n'),
      source: sourceOf(document.source, { graphql: `${root}.${operation.name}` }),
    };
  });
  const typeSections = document.types.map((type) => ({
    title: `${graphqlTypeTitle(type)}${type.description ? ` - ${type.description}` : ''}`,
    text: graphqlTypeLines(type).join('\n'),
    source: sourceOf(document.source, { graphql: type.name }),
  }));
  return [overview, ...operations, ...typeSections];
}

function documentSections(document: SummaryDocument): SearchSection[] {
  switch (document.kind) {
    case 'text':
      return textSections(document);
    case 'openapi': {
      const overview = overviewSection(document);
      const operations = document.operations.map((operation) => operationSection(document, operation));
      return overview ? [overview, ...operations] : operations;
    }
    case 'postgres-schema':
    case 'mysql-schema':
      return schemaSections(document);
    case 'graphql-schema':
      return graphqlSections(document);
  }
}

export function sectionsOf(summary: DocumentationSummary): SearchSection[] {
  return summary.documents.flatMap(documentSections);
}
