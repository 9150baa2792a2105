import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../api/server.ts';

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
    expect(await notReady.json()).toEqual({ error: { message: 'Not ready', code: 'KG_ERR_NOT_READY' } });
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
    expect(await response.json()).toEqual({
      error: { message: 'Route GET /v1/nope not found', code: 'KG_ERR_ROUTE_NOT_FOUND' },
    });
  });

  it('answers malformed JSON with 400 and a body over the limit with 413, both in the error shape', async () => {
    const malformed = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({
      error: { message: expect.stringMatching(/JSON/), code: 'KG_ERR_MALFORMED_REQUEST' },
    });
    const huge = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 'x'.repeat(5000) }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toEqual({
      error: { message: 'Request body is too large', code: 'KG_ERR_BODY_TOO_LARGE' },
    });
  });

  it('serves the generated OpenAPI document', async () => {
    const doc = (await (await fetch(`${base}/v1/openapi.json`)).json()) as { openapi: string; paths: object };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/tools/{toolId}/run');
  });
});
