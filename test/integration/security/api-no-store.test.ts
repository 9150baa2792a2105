/**
 * Issue 29, item 6: an answer to a request that carries a credential (an API key, or a URL that is one) is
 * never kept by a browser or a proxy: `Cache-Control: no-store` on the new key, results, key lists, state,
 * errors, event streams, MCP answers and presigned downloads; the dashboard's own files keep their caching.
 */
import { describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';

const api = useTestApi();

const NO_STORE = 'no-store';

async function headersOf(path: string, init: RequestInit = {}): Promise<Headers> {
  const controller = new AbortController();
  const response = await fetch(`${api.url}${path}`, { ...init, signal: controller.signal });
  // A stream (run events, MCP) stays open: the headers are all this test reads.
  controller.abort();
  return response.headers;
}

const withKey = (key = TEST_ADMIN_KEY) => ({ authorization: `Bearer ${key}` });

describe('answers to requests with a credential', () => {
  it('are never stored: the new key, key lists, tools, results, state and errors', async () => {
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'cache-probe', scopes: ['tools:read'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^kg_/);
    expect(created.headers.get('cache-control')).toBe(NO_STORE);

    const tool = await api.call('POST', '/v1/tools', {
      body: {
        id: 'cache-probe',
        steps: [{ id: 'one', config: { type: 'transform', transformCode: '() => ({ secret: "s" })' } }],
        outputTransform:
          '(s) => ({ ...s.one, __files__: { "report.txt": { content: "figures", contentType: "text/plain" } } })',
      },
    });
    expect(tool.status).toBe(201);
    expect(tool.headers.get('cache-control')).toBe(NO_STORE);
    const run = await api.call<Run>('POST', '/v1/tools/cache-probe/run', { body: {} });
    expect(run.body.status).toBe('success');
    expect(run.headers.get('cache-control')).toBe(NO_STORE);

    for (const path of [
      '/v1/api-keys',
      '/v1/tools',
      `/v1/runs/${run.body.runId}`,
      `/v1/runs/${run.body.runId}/results`,
      '/v1/tools/cache-probe/state',
      '/v1/me',
      '/v1/no-such-route',
    ]) {
      const answer = await api.call('GET', path);
      expect(answer.status, path).toBeLessThan(path === '/v1/no-such-route' ? 500 : 300);
      expect(answer.headers.get('cache-control'), path).toBe(NO_STORE);
    }
    // Refusals too: a wrong key, a key without the scope.
    expect(
      (await api.call('GET', '/v1/tools', { key: 'kg_wrong-key-0123456789abcdefghij' })).headers.get(
        'cache-control',
      ),
    ).toBe(NO_STORE);
    expect(
      (await api.call('GET', '/v1/api-keys', { key: created.body.key })).headers.get('cache-control'),
    ).toBe(NO_STORE);
  });

  it('are never stored: presigned downloads, whose URL is the credential', async () => {
    const run = await api.call<Run>('POST', '/v1/tools/cache-probe/run', { body: {} });
    const file = run.body.fileArtifacts?.[0];
    expect(file?.downloadUrl).toBeDefined();
    const download = await fetch(file?.downloadUrl as string);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('figures');
    expect(download.headers.get('cache-control')).toBe(NO_STORE);
  });

  it('are never stored: event streams and MCP answers, which keep no-transform', async () => {
    const run = await api.call<Run>('POST', '/v1/tools/cache-probe/run', { body: {} });
    const events = await headersOf(`/v1/logs/stream?runId=${run.body.runId}`, { headers: withKey() });
    expect(events.get('content-type')).toMatch(/^text\/event-stream/);
    expect(events.get('cache-control')).toBe('no-store, no-transform');

    const mcp = await headersOf('/mcp', {
      method: 'POST',
      headers: {
        ...withKey(),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(mcp.get('content-type')).toMatch(/^text\/event-stream/);
    expect(mcp.get('cache-control')).toBe('no-store, no-transform');
    const refused = await headersOf('/mcp', { method: 'POST' });
    expect(refused.get('cache-control')).toBe(NO_STORE);
  });
});

describe('answers without a credential', () => {
  it('keep their own caching: the dashboard page and its hashed assets', async () => {
    const page = await fetch(`${api.url}/`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const asset = /(?:src|href)="(\/assets\/[^"]+)"/.exec(await page.text())?.[1];
    expect(asset).toBeDefined();
    const answer = await fetch(`${api.url}${asset}`);
    expect(answer.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  });
});
