/**
 * POST /v1/systems/{id}/documentation/search against a started server: a doc site crawled for real (HTML
 * pages, a PDF, a zip, an OpenAPI document), uploads, documentation still processing or failed, and keys
 * limited to other systems.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { DocumentationSearchAnswer } from '../../../contract/api/documentation.ts';
import { type DocSite, makePdf, startDocSite } from '../../support/doc-site.ts';
import { TEST_ADMIN_KEY, useTestApi, waitForDocumentation } from '../../support/embedded.ts';

interface State {
  status: 'pending' | 'ready' | 'failed';
  fetchedAt?: string;
  error?: string;
}
interface Result {
  score: number;
  title: string;
  text: string;
  matchedTerms: string[];
  source: { document: string; url?: string; openApiPath?: string; method?: string; page?: number };
}
interface Answer {
  success: boolean;
  data: string;
  results: Result[];
  total: number;
  limit: number;
  documentation?: State;
  message?: string;
}
const api = useTestApi();
let site: DocSite;
/** A documentation URL that answers only when released: documentation that stays pending meanwhile. */
let slow: Server;
let slowUrl: string;
const waiting: ServerResponse[] = [];

beforeAll(async () => {
  site = await startDocSite();
  slow = createServer((request, response) => {
    if (request.url === '/slow.md') waiting.push(response);
    else response.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
});

/** Answers the requests waiting for /slow.md: the documentation they belong to becomes ready. */
function releaseSlow(): void {
  for (const response of waiting.splice(0)) {
    response.writeHead(200, { 'content-type': 'text/markdown' });
    response.end('# Slow\n\nThe slow document, at last.\n');
  }
}

async function untilWaiting(count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (waiting.length < count) {
    if (Date.now() > deadline) throw new Error('the documentation was not requested');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

afterAll(async () => {
  for (const response of waiting) response.destroy();
  await site?.stop();
  slow?.closeAllConnections();
  await new Promise((resolve) => slow?.close(resolve));
});

function searchDocs(systemId: string, body: unknown, key?: string) {
  return api.call<Answer>('POST', `/v1/systems/${systemId}/documentation/search`, {
    body,
    ...(key ? { key } : {}),
  });
}

const settled = (systemId: string) => waitForDocumentation(api, systemId);

async function upload(systemId: string, file: string | Uint8Array, filename: string): Promise<void> {
  const response = await fetch(`${api.url}/v1/systems/${systemId}/documentation?filename=${filename}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
    body: file,
  });
  expect(response.status).toBe(202);
}

describe('a crawled doc site', () => {
  beforeAll(async () => {
    const created = await api.call('POST', '/v1/systems', {
      body: { id: 'inventory', url: `${site.url}/api`, documentationUrl: `${site.url}/docs/index.html` },
    });
    expect(created.status).toBe(201);
    expect((await settled('inventory')).status).toBe('ready');
  });

  it('finds an HTML section by its words and names the page it is on', async () => {
    const { status, body } = await searchDocs('inventory', { keywords: 'How often do keys ROTATE?' });
    expect(status).toBe(200);
    expect(body.results[0]).toMatchObject({
      title: 'Rotation',
      text: 'Keys rotate every 90 days.',
      matchedTerms: ['keys', 'ROTATE'],
      source: { url: `${site.url}/docs/auth.html` },
    });
    expect(body.documentation?.status).toBe('ready');
    expect(DocumentationSearchAnswer.safeParse(body).error).toBeUndefined();
    expect(body.data).toContain(
      `## 1. Rotation\nSource: ${site.url}/docs/auth.html\n\nKeys rotate every 90 days.`,
    );
  });

  it('finds an OpenAPI operation by its summary and parameters, with its path and method', async () => {
    const { body } = await searchDocs('inventory', { keywords: 'list inventory items page size' });
    expect(body.results[0]?.source).toEqual({
      document: `${site.url}/docs/openapi.yaml`,
      url: `${site.url}/docs/openapi.yaml`,
      openApiPath: '/items',
      method: 'GET',
    });
    expect(body.results[0]?.text).toContain('- query limit (integer): Page size for pagination');
  });

  it('finds the PDF text with its page, and a file of the zip by its entry', async () => {
    const pdf = await searchDocs('inventory', { keywords: 'rate limit requests per minute' });
    expect(pdf.body.results[0]?.source).toEqual({
      document: `${site.url}/docs/guide.pdf`,
      url: `${site.url}/docs/guide.pdf`,
      page: 1,
    });
    const zip = await searchDocs('inventory', { keywords: 'next cursor' });
    expect(zip.body.results[0]).toMatchObject({
      title: 'Pagination',
      source: { document: `${site.url}/docs/examples.zip!/examples/pagination.md` },
    });
    expect(zip.body.results[0]?.source.url).toBeUndefined();
  });

  it('answers at most `limit` sections, best first, and how many matched', async () => {
    const all = await searchDocs('inventory', { keywords: 'api items key' });
    expect(all.body.total).toBeGreaterThan(2);
    const two = await searchDocs('inventory', { keywords: 'api items key', limit: 2 });
    expect(two.body.results).toEqual(all.body.results.slice(0, 2));
    expect(two.body.total).toBe(all.body.total);
    expect(two.body.data).toContain(`(2 of ${all.body.total} matching sections shown)`);
    const scores = all.body.results.map((result) => result.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // More than the bound is clamped, not refused.
    expect((await searchDocs('inventory', { keywords: 'api', limit: 1000 })).body.limit).toBe(50);
  });

  it('answers "No relevant sections found" when nothing matches', async () => {
    const { status, body } = await searchDocs('inventory', { keywords: 'kubernetes helm chart' });
    expect(status).toBe(200);
    expect(body.results).toEqual([]);
    expect(body.data).toMatch(/^No relevant sections found for keywords: "kubernetes helm chart"/);
    expect(body.message).toBe(body.data);
  });

  it('refuses keywords that are empty, too long, or a body with unknown fields', async () => {
    for (const body of [
      {},
      { keywords: '   ' },
      { keywords: 'x'.repeat(1001) },
      { keywords: 'a', page: 2 },
    ]) {
      const answer = await api.call<ErrorBody>('POST', '/v1/systems/inventory/documentation/search', {
        body,
      });
      expect({ body, status: answer.status, code: answer.body.error.code }).toEqual({
        body,
        status: 400,
        code: 'KG_ERR_VALIDATION',
      });
    }
  });
});

describe('uploaded documentation', () => {
  it('an OpenAPI document: operations found by description and tag', async () => {
    await api.call('POST', '/v1/systems', { body: { id: 'shop', url: 'https://shop.example' } });
    await upload(
      'shop',
      `openapi: 3.0.3
info: { title: Shop, version: '1' }
paths:
  /orders/{orderId}/refunds:
    post:
      operationId: refundOrder
      summary: Refund an order
      description: Returns the money to the card that paid; partial refunds take an amount.
      tags: [Payments]
      parameters:
        - { name: orderId, in: path, required: true, schema: { type: string } }
  /customers:
    get: { operationId: listCustomers, summary: List customers }
`,
      'shop.yaml',
    );
    expect((await settled('shop')).status).toBe('ready');
    const { body } = await searchDocs('shop', { keywords: 'partial refund amount' });
    expect(body.results).toHaveLength(1);
    expect(body.results[0]).toMatchObject({
      title: 'POST /orders/{orderId}/refunds - Refund an order',
      source: { document: 'upload:shop.yaml', openApiPath: '/orders/{orderId}/refunds', method: 'POST' },
    });
    expect(body.results[0]?.text).toContain('Tags: Payments');
  });

  it('a PDF: the page each match is on', async () => {
    await api.call('POST', '/v1/systems', { body: { id: 'manual', url: 'https://manual.example' } });
    await upload(
      'manual',
      makePdf(['Chapter one covers installation.', 'Webhooks are signed with HMAC SHA256.']),
      'manual.pdf',
    );
    expect((await settled('manual')).status).toBe('ready');
    const { body } = await searchDocs('manual', { keywords: 'webhook signature hmac' });
    expect(body.results[0]).toMatchObject({
      text: 'Webhooks are signed with HMAC SHA256.',
      source: { document: 'upload:manual.pdf', page: 2 },
    });
  });
});

describe('documentation that is not ready', () => {
  it('still processing, with nothing kept: 409 naming its state, not an empty result', async () => {
    await api.call('POST', '/v1/systems', {
      body: { id: 'pending-docs', url: 'https://p.example', documentationUrl: `${slowUrl}/slow.md` },
    });
    const { status, body } = await api.call<ErrorBody>(
      'POST',
      '/v1/systems/pending-docs/documentation/search',
      { body: { keywords: 'anything' } },
    );
    expect(status).toBe(409);
    expect(body.error.code).toBe('KG_ERR_DOCUMENTATION_NOT_READY');
    expect(body.error.message).toBe(
      "the documentation of system 'pending-docs' is pending; no summary is kept yet",
    );
    await untilWaiting(1);
    releaseSlow();
    expect((await settled('pending-docs')).status).toBe('ready');
    const ready = await searchDocs('pending-docs', { keywords: 'slow document' });
    expect(ready.body.results[0]?.title).toBe('Slow');
  });

  it('failed, with nothing kept: 409 with the reason', async () => {
    await api.call('POST', '/v1/systems', {
      body: {
        id: 'broken-docs',
        url: 'https://b.example',
        documentationUrl: `${site.url}/docs/missing.html`,
      },
    });
    expect((await settled('broken-docs')).status).toBe('failed');
    const { status, body } = await api.call<ErrorBody>(
      'POST',
      '/v1/systems/broken-docs/documentation/search',
      {
        body: { keywords: 'anything' },
      },
    );
    expect(status).toBe(409);
    expect(body.error.code).toBe('KG_ERR_DOCUMENTATION_NOT_READY');
    expect(body.error.message).toMatch(/is failed: .*404/);
  });

  it('re-processing: the kept summary is searched, and the answer says a newer one is pending', async () => {
    await api.call('POST', '/v1/systems', {
      body: { id: 'refreshing', url: 'https://r.example', documentationUrl: `${site.url}/docs/auth.html` },
    });
    const first = await settled('refreshing');
    expect(first.status).toBe('ready');
    await api.call('PATCH', '/v1/systems/refreshing', { body: { documentationUrl: `${slowUrl}/slow.md` } });
    await untilWaiting(1);
    const { status, body } = await searchDocs('refreshing', { keywords: 'rotation' });
    expect(status).toBe(200);
    expect(body.results[0]?.title).toBe('Rotation');
    expect(body.documentation?.status).toBe('pending');
    const note = `These results come from the documentation made at ${first.fetchedAt}; the newer request (${slowUrl}/slow.md) is being processed.`;
    expect(body.message).toBe(note);
    expect(body.data.endsWith(`Note: ${note}`)).toBe(true);
    releaseSlow();
    expect((await settled('refreshing')).status).toBe('ready');
    const renewed = await searchDocs('refreshing', { keywords: 'rotation' });
    expect(renewed.body.results).toEqual([]);
    expect(renewed.body.message).toMatch(/^No relevant sections found/);
  });
});

describe('systems without documentation, unknown systems and restricted keys', () => {
  it('a system without documentation answers an empty result with a message', async () => {
    await api.call('POST', '/v1/systems', { body: { id: 'bare', url: 'https://bare.example' } });
    const { status, body } = await searchDocs('bare', { keywords: 'orders' });
    expect(status).toBe(200);
    expect(body).toEqual({
      success: true,
      data: '',
      results: [],
      total: 0,
      limit: 10,
      message:
        "system 'bare' has no documentation: set documentationUrl or PUT a file to /v1/systems/bare/documentation",
    });
  });

  it('an unknown system is 404 KG_ERR_SYSTEM_NOT_FOUND', async () => {
    const { status, body } = await api.call<ErrorBody>('POST', '/v1/systems/nowhere/documentation/search', {
      body: { keywords: 'orders' },
    });
    expect(status).toBe(404);
    expect(body.error).toEqual({
      code: 'KG_ERR_SYSTEM_NOT_FOUND',
      message: "system 'nowhere' not found",
      hint: expect.any(String),
    });
  });

  it('a key limited to other systems gets the answer of a system that does not exist, whatever the body', async () => {
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'shop reader', scopes: ['systems:read'], systemIds: ['shop'] },
    });
    const key = created.body.key;
    const refused = await api.call<ErrorBody>('POST', '/v1/systems/inventory/documentation/search', {
      key,
      body: { keywords: 'rotation' },
    });
    const invalid = await api.call<ErrorBody>('POST', '/v1/systems/inventory/documentation/search', {
      key,
      body: {},
    });
    const read = await api.call<ErrorBody>('GET', '/v1/systems/inventory', { key });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toEqual({
      code: 'KG_ERR_SYSTEM_NOT_FOUND',
      message: "system 'inventory' not found",
      hint: expect.any(String),
    });
    expect(invalid.body).toEqual(refused.body);
    expect(read.body).toEqual(refused.body);
    // Its own system it searches.
    const own = await searchDocs('shop', { keywords: 'refund' }, key);
    expect(own.status).toBe(200);
    expect(own.body.results[0]?.source.openApiPath).toBe('/orders/{orderId}/refunds');
  });
});
