/**
 * Issue 7, item 9: a key limited to some tools learns nothing about the others. "Exists but not yours"
 * answers exactly like "does not exist" (404), on every route that names a tool or a run.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi();
/** Limited to tool a, with the default scopes of such a key: read and run, not write. */
let onlyA: string;
/** Limited to tool a, and may change it. */
let writerOfA: string;
let hiddenRunId: string;

const transformTool = (id: string) => ({
  id,
  steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }],
  outputTransform: '() => ({ __files__: { "f.txt": "x" } })',
});

beforeAll(async () => {
  for (const id of ['a', 'hidden']) {
    expect((await api.call('POST', '/v1/tools', { body: transformTool(id) })).status).toBe(201);
  }
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name: 'only a', toolIds: ['a'] },
  });
  onlyA = created.body.key;
  const writer = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: {
      name: 'writes a',
      toolIds: ['a'],
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
    },
  });
  writerOfA = writer.body.key;
  const run = await api.call<{ runId: string }>('POST', '/v1/tools/hidden/run', { body: {} });
  expect(run.status).toBe(200);
  hiddenRunId = run.body.runId;
});

/** The answers for an existing-but-hidden id and for an unknown id must not differ (up to the id itself). */
async function expectSameAnswer(
  method: string,
  path: (id: string) => string,
  hidden: string,
  unknown: string,
  body?: unknown,
  key: string = onlyA,
): Promise<void> {
  const call = (id: string) =>
    api.call<ErrorBody>(method, path(id), { key, ...(body !== undefined ? { body } : {}) });
  const forHidden = await call(hidden);
  const forUnknown = await call(unknown);
  expect({ route: `${method} ${path(hidden)}`, status: forHidden.status }).toEqual({
    route: `${method} ${path(hidden)}`,
    status: 404,
  });
  expect(forUnknown.status).toBe(404);
  expect(forHidden.body.error.code).toBe(forUnknown.body.error.code);
  expect(forHidden.body.error.message.replaceAll(hidden, unknown)).toBe(forUnknown.body.error.message);
}

describe('a tool-restricted key', () => {
  it('gets 404 for a tool it may not use, exactly as for a tool that does not exist', async () => {
    const tool = (id: string) => `/v1/tools/${id}`;
    await expectSameAnswer('GET', tool, 'hidden', 'nothing');
    await expectSameAnswer('PUT', tool, 'hidden', 'nothing', { description: 'x' }, writerOfA);
    await expectSameAnswer('DELETE', tool, 'hidden', 'nothing', undefined, writerOfA);
    await expectSameAnswer('POST', (id) => `${tool(id)}/run`, 'hidden', 'nothing', {});
    await expectSameAnswer('POST', (id) => `/v1/hooks/${id}`, 'hidden', 'nothing', { event: 1 });
    await expectSameAnswer('GET', (id) => `/v1/hooks/${id}?challenge=c`, 'hidden', 'nothing');
    const missing = await api.call<ErrorBody>('GET', '/v1/tools/hidden', { key: onlyA });
    expect(missing.body.error.code).toBe('KG_ERR_TOOL_NOT_FOUND');
    // The hidden tool still exists and works for keys that may see it.
    expect((await api.call('GET', '/v1/tools/hidden')).status).toBe(200);
  });

  it("gets 404 for another tool's runs and their files, exactly as for an unknown run", async () => {
    const unknown = 'no-such-run';
    await expectSameAnswer('GET', (id) => `/v1/runs/${id}`, hiddenRunId, unknown);
    await expectSameAnswer('GET', (id) => `/v1/runs/${id}/results`, hiddenRunId, unknown);
    await expectSameAnswer('GET', (id) => `/v1/runs/${id}/files`, hiddenRunId, unknown);
    await expectSameAnswer('GET', (id) => `/v1/runs/${id}/files/f.txt/download`, hiddenRunId, unknown);
    await expectSameAnswer('POST', (id) => `/v1/runs/${id}/cancel`, hiddenRunId, unknown);
  });

  it('may not change its own tools without tools:write (403 naming it), and may use them', async () => {
    const put = await api.call<ErrorBody>('PUT', '/v1/tools/a', { key: onlyA, body: { description: 'x' } });
    expect(put.status).toBe(403);
    expect(put.body.error.code).toBe('KG_ERR_SCOPE_REQUIRED');
    expect(put.body.error.message).toContain("'tools:write'");
    const del = await api.call<ErrorBody>('DELETE', '/v1/tools/a', { key: onlyA });
    expect(del.status).toBe(403);
    expect((await api.call('GET', '/v1/tools/a', { key: onlyA })).status).toBe(200);
    expect((await api.call('POST', '/v1/tools/a/run', { key: onlyA, body: {} })).status).toBe(200);
  });

  it('with tools:write changes its own tools, and creates only tools it is limited to', async () => {
    const put = await api.call('PUT', '/v1/tools/a', { key: writerOfA, body: { instruction: 'changed' } });
    expect(put.status).toBe(200);
    // Refused before the id is looked up: the same answer for an existing and a new id.
    for (const id of ['hidden', 'brand-new']) {
      const created = await api.call<ErrorBody>('POST', '/v1/tools', {
        key: writerOfA,
        body: transformTool(id),
      });
      expect(created.status).toBe(403);
      expect(created.body.error.code).toBe('KG_ERR_KEY_RESTRICTED');
    }
  });
});
