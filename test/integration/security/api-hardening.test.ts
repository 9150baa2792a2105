/**
 * Issue 7, item 9: credentials in URLs, deep run-list pages, unbounded concurrent sync runs and
 * downloads rendered by the browser.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

type RunList = {
  data: Run[];
  page: number;
  limit: number;
  total: number;
  hasMore: boolean;
  nextCursor: string | null;
};

const MAX_SYNC_RUNS = 2;

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_MAX_SYNC_RUNS: String(MAX_SYNC_RUNS) });
let held: ServerResponse[] = [];

beforeAll(async () => {
  held = target.hold('/hold');
  const tools = [
    { id: 'quick', steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }] },
    { id: 'slow', steps: [{ id: 'w', config: { url: `${target.url}/hold` } }] },
    {
      id: 'page',
      steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }],
      outputTransform:
        '() => ({ __files__: { "page.html": { content: "<script>alert(1)</script>", contentType: "text/html" } } })',
    },
  ];
  for (const tool of tools) expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
});
afterAll(async () => {
  for (const res of held) res.destroy();
});

describe('credentials in URLs', () => {
  it('refuses a webhookUrl with user:password and says how to verify notifications instead', async () => {
    for (const webhookUrl of [
      'https://user:s3cret-pass@hooks.example/x',
      'https://tok3n-only@hooks.example/x',
    ]) {
      for (const async of [false, true]) {
        const answer = await api.call<ErrorBody>('POST', '/v1/tools/quick/run', {
          body: { options: { async, webhookUrl } },
        });
        expect(answer.status).toBe(400);
        expect(answer.body.error.code).toBe('KG_ERR_WEBHOOK_URL_CREDENTIALS');
        expect(answer.body.error.message).toContain('options.webhookUrl');
        expect(answer.body.error.message).toMatch(/sign/i);
        expect(answer.body.error.message).not.toContain('s3cret-pass');
        expect(answer.body.error.message).not.toContain('tok3n-only');
      }
    }
    const runs = await api.call<RunList>('GET', '/v1/runs?toolId=quick');
    expect(runs.body.total).toBe(0);
  });

  it('refuses a system URL with user:password, on create and on update', async () => {
    for (const url of ['https://user:s3cret-pass@api.example', 'postgres://app:s3cret-pass@db.example/app']) {
      const created = await api.call<ErrorBody>('POST', '/v1/systems', {
        body: { id: 'leaky', url, authType: 'basic' },
      });
      expect(created.status).toBe(400);
      expect(created.body.error.code).toBe('KG_ERR_SYSTEM_URL_CREDENTIALS');
      expect(created.body.error.message).toContain('credentials.username');
      expect(created.body.error.message).not.toContain('s3cret-pass');
    }
    expect((await api.call('GET', '/v1/systems/leaky')).status).toBe(404);
    const clean = await api.call('POST', '/v1/systems', {
      body: { id: 'clean', url: 'https://api.example' },
    });
    expect(clean.status).toBe(201);
    const updated = await api.call<ErrorBody>('PUT', '/v1/systems/clean', {
      body: { url: 'https://user:s3cret-pass@api.example' },
    });
    expect(updated.status).toBe(400);
    expect(updated.body.error.code).toBe('KG_ERR_SYSTEM_URL_CREDENTIALS');
    const system = await api.call<{ data: { url: string } }>('GET', '/v1/systems/clean');
    expect(system.body.data.url).toBe('https://api.example');
    expect(api.bodies.join('\n')).not.toContain('s3cret-pass');
  });
});

describe('GET /v1/runs paging', () => {
  it('refuses pages past the first 10 000 runs, suggesting filters and the cursor', async () => {
    const deep = await api.call<ErrorBody>('GET', '/v1/runs?page=201&limit=50');
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe('KG_ERR_PAGE_TOO_DEEP');
    expect(deep.body.error.message).toContain('cursor');
    expect(deep.body.error.message).toContain('toolId');
    expect((await api.call('GET', '/v1/runs?page=100000000&limit=100')).status).toBe(400);
    expect((await api.call('GET', '/v1/runs?page=200&limit=50')).status).toBe(200);
  });

  it('pages with a cursor through every run in order, without gaps or repeats', async () => {
    // A day ago, not a fixed date: the server's retention sweep (30 days) would delete older ended runs.
    const startedAt = Math.floor(Date.now() / 1000) * 1000 - 86_400_000;
    // 130 runs, several sharing a start time, so the run id breaks ties.
    const seeded = Array.from({ length: 130 }, (_, i) => ({
      runId: `seed-${String(i).padStart(3, '0')}`,
      toolId: 'seeded',
      status: 'success' as const,
      requestSource: 'api',
      systemIds: [],
      metadata: {
        startedAt: new Date(startedAt + Math.floor(i / 3) * 1000).toISOString(),
        completedAt: new Date(startedAt + Math.floor(i / 3) * 1000 + 5).toISOString(),
        durationMs: 5,
      },
    }));
    expect(await api.embedded.store.insertRuns(seeded)).toBe(130);
    const byOffset: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const list = await api.call<RunList>('GET', `/v1/runs?toolId=seeded&limit=50&page=${page}`);
      byOffset.push(...list.body.data.map((run) => run.runId));
    }
    const byCursor: string[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const list = await api.call<RunList>('GET', `/v1/runs?toolId=seeded&limit=50${query}`);
      expect(list.status).toBe(200);
      expect(list.body.total).toBe(130);
      byCursor.push(...list.body.data.map((run) => run.runId));
      pages.push(list.body.page);
      expect(list.body.hasMore).toBe(list.body.nextCursor !== null);
      cursor = list.body.nextCursor;
    } while (cursor);
    expect(pages).toEqual([1, 2, 3]);
    expect(byCursor).toHaveLength(130);
    expect(new Set(byCursor).size).toBe(130);
    expect(byCursor).toEqual(byOffset);
    expect(byCursor[0]).toBe('seed-129');
  });

  it('refuses a malformed cursor, and a cursor together with page', async () => {
    const bad = await api.call<ErrorBody>('GET', '/v1/runs?cursor=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('KG_ERR_CURSOR_INVALID');
    const first = await api.call<RunList>('GET', '/v1/runs?toolId=seeded&limit=10');
    const both = await api.call<ErrorBody>(
      'GET',
      `/v1/runs?limit=10&page=2&cursor=${encodeURIComponent(first.body.nextCursor as string)}`,
    );
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe('KG_ERR_VALIDATION');
  });
});

describe('concurrent sync runs', () => {
  it('refuses sync runs beyond KUBEGLUE_MAX_SYNC_RUNS at once with 429 and Retry-After', async () => {
    const running = Array.from({ length: MAX_SYNC_RUNS }, () =>
      api.call<Run>('POST', '/v1/tools/slow/run', { body: {} }),
    );
    await expect.poll(() => held.length, { timeout: 10_000 }).toBe(MAX_SYNC_RUNS);
    const startedAt = Date.now();
    const refused = await api.call<ErrorBody>('POST', '/v1/tools/quick/run', { body: {} });
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.body.error.code).toBe('KG_ERR_RUN_LIMIT');
    expect(refused.body.error.message).toContain('async');
    // Async runs are queued by the operator, not by this limit.
    expect(
      (await api.call('POST', '/v1/tools/quick/run', { body: { options: { async: true } } })).status,
    ).toBe(202);
    for (const res of held.splice(0)) res.end('"done"');
    for (const answer of await Promise.all(running)) expect(answer.status).toBe(200);
    expect((await api.call('POST', '/v1/tools/quick/run', { body: {} })).status).toBe(200);
  });
});

describe('file downloads', () => {
  it('are served as sandboxed attachments the browser must not sniff', async () => {
    const run = await api.call<Run>('POST', '/v1/tools/page/run', { body: {} });
    expect(run.status).toBe(200);
    const url = run.body.fileArtifacts?.[0]?.downloadUrl as string;
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-security-policy')).toBe('sandbox');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
    await download.arrayBuffer();
  });
});
