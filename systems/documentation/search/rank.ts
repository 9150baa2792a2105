/**
 * Okapi BM25 over the sections of one summary. A section's title counts twice (a heading, a method and
 * path, a table name say what the section is about); a term's weight falls with the number of sections
 * that have it (so `api` in every section counts for little) and a long section needs more occurrences
 * than a short one. Built once per kept summary and reused (search.ts keeps a few), so a search costs a
 * lookup per query term.
 */
import type { SearchSection } from './sections.ts';
import { termsOf } from './terms.ts';

/** BM25's usual constants: how fast repeated occurrences stop adding (k1), how much length counts (b). */
const K1 = 1.2;
const B = 0.75;
const TITLE_WEIGHT = 2;
/** Characters tokenised between two yields to the event loop while an index is built. */
const YIELD_EVERY_CHARS = 64 * 1024;

export interface SectionIndex {
  sections: readonly SearchSection[];
  /** Per term: the sections that have it and how often (title occurrences weighted). */
  postings: Map<string, Array<{ section: number; frequency: number }>>;
  lengths: number[];
  averageLength: number;
}

export interface Ranked {
  section: number;
  score: number;
  /** The query terms the section has. */
  terms: string[];
}

/**
 * Indexes the sections, yielding to the event loop every 64 K characters: a 2 MB summary takes a moment
 * to tokenise, and the API answers other requests meanwhile.
 */
export async function buildIndex(sections: readonly SearchSection[]): Promise<SectionIndex> {
  const postings: SectionIndex['postings'] = new Map();
  const lengths: number[] = [];
  let sinceYield = 0;
  for (const [index, section] of sections.entries()) {
    const counts = new Map<string, number>();
    for (const term of termsOf(section.title)) counts.set(term, (counts.get(term) ?? 0) + TITLE_WEIGHT);
    for (const term of termsOf(section.text)) counts.set(term, (counts.get(term) ?? 0) + 1);
    let length = 0;
    for (const [term, frequency] of counts) {
      length += frequency;
      const list = postings.get(term);
      if (list) list.push({ section: index, frequency });
      else postings.set(term, [{ section: index, frequency }]);
    }
    lengths.push(length);
    sinceYield += section.title.length + section.text.length;
    if (sinceYield >= YIELD_EVERY_CHARS) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const total = lengths.reduce((sum, length) => sum + length, 0);
  return { sections, postings, lengths, averageLength: lengths.length ? total / lengths.length : 0 };
}

/** Every section with at least one of the terms, best first (ties in document order). */
export function rank(index: SectionIndex, terms: readonly string[]): Ranked[] {
  const count = index.sections.length;
  const scores = new Map<number, Ranked>();
  for (const term of new Set(terms)) {
    const list = index.postings.get(term);
    if (!list) continue;
    // The BM25 idf that stays positive for a term in most sections.
    const idf = Math.log(1 + (count - list.length + 0.5) / (list.length + 0.5));
    for (const { section, frequency } of list) {
      const norm = 1 - B + (B * (index.lengths[section] as number)) / (index.averageLength || 1);
      const weight = (idf * frequency * (K1 + 1)) / (frequency + K1 * norm);
      const entry = scores.get(section) ?? { section, score: 0, terms: [] };
      entry.score += weight;
      entry.terms.push(term);
      scores.set(section, entry);
    }
  }
  return [...scores.values()].sort((a, b) => b.score - a.score || a.section - b.section);
}
