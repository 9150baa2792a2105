import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  API_KEY_PARAM,
  type DocSite,
  makeLyingZipBomb,
  makeZipBomb,
  PDF_TEXT,
  startDocSite,
} from '../../support/doc-site.ts';
import { TEST_ADMIN_KEY, useTestApi, waitForDocumentation } from '../../support/embedded.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';

const API_KEY = 'inventory-key-5f2c9e81d4';
const MAX_BYTES = 4 * 1024 * 1024;

interface State {
  status: 'pending' | 'ready' | 'failed';
  source: string;
  fetchedAt?: string;
  error?: string;
}
interface SystemAnswer {
  data: {
    documentation?: State;
    apiKeyPlacement?: { in: string; name?: string; source: string; detail?: string };
  };
}
// biome-ignore lint/suspicious/noExplicitAny: summaries are read field by field
type Summary = { documents: any[]; skipped: Array<{ source: string; reason: string }>; truncated: boolean };

const api = useTestApi({ KUBEGLUE_DOCS_MAX_BYTES: String(MAX_BYTES) });
let site: DocSite;
let database: TestDatabase;

beforeAll(async () => {
  site = await startDocSite();
  database = await createTestDatabase(inject('databaseUrl'));
});

afterAll(async () => {
  await site?.stop();
  await database?.drop();
});

const settled = (systemId: string) => waitForDocumentation(api, systemId);

async function summaryOf(systemId: string): Promise<Summary> {
  const { status, body } = await api.call<{ data: { summary: Summary } }>(
    'GET',
    `/v1/systems/${systemId}/documentation`,
  );
  expect(status).toBe(200);
  return body.data.summary;
}

describe('documentation of a doc site', () => {
  it('is processed in the background: the system answers at once with a pending state', async () => {
    const created = await api.call<SystemAnswer>('POST', '/v1/systems', {
      body: {
        id: 'inventory',
        url: `${site.url}/api`,
        documentationUrl: `${site.url}/docs/index.html`,
        authType: 'apiKey',
        credentials: { apiKey: API_KEY },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.documentation).toMatchObject({
      status: 'pending',
      source: `${site.url}/docs/index.html`,
    });
    const state = await settled('inventory');
    expect(state.status).toBe('ready');
    expect(state.fetchedAt).toBeDefined();
  });

  it('keeps the OpenAPI servers, security schemes and dereferenced operations', async () => {
    const summary = await summaryOf('inventory');
    const openapi = summary.documents.find((doc) => doc.kind === 'openapi');
    expect(openapi).toMatchObject({
      source: `${site.url}/docs/openapi.yaml`,
      title: 'Inventory API',
      specVersion: '3.0.3',
      servers: ['/api'],
      securitySchemes: [{ id: 'queryKey', type: 'apiKey', in: 'query', name: API_KEY_PARAM }],
    });
    expect(openapi.validationError).toBeUndefined();
    expect(openapi.operations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          method: 'GET',
          path: '/items',
          summary: 'List inventory items',
          parameters: [expect.objectContaining({ name: 'limit', in: 'query', type: 'integer' })],
        }),
        // The parameter was a $ref: dereferenced.
        expect.objectContaining({
          path: '/items/{id}',
          parameters: [{ name: 'id', in: 'path', required: true, type: 'integer' }],
        }),
      ]),
    );
  });

  it('follows same-origin links: HTML main text and code, the PDF text, every supported file of the zip', async () => {
    const summary = await summaryOf('inventory');
    const sources = summary.documents.map((doc) => doc.source);
    expect(sources).toEqual(
      expect.arrayContaining([
        `${site.url}/docs/index.html`,
        `${site.url}/docs/auth.html`,
        `${site.url}/docs/guide.pdf`,
        `${site.url}/docs/examples.zip!/examples/pagination.md`,
        `${site.url}/docs/examples.zip!/examples/errors.txt`,
      ]),
    );
    expect(sources.some((source) => source.includes('elsewhere'))).toBe(false);
    const index = summary.documents.find((doc) => doc.source === `${site.url}/docs/index.html`);
    expect(index.title).toBe('Inventory docs');
    expect(index.sections).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          heading: 'Quick start',
          code: ['curl "$BASE/api/items?api_key=KEY"'],
        }),
      ]),
    );
    const indexText = JSON.stringify(index);
    expect(indexText).not.toContain('navigation text');
    expect(indexText).not.toContain('Copyright footer');
    expect(indexText).not.toContain('tracking');
    const pdf = summary.documents.find((doc) => doc.source.endsWith('guide.pdf'));
    expect(pdf.sections[0]).toMatchObject({ heading: 'Page 1', text: PDF_TEXT });
    const markdown = summary.documents.find((doc) => doc.source.endsWith('pagination.md'));
    expect(markdown.sections[0]).toMatchObject({
      heading: 'Pagination',
      code: ['curl "$BASE/api/items?limit=10"'],
    });
    expect(summary.skipped).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: `${site.url}/docs/examples.zip!/examples/logo.bin` }),
      ]),
    );
  });

  it('shows where the API key goes and that the documentation decided it', async () => {
    const { body } = await api.call<SystemAnswer>('GET', '/v1/systems/inventory');
    expect(body.data.apiKeyPlacement).toEqual({
      in: 'query',
      name: API_KEY_PARAM,
      source: 'documentation',
      detail: `${site.url}/docs/openapi.yaml#securitySchemes/queryKey`,
    });
  });

  it('puts the key where the documentation says in the run that follows', async () => {
    const tool = await api.call('POST', '/v1/tools', {
      body: { id: 'list-items', steps: [{ id: 'items', config: { url: '/items', systemId: 'inventory' } }] },
    });
    expect(tool.status).toBe(201);
    const run = await api.call<{ status: string }>('POST', '/v1/tools/list-items/run', {
      body: { inputs: {} },
    });
    expect(run.body.status).toBe('success');
    const seen = site.apiRequests.at(-1);
    expect(new URL(seen?.url ?? '', site.url).searchParams.get(API_KEY_PARAM)).toBe(API_KEY);
    expect(seen?.headers.authorization).toBeUndefined();
  });

  it('answers ?format=text with the summary as plain text', async () => {
    const response = await api.call('GET', '/v1/systems/inventory/documentation?format=text');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(response.text).toContain('GET /items - List inventory items');
    expect(response.text).toContain(`Security scheme queryKey: apiKey in query "${API_KEY_PARAM}"`);
    expect(response.text).toContain(PDF_TEXT);
  });

  it('narrows what is kept to sections that mention the keywords', async () => {
    const updated = await api.call<SystemAnswer>('PUT', '/v1/systems/inventory', {
      body: { documentationUrl: `${site.url}/docs/index.html`, documentationKeywords: ['rotate'] },
    });
    expect(updated.body.data.documentation?.status).toBe('pending');
    expect((await settled('inventory')).status).toBe('ready');
    const summary = await summaryOf('inventory');
    const texts = summary.documents.filter((doc) => doc.kind === 'text');
    expect(texts.map((doc) => doc.source)).toEqual([`${site.url}/docs/auth.html`]);
    expect(texts[0].sections).toEqual([{ heading: 'Rotation', text: 'Keys rotate every 90 days.' }]);
    // Security schemes are kept whatever the keywords: the engine needs them.
    const openapi = summary.documents.find((doc) => doc.kind === 'openapi');
    expect(openapi.securitySchemes).toHaveLength(1);
    expect(openapi.operations).toEqual([]);
  });

  it('never shows the API key in any answer', () => {
    for (const body of api.bodies) expect(body).not.toContain(API_KEY);
  });
});

describe('documentation limits', () => {
  it('refuses a 1 GB response at the size limit without reading it all', async () => {
    for (const [id, path] of [
      ['huge', '/huge'],
      ['huge-stream', '/huge-unannounced'],
    ] as const) {
      await api.call('POST', '/v1/systems', {
        body: { id, url: site.url, documentationUrl: `${site.url}${path}` },
      });
      const state = await settled(id);
      expect(state.status).toBe('failed');
      expect(state.error).toBe(
        `documentation at ${site.url}${path} is larger than the limit of ${MAX_BYTES} bytes (KUBEGLUE_DOCS_MAX_BYTES); the download was stopped`,
      );
    }
    // Only what the socket buffers held beyond the limit went out, not the gigabyte.
    expect(site.hugeBytesSent()).toBeLessThan(64 * 1024 * 1024);
  });

  async function uploadBomb(systemId: string, bomb: Uint8Array): Promise<State> {
    await api.call('POST', '/v1/systems', { body: { id: systemId, url: site.url } });
    expect(bomb.length).toBeLessThan(MAX_BYTES);
    const response = await fetch(`${api.url}/v1/systems/${systemId}/documentation?filename=docs.zip`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/zip' },
      body: bomb,
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({
      success: true,
      data: { status: 'pending', source: 'upload:docs.zip' },
    });
    return settled(systemId);
  }

  it('refuses an uploaded zip bomb by the size it declares', async () => {
    const state = await uploadBomb('bombed', makeZipBomb(64));
    expect(state.status).toBe('failed');
    expect(state.error).toMatch(
      /^zip refused \(zip bomb protection\): entry bomb\.txt declares 67108864 bytes, beyond the limit \(100× the archive's \d+ bytes\)$/,
    );
  });

  it('refuses a zip bomb whose headers lie by what it really unpacks to', async () => {
    const state = await uploadBomb('lying-bomb', makeLyingZipBomb(64));
    expect(state.status).toBe('failed');
    expect(state.error).toMatch(
      /^zip refused \(zip bomb protection\): entry bomb\.txt unpacks beyond the limit \(100× the archive's \d+ bytes\)$/,
    );
  });

  it('refuses an upload larger than KUBEGLUE_DOCS_MAX_BYTES with 413', async () => {
    const response = await api.call<{ error: { code: string } }>('PUT', '/v1/systems/bombed/documentation', {
      rawBody: 'x'.repeat(MAX_BYTES + 1),
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('KG_ERR_BODY_TOO_LARGE');
  });
});

describe('an uploaded file', () => {
  it('replaces the URL: the upload is processed and nothing is crawled', async () => {
    await api.call('POST', '/v1/systems', {
      body: { id: 'uploaded', url: `${site.url}/api`, authType: 'apiKey', credentials: { apiKey: API_KEY } },
    });
    const spec = JSON.stringify({
      swagger: '2.0',
      info: { title: 'Legacy', version: '1' },
      host: 'legacy.example',
      basePath: '/v1',
      securityDefinitions: { token: { type: 'apiKey', in: 'header', name: 'X-Legacy-Token' } },
      paths: { '/things': { get: { summary: 'Things', responses: { 200: { description: 'ok' } } } } },
    });
    const put = await api.call('PUT', '/v1/systems/uploaded/documentation', {
      rawBody: spec,
      headers: { 'content-type': 'application/json' },
    });
    expect(put.status).toBe(202);
    expect((await settled('uploaded')).status).toBe('ready');
    const summary = await summaryOf('uploaded');
    expect(summary.documents).toEqual([
      expect.objectContaining({
        kind: 'openapi',
        specVersion: '2.0',
        servers: ['https://legacy.example/v1'],
        operations: [{ method: 'GET', path: '/things', summary: 'Things', parameters: [] }],
      }),
    ]);
    const { body } = await api.call<SystemAnswer>('GET', '/v1/systems/uploaded');
    expect(body.data.apiKeyPlacement).toMatchObject({
      in: 'header',
      name: 'X-Legacy-Token',
      source: 'documentation',
    });
  });

  it('leaves the default placement (Authorization: Bearer) to a system without documentation', async () => {
    await api.call('POST', '/v1/systems', {
      body: { id: 'plain', url: site.url, authType: 'apiKey', credentials: { apiKey: API_KEY } },
    });
    const { body } = await api.call<SystemAnswer>('GET', '/v1/systems/plain');
    expect(body.data.documentation).toBeUndefined();
    expect(body.data.apiKeyPlacement).toEqual({
      in: 'header',
      name: 'Authorization',
      prefix: 'Bearer ',
      source: 'default',
    });
    const missing = await api.call<{ error: { code: string } }>('GET', '/v1/systems/plain/documentation');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('KG_ERR_DOCUMENTATION_NOT_FOUND');
  });
});

describe('a Postgres system', () => {
  it('keeps its schema as documentation: tables, columns, keys, views, row estimates', async () => {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      await admin.query(`
        CREATE TABLE customers (id serial PRIMARY KEY, email text NOT NULL, note text);
        CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers (id), total numeric(10,2));
        CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 100;
        INSERT INTO customers (email) SELECT 'c' || g || '@example.com' FROM generate_series(1, 50) g;
        ANALYZE customers;`);
    } finally {
      await admin.end();
    }
    const url = new URL(database.url);
    const username = decodeURIComponent(url.username);
    url.username = '';
    const created = await api.call<SystemAnswer>('POST', '/v1/systems', {
      body: {
        id: 'shop-db',
        url: url.toString(),
        authType: 'dataStore',
        credentials: { username, password: 'unused' },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.documentation).toMatchObject({ status: 'pending', source: 'postgres-schema' });
    const state = await settled('shop-db');
    expect(state).toMatchObject({ status: 'ready' });
    const summary = await summaryOf('shop-db');
    const [schema] = summary.documents;
    expect(schema.kind).toBe('postgres-schema');
    expect(schema.source).not.toContain(username === '' ? '\u0000' : `${username}@`);
    const customers = schema.tables.find((table: { name: string }) => table.name === 'customers');
    expect(customers).toMatchObject({
      schema: 'public',
      primaryKey: ['id'],
      rowEstimate: 50,
      columns: [
        expect.objectContaining({ name: 'id', type: 'integer', nullable: false }),
        { name: 'email', type: 'text', nullable: false },
        { name: 'note', type: 'text', nullable: true },
      ],
    });
    const orders = schema.tables.find((table: { name: string }) => table.name === 'orders');
    expect(orders.foreignKeys).toEqual([
      { columns: ['customer_id'], references: { table: 'customers', columns: ['id'] } },
    ]);
    expect(orders.columns).toContainEqual({ name: 'total', type: 'numeric(10,2)', nullable: true });
    expect(schema.views).toEqual([
      {
        schema: 'public',
        name: 'big_orders',
        columns: [
          { name: 'id', type: 'bigint', nullable: true },
          { name: 'total', type: 'numeric(10,2)', nullable: true },
        ],
      },
    ]);
    const text = await api.call('GET', '/v1/systems/shop-db/documentation?format=text');
    expect(text.text).toContain('FOREIGN KEY (customer_id) REFERENCES customers (id)');
  });
});

describe.skipIf(mariadbSkip())('a MariaDB system', () => {
  const mariadb = useMariaDb();

  beforeAll(async () => {
    await mariadb.admin.query(`
      CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(200) NOT NULL, status VARCHAR(10) DEFAULT 'open', note TEXT);
      CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, total DECIMAL(10,2),
        FOREIGN KEY (customer_id) REFERENCES customers (id));
      CREATE TABLE order_lines (order_id BIGINT, line INT, sku VARCHAR(20), PRIMARY KEY (order_id, line),
        CONSTRAINT line_order FOREIGN KEY (order_id) REFERENCES orders (id));
      CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 100;
      INSERT INTO customers (email) VALUES ('a@example.com'), ('b@example.com'), ('c@example.com');
      ANALYZE TABLE customers;`);
  });

  it('keeps its schema as documentation: tables, columns, keys, views, row estimates; searchable', async () => {
    const created = await api.call<SystemAnswer>('POST', '/v1/systems', {
      body: {
        id: 'maria-shop',
        url: mariadb.bareUrl.replace('mysql://', 'mariadb://'),
        authType: 'dataStore',
        credentials: { username: mariadb.user, password: mariadb.password },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.documentation).toMatchObject({ status: 'pending', source: 'mysql-schema' });
    expect(await settled('maria-shop')).toMatchObject({ status: 'ready' });
    const summary = await summaryOf('maria-shop');
    const [schema] = summary.documents;
    expect(schema.kind).toBe('mysql-schema');
    expect(schema.source).toBe(`mariadb://127.0.0.1:${mariadb.server.port}/${mariadb.name}`);
    const table = (name: string) => schema.tables.find((t: { name: string }) => t.name === name);
    expect(table('customers')).toEqual({
      schema: mariadb.name,
      name: 'customers',
      primaryKey: ['id'],
      foreignKeys: [],
      rowEstimate: 3,
      columns: [
        { name: 'id', type: 'int(11)', nullable: false },
        { name: 'email', type: 'varchar(200)', nullable: false },
        { name: 'status', type: 'varchar(10)', nullable: true, default: "'open'" },
        { name: 'note', type: 'text', nullable: true },
      ],
    });
    expect(table('orders').foreignKeys).toEqual([
      { columns: ['customer_id'], references: { table: 'customers', columns: ['id'] } },
    ]);
    expect(table('order_lines').primaryKey).toEqual(['order_id', 'line']);
    expect(table('order_lines').foreignKeys).toEqual([
      { columns: ['order_id'], references: { table: 'orders', columns: ['id'] } },
    ]);
    expect(schema.views).toEqual([
      {
        schema: mariadb.name,
        name: 'big_orders',
        columns: [
          { name: 'id', type: 'bigint(20)', nullable: false },
          { name: 'total', type: 'decimal(10,2)', nullable: true },
        ],
      },
    ]);
    const text = await api.call('GET', '/v1/systems/maria-shop/documentation?format=text');
    expect(text.text).toContain('FOREIGN KEY (customer_id) REFERENCES customers (id)');
    expect(text.text).not.toContain(mariadb.password);

    const search = await api.call<{ results: Array<{ title: string; text: string }> }>(
      'POST',
      '/v1/systems/maria-shop/documentation/search',
      { body: { keywords: 'order lines sku' } },
    );
    expect(search.status).toBe(200);
    expect(search.body.results[0]?.title).toBe(`TABLE ${mariadb.name}.order_lines`);
    expect(search.body.results[0]?.text).toContain('sku varchar(20)');
  });

  it('fails at once, naming the cause, when the login is refused, and never shows the password', async () => {
    await api.call('POST', '/v1/systems', {
      body: {
        id: 'maria-wrong',
        url: mariadb.bareUrl,
        authType: 'dataStore',
        credentials: { username: mariadb.user, password: 'Not-the-password-42' },
      },
    });
    const state = await settled('maria-wrong');
    expect(state.status).toBe('failed');
    expect(state.error).toContain('MySQL authentication to 127.0.0.1');
    expect(state.error).toContain('Access denied');
    expect(state.error).not.toContain('Not-the-password-42');
  });
});
