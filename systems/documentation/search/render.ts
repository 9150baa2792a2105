/**
 * A search's answer as text, what `sg system search-docs` prints (it shows `data` line by line, headings
 * `## …` highlighted). The texts it recognises are kept: an empty answer is "no documentation", one that
 * starts with `No relevant sections found` is "nothing matched". Pure.
 */
import type { DocumentationSearchResult } from '../../../contract/api/documentation.ts';
import type { StoredDocumentationState } from '../../../store/index.ts';

export function whereFrom(source: DocumentationSearchResult['source']): string {
  const details = [
    source.method && source.openApiPath ? `${source.method} ${source.openApiPath}` : undefined,
    source.page === undefined ? undefined : `page ${source.page}`,
    source.table ? `table ${source.table}` : undefined,
    source.graphql ? `GraphQL ${source.graphql}` : undefined,
  ].filter(Boolean);
  return `${source.url ?? source.document}${details.length ? ` (${details.join(', ')})` : ''}`;
}

export function noMatch(keywords: string, sections: number): string {
  return (
    `No relevant sections found for keywords: "${keywords}" (${sections} section${sections === 1 ? '' : 's'} ` +
    'searched). Try other or fewer words.'
  );
}

/** Why the results come from an older summary, when a newer request is pending or failed; else undefined. */
export function staleNote(state: StoredDocumentationState): string | undefined {
  if (state.status === 'ready') return undefined;
  const newer =
    state.status === 'pending' ? 'is being processed' : `failed${state.error ? `: ${state.error}` : ''}`;
  return `These results come from the documentation made at ${state.fetchedAt}; the newer request (${state.source}) ${newer}.`;
}

export function renderResults(
  keywords: string,
  outcome: { results: DocumentationSearchResult[]; total: number; sections: number },
  note: string | undefined,
): string {
  const parts =
    outcome.results.length === 0
      ? [noMatch(keywords, outcome.sections)]
      : outcome.results.map(
          (result, index) =>
            `## ${index + 1}. ${result.title}\nSource: ${whereFrom(result.source)}${result.text ? `\n\n${result.text}` : ''}`,
        );
  if (outcome.total > outcome.results.length) {
    parts.push(`(${outcome.results.length} of ${outcome.total} matching sections shown)`);
  }
  if (note) parts.push(`Note: ${note}`);
  return parts.join('\n\n');
}
