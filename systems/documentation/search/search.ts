/**
 * Keyword search over a system's kept documentation summary: the summary cut into sections (sections.ts),
 * ranked with BM25 (rank.ts), each result's text cut around its matches (excerpt.ts). What is searched is
 * the summary kept last, whatever a newer request is doing: while one is pending or after it failed, the
 * answer says so (render.ts) rather than answering nothing.
 *
 * The index of a summary is built on the first search and kept for the next ones (a few summaries, the
 * most recently searched), keyed by when the summary was made, so a newer summary is indexed afresh.
 */
import { DOCUMENTATION_SEARCH, type DocumentationSearchResult } from '../../../contract/api/documentation.ts';
import type { DocumentationKey, DocumentationStore, StoredDocumentationState } from '../../../store/index.ts';
import type { DocumentationSummary } from '../parsers/summary.ts';
import { excerpt } from './excerpt.ts';
import { buildIndex, rank, type SectionIndex } from './rank.ts';
import { sectionsOf } from './sections.ts';
import { parseQuery } from './terms.ts';

/** Summaries whose index is kept; each is at most KUBEGLUE_DOCS_MAX_RETAINED_CHARS of text. */
const KEPT_INDEXES = 4;

export type SearchOutcome =
  /** The system has no documentation. */
  | { kind: 'none' }
  /** Documentation was requested, but no summary is kept yet (pending, or failed). */
  | { kind: 'not-ready'; state: StoredDocumentationState }
  | {
      kind: 'searched';
      state: StoredDocumentationState;
      results: DocumentationSearchResult[];
      /** Sections that matched (results holds the first `limit`). */
      total: number;
      /** Sections searched. */
      sections: number;
    };

export class DocumentationSearch {
  readonly #store: Pick<DocumentationStore, 'state' | 'summary'>;
  /** By variant and summary time, most recently used last. */
  readonly #indexes = new Map<string, Promise<SectionIndex | undefined>>();

  constructor(store: Pick<DocumentationStore, 'state' | 'summary'>) {
    this.#store = store;
  }

  async search(key: DocumentationKey, keywords: string, limit: number): Promise<SearchOutcome> {
    const state = await this.#store.state(key);
    if (!state) return { kind: 'none' };
    // fetchedAt is written with the summary, in one statement: without it no summary is kept.
    const index = state.fetchedAt ? await this.#index(key, state.fetchedAt) : undefined;
    if (!index) return { kind: 'not-ready', state };
    const query = parseQuery(keywords, DOCUMENTATION_SEARCH.maxTerms);
    const ranked = rank(index, query.terms);
    const results = ranked.slice(0, limit).map(({ section, score, terms }) => {
      const { title, text, source } = index.sections[section] as SectionIndex['sections'][number];
      const found = new Set(terms);
      return {
        score: Math.round(score * 1000) / 1000,
        title,
        text: excerpt(text, found, DOCUMENTATION_SEARCH.maxExcerptChars),
        matchedTerms: query.words
          .filter((word) => word.terms.some((term) => found.has(term)))
          .map((word) => word.word),
        source,
      };
    });
    return { kind: 'searched', state, results, total: ranked.length, sections: index.sections.length };
  }

  #index(key: DocumentationKey, fetchedAt: string): Promise<SectionIndex | undefined> {
    const name = `${key.systemId}\u0000${key.environment}\u0000${fetchedAt}`;
    let index = this.#indexes.get(name);
    if (index) {
      this.#indexes.delete(name);
    } else {
      index = this.#build(key);
      // A failed build (or a summary gone meanwhile) is not kept: the next search tries again.
      const forget = () => this.#indexes.delete(name);
      index.then((built) => built ?? forget(), forget);
    }
    this.#indexes.set(name, index);
    for (const oldest of this.#indexes.keys()) {
      if (this.#indexes.size <= KEPT_INDEXES) break;
      this.#indexes.delete(oldest);
    }
    return index;
  }

  async #build(key: DocumentationKey): Promise<SectionIndex | undefined> {
    const text = await this.#store.summary(key);
    if (text === undefined) return undefined;
    return buildIndex(sectionsOf(JSON.parse(text) as DocumentationSummary));
  }
}
