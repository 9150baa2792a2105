/**
 * Issue 20, item 3: the server registers its /v1 routes from the route table (contract/api/routes.ts), so the
 * router, the validation and the OpenAPI document cannot disagree.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastifyPath } from '../../../api/scopes.ts';
import { OPENAPI_ROUTE, ROUTES } from '../../../contract/api/routes.ts';
import { startTestApi, type TestApi } from '../../support/embedded.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
  const created = await api.call('POST', '/v1/tools', {
    body: { id: 'hooked', steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }] },
  });
  expect(created.status, created.text).toBe(201);
});

afterAll(async () => {
  await api?.stop();
});

describe('the /v1 routes', () => {
  it('are the operations of the route table, each once, and no other', () => {
    const registered = api.embedded
      .routes()
      // fastify answers HEAD with the GET route.
      .filter((route) => route.method !== 'HEAD' && route.url.startsWith('/v1/'))
      .map((route) => `${route.method} ${route.url}`)
      .sort();
    const table = ROUTES.map((route) => `${route.method} ${fastifyPath(route.path)}`).sort();
    expect(new Set(table).size).toBe(ROUTES.length);
    expect(registered).toEqual(table);
  });

  it('serve the OpenAPI document of the table beside them, without a key', async () => {
    const answer = await api.call<{ paths: Record<string, Record<string, { operationId: string }>> }>(
      OPENAPI_ROUTE.method,
      `/v1${OPENAPI_ROUTE.path}`,
      { key: null },
    );
    expect(answer.status).toBe(200);
    const operations = Object.entries(answer.body.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(
        ([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`,
      ),
    );
    expect(operations.sort()).toEqual(
      ROUTES.map((route) => `${route.method} ${route.path} ${route.operationId}`).sort(),
    );
  });

  it("check the input against the table's schemas: each bad field named, unknown keys with a suggestion", async () => {
    const answer = await api.call<{ error: { message: string; code: string } }>(
      'POST',
      '/v1/tools/nope/run?limit=3',
      { body: { payload: {}, options: { timeout: 'soon' } } },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'KG_ERR_VALIDATION',
      message: 'Invalid query: Unrecognized key: "limit"',
      hint: expect.any(String),
      issues: [{ path: [], message: 'Unrecognized key: "limit"' }],
    });
    const body = await api.call<{ error: { message: string; code: string } }>('POST', '/v1/tools/nope/run', {
      body: { payload: {}, options: { timeout: 'soon' } },
    });
    expect(body.status).toBe(400);
    expect(body.body.error.code).toBe('KG_ERR_VALIDATION');
    expect(body.body.error.message).toContain('Invalid run request: ');
    expect(body.body.error.message).toContain("'payload': did you mean 'inputs'?");
    expect(body.body.error.message).toContain('options.timeout: ');
    const path = await api.call<{ error: { message: string } }>('GET', '/v1/runs/r1/files//download');
    expect(path.status).toBe(400);
    expect(path.body.error.message).toMatch(/^Invalid path: fileKey: /);
  });

  it('read a parameter given twice as absent where the routes never checked it (hooks, one tool)', async () => {
    const twice = await api.call<{ error: { code: string } }>(
      'GET',
      '/v1/hooks/hooked?challenge=a&challenge=b',
    );
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe('KG_ERR_NO_CHALLENGE');
    // The key in the header; a token parameter given twice beside it is the sender's business.
    const echoed = await api.call('GET', '/v1/hooks/hooked?token=x&token=y&validationToken=v-1');
    expect({ status: echoed.status, text: echoed.text }).toEqual({ status: 200, text: 'v-1' });
    const accepted = await api.call('POST', '/v1/hooks/hooked?token=x&token=y', { body: { event: 1 } });
    expect(accepted.status).toBe(202);
    expect((await api.call('GET', '/v1/tools/hooked?token=x&token=y&unknown=1')).status).toBe(200);
  });
});
