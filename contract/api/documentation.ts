/**
 * `POST /v1/systems/{systemId}/documentation/search`: the body superglue's clients send (`sg system
 * search-docs` sends `{keywords}` and prints `data`, a string) and the answer, which adds the ranked
 * sections as data. The search itself: systems/documentation/search/.
 */
import { z } from 'zod';
import { pageLimit } from './paging.ts';
import { DocumentationState } from './system.ts';

/** Bounds of one search: the keywords' length, their distinct terms, the results and each one's text. */
export const DOCUMENTATION_SEARCH = {
  maxKeywordChars: 1000,
  maxTerms: 32,
  defaultResults: 10,
  maxResults: 50,
  maxExcerptChars: 2000,
} as const;

export const DocumentationSearchBody = z
  .strictObject({
    keywords: z
      .string()
      .trim()
      .min(1, 'give at least one word to search for')
      .max(DOCUMENTATION_SEARCH.maxKeywordChars)
      .describe(
        `Words to look for (case, accents and punctuation do not count; plurals match their singular). ` +
          `Words past ${DOCUMENTATION_SEARCH.maxTerms} distinct terms are ignored.`,
      ),
    limit: pageLimit(DOCUMENTATION_SEARCH.defaultResults, DOCUMENTATION_SEARCH.maxResults),
  })
  .meta({ id: 'DocumentationSearchBody' });

export const DocumentationSearchResult = z
  .object({
    score: z.number().describe('BM25 relevance; only comparable within one answer.'),
    title: z
      .string()
      .describe("The section's heading, the operation's method, path and summary, or the table."),
    text: z
      .string()
      .describe(
        `The section's text, or the part of at most ${DOCUMENTATION_SEARCH.maxExcerptChars} characters ` +
          'around the matches, `…` marking what was left out.',
      ),
    matchedTerms: z.array(z.string()).describe('The words of the keywords found in the section.'),
    source: z.object({
      document: z.string().describe('The document: its URL, `upload:<name>`, or `<archive>!/<entry>`.'),
      url: z
        .string()
        .optional()
        .describe("A fetched document's URL, with the section's fragment when known."),
      openApiPath: z.string().optional(),
      method: z.string().optional(),
      page: z.number().int().optional().describe('PDF: the page, from 1.'),
      table: z.string().optional().describe('Database schema: `schema.table` or view.'),
      graphql: z
        .string()
        .optional()
        .describe('GraphQL schema: the operation (`Query.tasks`, `Mutation.addTask`) or the type (`Task`).'),
    }),
  })
  .meta({ id: 'DocumentationSearchResult' });
export type DocumentationSearchResult = z.infer<typeof DocumentationSearchResult>;

export const DocumentationSearchAnswer = z
  .object({
    success: z.literal(true),
    data: z
      .string()
      .describe(
        'The results as text, what `sg system search-docs` prints; empty when the system has no ' +
          'documentation; `No relevant sections found …` when nothing matched.',
      ),
    results: z.array(DocumentationSearchResult).describe('Best first.'),
    total: z.number().int().describe('Sections that matched; results holds the first `limit` of them.'),
    limit: z.number().int(),
    documentation: DocumentationState.optional().describe(
      'The state of the documentation searched; absent when the system has none.',
    ),
    message: z
      .string()
      .optional()
      .describe('Why there are no results, or that they come from an older summary than the one requested.'),
  })
  .meta({ id: 'DocumentationSearchAnswer' });
export type DocumentationSearchAnswer = z.infer<typeof DocumentationSearchAnswer>;
