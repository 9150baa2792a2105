/**
 * How documentation text and search keywords become terms: one function for both, so they compare.
 * - Case, accents and punctuation do not count: `Rate-Limit`, `rate limit` and `RATE_LIMIT` give the same
 *   terms.
 * - An identifier is split where its words meet (`apiKey`, `api_key`, `api-key`, `APIKey` → `api`, `key`)
 *   and kept whole as well (`apikey`): `api key` finds `apiKey`, and `apiKey` finds it first.
 * - Plural endings are folded by suffix rules, without a dictionary (fold(): `orders` finds `order`,
 *   `entities` finds `entity`, `caches` finds `cache`); no other stemming (`paginate` does not find
 *   `pagination`): predictable, and what is searched for in API documentation is mostly nouns.
 * Pure.
 */

/** A word: letters and digits, joined by `_` or `-` (`api_key`, `rate-limit`). */
const WORD = /[\p{L}\p{M}\p{N}]+(?:[_-][\p{L}\p{M}\p{N}]+)*/gu;
/** Where the words of an identifier meet: `apiKey`, `v2Orders`, `HTTPServer`. */
const CAMEL = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})(?!\p{Lu}s$)/u;
/** `APIs`, `URLs`, `IDs`: the plural of an acronym. */
const ACRONYM_PLURAL = /^\p{Lu}{2,}s$/u;
const MARKS = /\p{M}/gu;
const PLAIN = /^[a-z0-9]+$/;
/** Longer words are tokens, hashes or base64, not something anyone searches for. */
const MAX_WORD = 64;

/**
 * Left out of a query unless nothing else is left: they match most sections and would rank by chance.
 * Documentation text keeps them (a query of only these still finds something).
 */
const STOP_WORDS = new Set(
  (
    'a an and are as at be but by can do does for from get has have how i if in into is it its me my ' +
    'not of on or our so than that the their then there these this to use using was we what when where ' +
    'which who why will with you your'
  ).split(' '),
);

function normalise(part: string): string {
  return part.normalize('NFKD').replace(MARKS, '').toLowerCase();
}

/**
 * Folds the endings that vary between the forms of a noun, so the forms meet: `orders` → `order`, `entities`
 * and `entity` → `entiti`, `cookies` and `cookie` → `cooki`, `caches` and `cache` → `cach`, `statuses` →
 * `status`, `arrays` and `array` → `arrai`. At least 3 letters are left; a word ending in a digit stays.
 */
export function fold(term: string): string {
  if (term.length <= 3 || /\d$/.test(term)) return term;
  let folded = term;
  if (/ies$/.test(folded) && folded.length >= 6) folded = folded.slice(0, -2);
  else if (/(?:ss|us|sis|xis)$/.test(folded)) return folded;
  else if (folded.endsWith('es') && folded.length >= 5) folded = folded.slice(0, -2);
  else if (folded.endsWith('s') || folded.endsWith('e')) folded = folded.slice(0, -1);
  return folded.length > 3 && folded.endsWith('y') ? `${folded.slice(0, -1)}i` : folded;
}

/** The parts of one word, normalised but not folded: `apiKey` → `api`, `key`. */
function partsOf(word: string): string[] {
  return word
    .split(/[_-]/)
    .flatMap((piece) => piece.split(CAMEL))
    .map((part) => (ACRONYM_PLURAL.test(part) ? part.slice(0, -1) : part))
    .map(normalise)
    .filter((part) => part.length > 0);
}

/** One word's terms: its folded parts, and the whole word when it has several parts. */
export function termsOfWord(word: string): string[] {
  if (word.length > MAX_WORD) return [];
  // Most words are plain lower-case ASCII: nothing to split or normalise.
  if (PLAIN.test(word)) return [fold(word)];
  const parts = partsOf(word);
  const terms = parts.map(fold);
  if (parts.length > 1) terms.push(fold(parts.join('')));
  return terms;
}

export interface WordSpan {
  start: number;
  end: number;
  terms: string[];
}

/** Each word of the text with where it is and its terms (for excerpts around matches). */
export function wordSpans(text: string): WordSpan[] {
  const spans: WordSpan[] = [];
  for (const match of text.matchAll(WORD)) {
    const terms = termsOfWord(match[0]);
    if (terms.length > 0) spans.push({ start: match.index, end: match.index + match[0].length, terms });
  }
  return spans;
}

/** The terms of a text, repeated as often as they occur. */
export function termsOf(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.matchAll(WORD)) terms.push(...termsOfWord(match[0]));
  return terms;
}

export interface QueryWord {
  /** As typed. */
  word: string;
  terms: string[];
}

export interface Query {
  words: QueryWord[];
  /** Every distinct term of the words, at most `maxTerms`. */
  terms: string[];
}

/**
 * The words of a query and their terms. Stop words and single letters are left out when other words
 * remain; words past `maxTerms` distinct terms are ignored (the request's bound on the work).
 */
export function parseQuery(keywords: string, maxTerms: number): Query {
  const all = [...keywords.matchAll(WORD)]
    .map((match) => ({ word: match[0], terms: termsOfWord(match[0]) }))
    .filter((entry) => entry.terms.length > 0);
  const meaningful = all.filter((entry) => {
    const parts = partsOf(entry.word);
    return parts.length > 1 || !(STOP_WORDS.has(parts[0] as string) || (parts[0] as string).length < 2);
  });
  const words: QueryWord[] = [];
  const terms: string[] = [];
  for (const entry of meaningful.length > 0 ? meaningful : all) {
    const fresh = entry.terms.filter((term) => !terms.includes(term));
    if (terms.length + fresh.length > maxTerms) break;
    terms.push(...fresh);
    if (!words.some((known) => known.word.toLowerCase() === entry.word.toLowerCase())) words.push(entry);
  }
  return { words, terms };
}
