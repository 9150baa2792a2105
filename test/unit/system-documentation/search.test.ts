import { describe, expect, it } from 'vitest';
import { parseHtml } from '../../../systems/documentation/parsers/html.ts';
import { summariseOpenApiDocument } from '../../../systems/documentation/parsers/openapi.ts';
import type {
  DocumentationSummary,
  SummaryDocument,
} from '../../../systems/documentation/parsers/summary.ts';
import { parsePlainText } from '../../../systems/documentation/parsers/text.ts';
import { excerpt } from '../../../systems/documentation/search/excerpt.ts';
import { buildIndex, rank } from '../../../systems/documentation/search/rank.ts';
import { noMatch, renderResults } from '../../../systems/documentation/search/render.ts';
import { type SearchSection, sectionsOf } from '../../../systems/documentation/search/sections.ts';
import { parseQuery, termsOf } from '../../../systems/documentation/search/terms.ts';

function summary(...documents: SummaryDocument[]): DocumentationSummary {
  return { documents, skipped: [], truncated: false };
}

/** The titles of the sections that match the keywords, best first. */
async function search(sections: SearchSection[], keywords: string): Promise<string[]> {
  const index = await buildIndex(sections);
  return rank(index, parseQuery(keywords, 32).terms).map(({ section }) => sections[section]?.title ?? '');
}

const text = (title: string, body: string): SearchSection => ({
  title,
  text: body,
  source: { document: 'upload:guide.md' },
});

describe('search terms', () => {
  it('do not depend on case, accents or punctuation', () => {
    expect(termsOf('Rate-Limit!')).toEqual(termsOf('rate_limit'));
    expect(termsOf('RATE-LIMIT')).toEqual(termsOf('rate-limit'));
    expect(termsOf('Café, résumé.')).toEqual(termsOf('cafe resume'));
    expect(termsOf('"orders?"')).toEqual(termsOf('orders'));
  });

  it('split identifiers where their words meet and keep them whole too', () => {
    expect(termsOf('apiKey')).toEqual(termsOf('api_key'));
    expect(termsOf('apiKey')).toEqual(expect.arrayContaining([...termsOf('api key')]));
    expect(termsOf('HTTPServer')).toEqual(expect.arrayContaining([...termsOf('http server')]));
    expect(termsOf('APIs')).toEqual(termsOf('api'));
    expect(termsOf('userIDs')).toEqual(termsOf('user_id'));
  });

  it('fold plural endings so that singular and plural meet', () => {
    for (const [plural, singular] of [
      ['orders', 'order'],
      ['entities', 'entity'],
      ['cookies', 'cookie'],
      ['caches', 'cache'],
      ['searches', 'search'],
      ['addresses', 'address'],
      ['statuses', 'status'],
      ['arrays', 'array'],
      ['keys', 'key'],
      ['schemas', 'schema'],
      ['responses', 'response'],
    ]) {
      expect(termsOf(plural as string), plural).toEqual(termsOf(singular as string));
    }
    expect(termsOf('pagination')).not.toEqual(termsOf('paginate'));
  });

  it('leave stop words out of a query unless nothing else is left', () => {
    expect(parseQuery('How do I create an order?', 32).words.map((word) => word.word)).toEqual([
      'create',
      'order',
    ]);
    expect(parseQuery('the', 32).terms).toEqual(termsOf('the'));
  });

  it('are bounded: words past the distinct-term limit are ignored', () => {
    const query = parseQuery('alpha beta gamma delta alpha epsilon', 3);
    expect(query.words.map((word) => word.word)).toEqual(['alpha', 'beta', 'gamma']);
    expect(query.terms).toHaveLength(3);
  });
});

describe('ranking', () => {
  it('puts the section with the rarer word first', async () => {
    const sections = [
      text('Overview', 'The API returns JSON. Orders are listed by the API.'),
      text('Webhooks', 'The API signs webhooks with a signature header.'),
      text('Errors', 'The API answers errors as JSON.'),
    ];
    expect(await search(sections, 'api signature')).toEqual(['Webhooks', 'Overview', 'Errors']);
  });

  it('counts a word in the title above the same word in the text', async () => {
    const sections = [
      text('Introduction', 'Each request needs authentication with a key.'),
      text('Authentication', 'Each request needs a key.'),
    ];
    expect(await search(sections, 'authentication')).toEqual(['Authentication', 'Introduction']);
  });

  it('finds the sections whatever the case, punctuation and plural of the keywords', async () => {
    const sections = [text('Rate limits', 'At most 100 requests per minute.'), text('Orders', 'List them.')];
    expect(await search(sections, 'RATE-LIMIT')).toEqual(['Rate limits']);
    expect(await search(sections, 'rate limit')).toEqual(['Rate limits']);
    expect(await search(sections, 'request')).toEqual(['Rate limits']);
  });

  it('finds nothing for words no section has', async () => {
    expect(await search([text('Orders', 'List orders.')], 'invoice')).toEqual([]);
  });
});

describe('sections and where they come from', () => {
  it('OpenAPI: each operation with its path and method (description and tags kept), plus servers and authentication', async () => {
    const document = summariseOpenApiDocument(
      {
        openapi: '3.0.3',
        info: { title: 'Shop', version: '2' },
        servers: [{ url: 'https://shop.example/v2' }],
        components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Shop-Key' } } },
        paths: {
          '/orders': {
            post: {
              operationId: 'createOrder',
              summary: 'Create an order',
              description: 'Charges the customer once the order is confirmed.',
              tags: ['Orders'],
            },
            get: { operationId: 'listOrders', summary: 'List orders' },
          },
        },
      },
      'https://shop.example/openapi.json',
    );
    expect(document.operations.find((operation) => operation.method === 'POST')).toMatchObject({
      description: 'Charges the customer once the order is confirmed.',
      tags: ['Orders'],
    });
    const sections = sectionsOf(summary(document));
    expect(sections.map((section) => section.title)).toEqual([
      'Shop 2: servers and authentication',
      'GET /orders - List orders',
      'POST /orders - Create an order',
    ]);
    expect(sections[2]?.source).toEqual({
      document: 'https://shop.example/openapi.json',
      url: 'https://shop.example/openapi.json',
      openApiPath: '/orders',
      method: 'POST',
    });
    expect(await search(sections, 'charge customer')).toEqual(['POST /orders - Create an order']);
    expect(await search(sections, 'X-Shop-Key header')).toEqual(['Shop 2: servers and authentication']);
  });

  it('PDF: the page of each section, also in summaries stored before pages were kept', () => {
    const pdf = parsePlainText('First page.\fSecond page about webhooks.', 'upload:guide.pdf', 'pdf', [
      'Page 1',
      'Page 2',
    ]);
    expect(sectionsOf(summary(pdf)).map((section) => section.title)).toEqual([
      'guide.pdf, Page 1',
      'guide.pdf, Page 2',
    ]);
    expect(sectionsOf(summary(pdf)).map((section) => section.source)).toEqual([
      { document: 'upload:guide.pdf', page: 1 },
      { document: 'upload:guide.pdf', page: 2 },
    ]);
    // Before: the page only in the heading.
    const stored: SummaryDocument = {
      kind: 'text',
      source: 'https://docs.example/guide.pdf',
      format: 'pdf',
      sections: [
        { heading: 'Page 7', text: 'a' },
        { heading: 'Page 7 (continued)', text: 'b' },
      ],
    };
    expect(sectionsOf(summary(stored)).map((section) => section.source.page)).toEqual([7, 7]);
  });

  it("HTML: a section's URL points at its heading; archive entries and uploads have no URL", () => {
    const { document } = parseHtml(
      '<main><h1 id="guide">Guide</h1><p>Intro.</p><h2><a name="limits"></a>Rate limits</h2><p>100 a minute.</p>' +
        '<pre>curl https://api.example/items</pre><h2>Errors</h2><p>JSON.</p></main>',
      'https://docs.example/guide.html',
    );
    const sections = sectionsOf(summary(document));
    expect(sections.map((section) => section.source.url)).toEqual([
      'https://docs.example/guide.html#guide',
      'https://docs.example/guide.html#limits',
      'https://docs.example/guide.html',
    ]);
    expect(sections[1]?.text).toBe('100 a minute.\n\n```\ncurl https://api.example/items\n```');
    const zipped = sectionsOf(summary({ ...document, source: 'https://docs.example/all.zip!/guide.html' }))[0]
      ?.source;
    expect(zipped).toEqual({ document: 'https://docs.example/all.zip!/guide.html' });
  });

  it('database schema: a section per table and view', () => {
    const sections = sectionsOf(
      summary({
        kind: 'postgres-schema',
        source: 'postgres://db.example/shop',
        tables: [
          {
            schema: 'public',
            name: 'orders',
            columns: [{ name: 'customer_id', type: 'integer', nullable: false }],
            primaryKey: ['id'],
            foreignKeys: [{ columns: ['customer_id'], references: { table: 'customers', columns: ['id'] } }],
            rowEstimate: 10,
          },
        ],
        views: [{ schema: 'public', name: 'open_orders', columns: [] }],
      }),
    );
    expect(sections.map((section) => [section.title, section.source.table])).toEqual([
      ['TABLE public.orders', 'public.orders'],
      ['VIEW public.open_orders', 'public.open_orders'],
    ]);
    expect(sections[0]?.text).toContain('FOREIGN KEY (customer_id) REFERENCES customers (id)');
  });
});

describe('excerpts', () => {
  const terms = (keywords: string) => new Set(parseQuery(keywords, 32).terms);

  it('show a short section whole', () => {
    expect(excerpt('Keys rotate every 90 days.', terms('rotate'), 100)).toBe('Keys rotate every 90 days.');
  });

  it('cut a long section around the most different matched words, within the bound, marked with …', () => {
    const long = `${'filler words here. '.repeat(200)}Refresh the token before it expires. ${'more filler. '.repeat(20)}The token lasts an hour. ${'tail text. '.repeat(200)}`;
    const cut = excerpt(long, terms('refresh token'), 300);
    expect(cut).toMatch(/^… .*Refresh the token before it expires\..* …$/s);
    expect(cut.length).toBeLessThanOrEqual(300 + 4);
    // Cut at word boundaries.
    expect(cut.slice(2, -2).trim()).toMatch(/^\S+( \S+)*$/s);
    expect(cut).not.toMatch(/^… \S*[a-z]er words/);
  });

  it('close a code block they cut open', () => {
    const code = `Example:\n\n\`\`\`\n${'line();\n'.repeat(100)}paginate(cursor);\n${'line();\n'.repeat(100)}\`\`\``;
    const cut = excerpt(code, terms('cursor'), 200);
    expect(cut).toContain('paginate(cursor);');
    expect(cut.startsWith('…\n```\n')).toBe(true);
    expect(cut.endsWith('\n```\n…')).toBe(true);
  });
});

describe('the text `sg system search-docs` prints', () => {
  it('says "No relevant sections found" first when nothing matched, as the CLI expects', () => {
    const text = renderResults('invoice', { results: [], total: 0, sections: 12 }, undefined);
    expect(text.startsWith('No relevant sections found')).toBe(true);
    expect(text).toBe(noMatch('invoice', 12));
  });

  it('shows each result as a heading, where it came from, its text, and how many more matched', () => {
    const text = renderResults(
      'orders',
      {
        results: [
          {
            score: 2.5,
            title: 'GET /orders - List orders',
            text: 'operationId: listOrders',
            matchedTerms: ['orders'],
            source: { document: 'upload:shop.yaml', openApiPath: '/orders', method: 'GET' },
          },
        ],
        total: 3,
        sections: 9,
      },
      'the newer request is being processed.',
    );
    expect(text).toBe(
      '## 1. GET /orders - List orders\nSource: upload:shop.yaml (GET /orders)\n\noperationId: listOrders\n\n' +
        '(1 of 3 matching sections shown)\n\nNote: the newer request is being processed.',
    );
  });
});
