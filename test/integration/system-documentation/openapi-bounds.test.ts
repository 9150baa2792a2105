/**
 * A small OpenAPI document whose `$ref`s double at every level (19 schemas each referring twice to the next:
 * 2.8 KB that expand to 2^19 copies) is summarised without expanding it; its validation, which would expand
 * it, is skipped with the bound and its setting named, or stopped at the time limit, in a worker thread: the
 * API keeps answering meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TEST_ADMIN_KEY, type TestApi } from '../../support/embedded.ts';

/** An OpenAPI document of `levels` schemas, each with two properties referring to the next one. */
function doublingDocument(levels: number): string {
  const schemas: string[] = [];
  for (let level = 0; level < levels; level++) {
    const next = `#/components/schemas/Level${level + 1}`;
    schemas.push(
      level + 1 < levels
        ? `    Level${level}:\n      type: object\n      properties:\n        left: { $ref: '${next}' }\n        right: { $ref: '${next}' }`
        : `    Level${level}:\n      type: string`,
    );
  }
  return `openapi: 3.0.3
info: { title: Doubling, version: '1' }
paths:
  /tree:
    get:
      operationId: getTree
      summary: The whole tree
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: { $ref: '#/components/schemas/Level0' }
components:
  schemas:
${schemas.join('\n')}
`;
}

interface State {
  status: 'pending' | 'ready' | 'failed';
  error?: string;
}

async function upload(api: TestApi, systemId: string, text: string): Promise<void> {
  const created = await api.call('POST', '/v1/systems', {
    body: { id: systemId, url: 'https://tree.example' },
  });
  expect(created.status).toBe(201);
  const response = await fetch(`${api.url}/v1/systems/${systemId}/documentation?filename=openapi.yaml`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/yaml' },
    body: text,
  });
  expect(response.status).toBe(202);
}

/**
 * Polls the system until its documentation is no longer pending, and counts the other requests the API
 * answered meanwhile (a list of systems between two polls).
 */
async function settle(
  api: TestApi,
  systemId: string,
): Promise<{ state: State; answeredWhilePending: number }> {
  let answeredWhilePending = 0;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { body } = await api.call<{ data: { documentation: State } }>('GET', `/v1/systems/${systemId}`);
    const state = body.data.documentation;
    if (state.status !== 'pending') return { state, answeredWhilePending };
    const other = await api.call('GET', '/v1/systems');
    expect(other.status).toBe(200);
    answeredWhilePending += 1;
    if (Date.now() > deadline) throw new Error(`the documentation of ${systemId} is still pending`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function openApiSummary(api: TestApi, systemId: string) {
  const { body } = await api.call<{
    data: { summary: { documents: Array<Record<string, unknown> & { operations: unknown[] }> } };
  }>('GET', `/v1/systems/${systemId}/documentation`);
  const [document] = body.data.summary.documents;
  return document;
}

describe('with the default bounds', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.stop();
  });

  for (const levels of [19, 40]) {
    it(`summarises a ${levels}-level doubling document and names the bound that skipped its validation`, async () => {
      const text = doublingDocument(levels);
      expect(text.length).toBeLessThan(7000);
      await upload(api, `tree-${levels}`, text);
      const { state } = await settle(api, `tree-${levels}`);
      expect(state.status).toBe('ready');
      const document = await openApiSummary(api, `tree-${levels}`);
      expect(document).toMatchObject({
        kind: 'openapi',
        title: 'Doubling',
        operations: [{ method: 'GET', path: '/tree', operationId: 'getTree', summary: 'The whole tree' }],
      });
      expect(document?.validationSkipped).toMatch(
        /^not validated: its \$refs expanded would make about [\d.]+ [MGT]B of JSON, beyond the bound of 16777216 bytes \(KUBEGLUE_DOCS_OPENAPI_MAX_EXPANDED_BYTES\)/,
      );
    });
  }
});

describe('with bounds raised so that validation expands the document', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi({
      KUBEGLUE_DOCS_OPENAPI_MAX_EXPANDED_BYTES: String(Number.MAX_SAFE_INTEGER),
      KUBEGLUE_DOCS_OPENAPI_MAX_DEPTH: '100000',
      KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS: '3000',
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('keeps answering while the validation runs, and stops it at KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS', async () => {
    await upload(api, 'tree-unbounded', doublingDocument(40));
    const { state, answeredWhilePending } = await settle(api, 'tree-unbounded');
    // Other requests were answered while the document was being expanded, not after it.
    expect(answeredWhilePending).toBeGreaterThanOrEqual(5);
    expect(state.status).toBe('ready');
    const document = await openApiSummary(api, 'tree-unbounded');
    expect(document?.operations).toHaveLength(1);
    expect(document?.validationSkipped).toBe(
      'not validated: processing ran past the time limit of 3000 ms (KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS)',
    );
  });
});
