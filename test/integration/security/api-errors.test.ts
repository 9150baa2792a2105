/**
 * Issue 7, error catalog: every error response is `{ error: { message, code, hint } }`, the code naming
 * one entry of the catalog (contract/api/errors.ts) and the hint its "what to do" text, whether a route,
 * the auth hook or fastify itself raised it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOG } from '../../../contract/api/errors.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi({ KUBEGLUE_BODY_LIMIT_BYTES: '2048' });

beforeAll(async () => {
  const tool = { id: 't', steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }] };
  expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
});

/** Errors that list each problem at its field (error.issues). */
const WITH_ISSUES = new Set(['KG_ERR_VALIDATION', 'KG_ERR_INPUTS_INVALID', 'KG_ERR_TOOL_INVALID']);

/**
 * The catalog's entry, its status, its "what to do" text as the body's hint (what the dashboard shows) and,
 * for validation errors, the problems at their fields.
 */
function expectError(answer: { status: number; body: unknown }, status: number, code: string): void {
  const entry = ERROR_CATALOG.find((candidate) => candidate.code === code);
  expect(entry?.statusCode).toBe(status);
  const issues = WITH_ISSUES.has(code)
    ? {
        issues: expect.arrayContaining([
          expect.objectContaining({ path: expect.any(Array), message: expect.any(String) }),
        ]),
      }
    : {};
  expect({ status: answer.status, body: answer.body }).toEqual({
    status,
    body: { error: { message: expect.any(String), code, hint: entry?.fix, ...issues } },
  });
}

describe('error responses', () => {
  it('carry the catalog code for auth failures', async () => {
    const missing = await api.call('GET', '/v1/tools', { key: null });
    expectError(missing, 401, 'KG_ERR_MISSING_API_KEY');
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expectError(
      await api.call('GET', '/v1/tools', { key: 'kg_not-a-real-key-000000000000' }),
      401,
      'KG_ERR_INVALID_API_KEY',
    );
    const restricted = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'r', toolIds: ['t'] },
    });
    expectError(
      await api.call('GET', '/v1/api-keys', { key: restricted.body.key }),
      403,
      'KG_ERR_SCOPE_REQUIRED',
    );
    expectError(
      await api.call('GET', '/v1/systems', { key: restricted.body.key }),
      403,
      'KG_ERR_SCOPE_REQUIRED',
    );
    expectError(
      await api.call('POST', '/v1/tools/run', { key: restricted.body.key, body: {} }),
      403,
      'KG_ERR_KEY_RESTRICTED',
    );
  });

  it("carry the catalog code for fastify's own errors and unknown routes", async () => {
    expectError(await api.call('GET', '/v1/nowhere'), 404, 'KG_ERR_ROUTE_NOT_FOUND');
    const malformed = await api.call('POST', '/v1/tools', {
      rawBody: '{"id": ',
      headers: { 'content-type': 'application/json' },
    });
    expectError(malformed, 400, 'KG_ERR_MALFORMED_REQUEST');
    const tooLarge = await api.call('POST', '/v1/tools', { body: { id: 'x'.repeat(4096) } });
    expectError(tooLarge, 413, 'KG_ERR_BODY_TOO_LARGE');
    const mediaType = await api.call('POST', '/v1/tools', {
      rawBody: '<tool/>',
      headers: { 'content-type': 'application/xml' },
    });
    expectError(mediaType, 415, 'KG_ERR_UNSUPPORTED_MEDIA_TYPE');
  });

  it('carry the catalog code for route errors', async () => {
    expectError(await api.call('GET', '/v1/tools/nope'), 404, 'KG_ERR_TOOL_NOT_FOUND');
    expectError(await api.call('GET', '/v1/runs/nope'), 404, 'KG_ERR_RUN_NOT_FOUND');
    expectError(await api.call('GET', '/v1/runs?status=done'), 400, 'KG_ERR_VALIDATION');
    const duplicate = await api.call('POST', '/v1/tools', {
      body: { id: 't', steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }] },
    });
    expectError(duplicate, 409, 'KG_ERR_TOOL_EXISTS');
    const broken = await api.call('POST', '/v1/tools', {
      body: { id: 'broken', steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => {' } }] },
    });
    expectError(broken, 422, 'KG_ERR_TOOL_INVALID');
    expectError(await api.call('GET', '/v1/systems/nope'), 404, 'KG_ERR_SYSTEM_NOT_FOUND');
    expectError(await api.call('DELETE', '/v1/api-keys/nope'), 404, 'KG_ERR_API_KEY_NOT_FOUND');
    const run = await api.call<{ runId: string }>('POST', '/v1/tools/t/run', { body: {} });
    expectError(
      await api.call('POST', `/v1/runs/${run.body.runId}/cancel`),
      400,
      'KG_ERR_RUN_NOT_CANCELLABLE',
    );
    const expired = await fetch(`${api.url}/v1/files/${run.body.runId}/x?expires=1&signature=AAAA`);
    expectError({ status: expired.status, body: await expired.json() }, 403, 'KG_ERR_DOWNLOAD_LINK_INVALID');
  });
});
