import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../../api/server.ts';
import { catalogError } from '../../support/api-error.ts';

let app: FastifyInstance;
let base: string;
let ready = false;

beforeAll(async () => {
  app = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => ready });
  app.post('/echo', async (request) => request.body);
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await app.close();
});

describe('server basics', () => {
  it('answers health, and readiness only once ready', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual(catalogError('KG_ERR_NOT_READY', 'Not ready'));
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('puts X-Trace-Id on every response and keeps a well-formed one the client sent', async () => {
    const generated = await fetch(`${base}/nowhere`);
    expect(generated.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    const kept = await fetch(`${base}/healthz`, { headers: { 'X-Trace-Id': 'client-trace-1' } });
    expect(kept.headers.get('x-trace-id')).toBe('client-trace-1');
    const replaced = await fetch(`${base}/healthz`, {
      headers: { 'X-Trace-Id': 'bad trace id with spaces' },
    });
    expect(replaced.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('answers unknown routes with 404 in the error shape', async () => {
    const response = await fetch(`${base}/v1/nope?token=secret`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual(
      catalogError('KG_ERR_ROUTE_NOT_FOUND', 'Route GET /v1/nope not found'),
    );
  });

  /** POST /echo with the body as the content type. */
  const echo = (contentType: string, body: string) =>
    fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': contentType }, body });

  it('answers malformed JSON with 400 and a body over the limit with 413, both in the error shape', async () => {
    const malformed = await echo('application/json', '{"a":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual(
      catalogError('KG_ERR_MALFORMED_REQUEST', expect.stringMatching(/JSON/)),
    );
    const huge = await echo('application/json', JSON.stringify({ a: 'x'.repeat(5000) }));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toEqual(
      catalogError(
        'KG_ERR_BODY_TOO_LARGE',
        'Request body is larger than the limit of 1024 bytes; KUBEGLUE_BODY_LIMIT_BYTES raises it',
      ),
    );
  });

  it('answers a body of another content type with 415 saying to send JSON', async () => {
    const response = await echo('application/xml', '<a/>');
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual(
      catalogError(
        'KG_ERR_UNSUPPORTED_MEDIA_TYPE',
        'Unsupported Content-Type application/xml: send the body as JSON with Content-Type: application/json',
      ),
    );
  });

  it('answers a JSON body nested deeper than the limit with 400, not 500', async () => {
    const server = buildServer({ bodyLimitBytes: 1 << 20, logLevel: 'silent', ready: () => true });
    server.post('/echo', async (request) => request.body);
    try {
      const depth = 150_000;
      const deep = await server.inject({
        method: 'POST',
        url: '/echo',
        headers: { 'content-type': 'application/json' },
        payload: `${'['.repeat(depth)}${']'.repeat(depth)}`,
      });
      expect(deep.statusCode).toBe(400);
      expect(deep.json()).toEqual(
        catalogError('KG_ERR_MALFORMED_REQUEST', 'JSON body is nested deeper than 512 levels'),
      );
      // Brackets inside strings are text, not nesting.
      const text = await server.inject({
        method: 'POST',
        url: '/echo',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ s: '['.repeat(5000) }),
      });
      expect(text.statusCode).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('answers a known path with another method 405 and Allow, not 404', async () => {
    const response = await fetch(`${base}/echo`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toEqual(
      catalogError('KG_ERR_METHOD_NOT_ALLOWED', 'Method DELETE is not allowed on /echo; it accepts POST'),
    );
  });

  it('marks every response nosniff, errors and plain text included', async () => {
    for (const path of ['/healthz', '/v1/nope']) {
      expect((await fetch(`${base}${path}`)).headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('serves the generated OpenAPI document', async () => {
    const doc = (await (await fetch(`${base}/v1/openapi.json`)).json()) as { openapi: string; paths: object };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/tools/{toolId}/run');
  });
});
