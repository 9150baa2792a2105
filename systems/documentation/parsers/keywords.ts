/**
 * `documentationKeywords` narrow what is kept: text sections and OpenAPI operations that mention none of the
 * keywords (case-insensitive) are dropped. An OpenAPI document keeps its servers and security schemes, which
 * the engine needs whatever the keywords; a database schema keeps the tables and views whose names or
 * columns mention one; a GraphQL schema the types whose names, descriptions or fields mention one, and
 * the operations that mention one or return such a type. Pure.
 */
import type { DocumentationSummary, SummaryDocument } from './summary.ts';

function mentions(keywords: string[], ...texts: Array<string | undefined>): boolean {
  const haystack = texts.filter(Boolean).join('\n').toLowerCase();
  return keywords.some((keyword) => haystack.includes(keyword));
}

function narrowDocument(document: SummaryDocument, keywords: string[]): SummaryDocument | undefined {
  switch (document.kind) {
    case 'openapi':
      return {
        ...document,
        operations: document.operations.filter((operation) =>
          mentions(
            keywords,
            operation.path,
            operation.operationId,
            operation.summary,
            operation.description,
            ...operation.parameters.map((parameter) => `${parameter.name} ${parameter.description ?? ''}`),
          ),
        ),
      };
    case 'text': {
      const sections = document.sections.filter((section) =>
        mentions(keywords, section.heading, section.text, ...(section.code ?? [])),
      );
      return sections.length > 0 ? { ...document, sections } : undefined;
    }
    case 'postgres-schema':
    case 'mysql-schema': {
      const columnsMention = (columns: Array<{ name: string }>) =>
        columns.some((column) => mentions(keywords, column.name));
      const tables = document.tables.filter(
        (table) => mentions(keywords, table.name) || columnsMention(table.columns),
      );
      const views = document.views.filter(
        (view) => mentions(keywords, view.name) || columnsMention(view.columns),
      );
      return { ...document, tables, views };
    }
    case 'graphql-schema': {
      const fieldsMention = (fields: Array<{ name: string; description?: string }>) =>
        fields.some((field) => mentions(keywords, field.name, field.description));
      const types = document.types.filter(
        (type) =>
          mentions(keywords, type.name, type.description, ...(type.values ?? [])) ||
          fieldsMention(type.fields),
      );
      const kept = new Set(types.map((type) => type.name));
      return {
        ...document,
        // An operation stays when it mentions a keyword or returns a type that stays.
        operations: document.operations.filter(
          (operation) =>
            mentions(keywords, operation.name, operation.description) ||
            fieldsMention(operation.args) ||
            kept.has(operation.type.replace(/[[\]!]/g, '')),
        ),
        types,
      };
    }
  }
}

export function narrowToKeywords(
  summary: DocumentationSummary,
  keywords: readonly string[] | undefined,
): DocumentationSummary {
  const wanted = (keywords ?? []).map((keyword) => keyword.trim().toLowerCase()).filter(Boolean);
  if (wanted.length === 0) return summary;
  const documents = summary.documents.flatMap((document) => {
    const narrowed = narrowDocument(document, wanted);
    return narrowed ? [narrowed] : [];
  });
  return { ...summary, documents };
}
