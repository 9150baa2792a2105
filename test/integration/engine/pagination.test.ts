/**
 * Pagination end to end: the engine pages through a real local HTTP server whose handlers read the
 * query like real APIs do, with stopConditions and cursor expressions evaluated in isolated-vm.
 * Every test uses its own route paths, so the shared request log needs no reset.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEngineSettings } from '../../../config/config.ts';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import { createEngineDeps } from '../../../engine/deps.ts';
import { closeHttpAgent } from '../../../engine/protocols/http.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { Sandbox } from '../../../engine/sandbox/sandbox.ts';
import type { EngineDeps, EngineResult } from '../../../engine/types.ts';
import { type HttpTarget, startHttpTarget, type TargetRequest } from '../../support/http-target.ts';

let target: HttpTarget;
let deps: EngineDeps;
let sandbox: Sandbox;

beforeAll(async () => {
  target = await startHttpTarget();
  ({ deps, sandbox } = createEngineDeps(defaultEngineSettings()));
});

afterAll(async () => {
  sandbox.dispose();
  await closeHttpAgent();
  await target.stop();
});

type RequestConfig = Extract<ToolInput['steps'][number]['config'], { url: string }>;

/** Runs a tool of one paginated GET step `list`. */
function runPaged(config: RequestConfig, inputs: JsonObject = {}): Promise<EngineResult> {
  const tool: ToolInput = { id: 'engine-pagination-test', steps: [{ id: 'list', config }] };
  return runTool(deps, {
    tool: Tool.parse(tool),
    inputs,
    systems: [],
    traceId: 'engine-pagination-test',
    signal: new AbortController().signal,
  });
}

function url(path: string): string {
  return `${target.url}${path}`;
}

/** The query of each request to `path`, in arrival order. */
function queries(path: string): Array<Array<[string, string]>> {
  return target.requests.filter((request: TargetRequest) => request.path === path).map((r) => r.query);
}

function param(request: TargetRequest, name: string): string | null {
  return new URLSearchParams(request.query).get(name);
}

/** `n` records `{ id: 1 } … { id: n }`. */
function records(n: number): JsonObject[] {
  return Array.from({ length: n }, (_, i) => ({ id: i + 1 }));
}

/** A page-numbered endpoint: `page` (1-based) and `per_page` from the query over `rows`. */
function pageEndpoint(rows: JsonValue[]) {
  return (request: TargetRequest) => {
    const page = Number(param(request, 'page'));
    const perPage = Number(param(request, 'per_page'));
    return { body: rows.slice((page - 1) * perPage, page * perPage) };
  };
}

describe('pagination types', () => {
  it('offsetBased advances offset by pageSize and sends limit', async () => {
    const rows = records(5);
    target.route('GET', '/pg/offset', (request) => {
      const offset = Number(param(request, 'offset'));
      const limit = Number(param(request, 'limit'));
      return { body: rows.slice(offset, offset + limit) };
    });
    const result = await runPaged({
      url: url('/pg/offset'),
      queryParams: { offset: '<<offset>>', limit: '<<limit>>' },
      pagination: { type: 'offsetBased', pageSize: '2' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual(rows);
    expect(queries('/pg/offset')).toEqual([
      [
        ['offset', '0'],
        ['limit', '2'],
      ],
      [
        ['offset', '2'],
        ['limit', '2'],
      ],
      [
        ['offset', '4'],
        ['limit', '2'],
      ],
    ]);
  });

  it('pageBased counts page from 1 and sends pageSize', async () => {
    const rows = records(5);
    target.route('GET', '/pg/page', pageEndpoint(rows));
    const result = await runPaged({
      url: url('/pg/page'),
      queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
      pagination: { type: 'pageBased', pageSize: 2 },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual(rows);
    expect(queries('/pg/page').map((q) => q.map(([k, v]) => `${k}=${v}`).join('&'))).toEqual([
      'page=1&per_page=2',
      'page=2&per_page=2',
      'page=3&per_page=2',
    ]);
  });

  it('resolves <<page>> in the URL path for every page', async () => {
    const pages: JsonValue[][] = [[{ id: 'a' }, { id: 'b' }], [{ id: 'c' }]];
    pages.forEach((body, index) => {
      target.route('GET', `/pg/path/${index + 1}/items`, { body });
    });
    const result = await runPaged({
      url: url('/pg/path/<<page>>/items'),
      pagination: { type: 'pageBased', pageSize: '2' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect(target.count('/pg/path/1/items')).toBe(1);
    expect(target.count('/pg/path/2/items')).toBe(1);
    expect(target.count('/pg/path/3/items')).toBe(0);
  });

  it('cursorBased follows a dotted cursorPath and starts with no cursor', async () => {
    const pages: Record<string, JsonObject> = {
      '': { items: [1, 2], meta: { next: 'tok-2' } },
      'tok-2': { items: [3, 4], meta: { next: 'tok-3' } },
      'tok-3': { items: [5], meta: {} },
    };
    target.route('GET', '/pg/cursor-dotted', (request) => ({
      body: pages[param(request, 'after') ?? ''] ?? { error: 'unknown cursor' },
    }));
    const result = await runPaged({
      url: url('/pg/cursor-dotted'),
      queryParams: { after: '<<cursor>>', size: '<<limit>>' },
      pagination: { type: 'cursorBased', pageSize: '2', cursorPath: 'meta.next' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ items: [1, 2, 3, 4, 5], meta: { next: 'tok-3' } });
    // The first request has no cursor, so the parameter that resolved to null is dropped.
    expect(queries('/pg/cursor-dotted')).toEqual([
      [['size', '2']],
      [
        ['after', 'tok-2'],
        ['size', '2'],
      ],
      [
        ['after', 'tok-3'],
        ['size', '2'],
      ],
    ]);
  });

  it('cursorBased reads a cursorPath containing dots as a literal key first (@odata.nextLink)', async () => {
    const next = url('/pg/odata/People?$skiptoken=2');
    target.route('GET', '/pg/odata/People', (request) =>
      param(request, '$skiptoken') === '2'
        ? { body: { value: [{ name: 'Cy' }] } }
        : { body: { value: [{ name: 'Ada' }, { name: 'Bob' }], '@odata.nextLink': next } },
    );
    const result = await runPaged(
      {
        url: '<<(s) => s.cursor ?? s.start>>',
        pagination: { type: 'cursorBased', pageSize: '2', cursorPath: '@odata.nextLink' },
      },
      { start: url('/pg/odata/People') },
    );
    expect(result.status).toBe('success');
    expect(queries('/pg/odata/People')).toEqual([[], [['$skiptoken', '2']]]);
    expect(result.data).toEqual({
      value: [{ name: 'Ada' }, { name: 'Bob' }, { name: 'Cy' }],
      '@odata.nextLink': next,
    });
  });

  it('cursorBased ignores a leading $. in cursorPath', async () => {
    const pages: Record<string, JsonObject> = {
      '': { data: ['a', 'b'], paging: { cursors: { after: 'c2' } } },
      c2: { data: ['c', 'd'], paging: { cursors: { after: 'c3' } } },
      c3: { data: ['e'], paging: { cursors: { after: '' } } },
    };
    target.route('GET', '/pg/cursor-dollar', (request) => ({
      body: pages[param(request, 'after') ?? ''] ?? { error: 'unknown cursor' },
    }));
    const result = await runPaged({
      url: url('/pg/cursor-dollar'),
      queryParams: { after: '<<cursor>>' },
      pagination: { type: 'cursorBased', pageSize: '2', cursorPath: '$.paging.cursors.after' },
    });
    expect(result.status).toBe('success');
    expect(queries('/pg/cursor-dollar')).toEqual([[], [['after', 'c2']], [['after', 'c3']]]);
    expect(result.data).toEqual({ data: ['a', 'b', 'c', 'd', 'e'], paging: { cursors: { after: '' } } });
  });
});

describe('pagination stop rules', () => {
  it('stops on a page shorter than pageSize without asking for another', async () => {
    target.route('GET', '/pg/short', pageEndpoint(records(7)));
    const result = await runPaged({
      url: url('/pg/short'),
      queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
      pagination: { type: 'pageBased', pageSize: '3' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual(records(7));
    expect(target.count('/pg/short')).toBe(3);
  });

  it('stops on an empty page', async () => {
    target.route('GET', '/pg/empty', pageEndpoint(records(6)));
    const result = await runPaged({
      url: url('/pg/empty'),
      queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
      pagination: { type: 'pageBased', pageSize: '3' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual(records(6));
    expect(queries('/pg/empty').map((q) => q[0])).toEqual([
      ['page', '1'],
      ['page', '2'],
      ['page', '3'],
    ]);
  });

  it('stops cursor pagination on a missing cursor, not on a short object page', async () => {
    const pages: Record<string, JsonObject> = {
      '': { results: [{ id: 1 }], nextCursor: 'n2' },
      n2: { results: [{ id: 2 }], nextCursor: null },
    };
    target.route('GET', '/pg/missing-cursor', (request) => ({
      body: pages[param(request, 'cursor') ?? ''] ?? { results: [{ id: 'unexpected' }] },
    }));
    const result = await runPaged({
      url: url('/pg/missing-cursor'),
      queryParams: { cursor: '<<cursor>>' },
      pagination: { type: 'cursorBased', pageSize: '10', cursorPath: 'nextCursor' },
    });
    expect(result.status).toBe('success');
    expect(target.count('/pg/missing-cursor')).toBe(2);
    expect(result.data).toEqual({ results: [{ id: 1 }, { id: 2 }], nextCursor: null });
  });

  it('stops on a page identical to one already seen and does not merge it', async () => {
    const pages = [
      [{ id: 1 }, { id: 2 }],
      [{ id: 3 }, { id: 4 }],
    ];
    // Past the last page this server wraps around to the first one.
    target.route('GET', '/pg/repeat', (request) => ({
      body: pages[(Number(param(request, 'page')) - 1) % pages.length],
    }));
    const result = await runPaged({
      url: url('/pg/repeat'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: '2' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
    expect(target.count('/pg/repeat')).toBe(3);
  });

  it('stops when the stopCondition sees enough via response.headers, pageInfo.totalFetched and sourceData', async () => {
    const rows = records(20);
    target.route('GET', '/pg/stop-condition', (request) => {
      const page = Number(param(request, 'page'));
      return {
        headers: { 'X-Total-Count': '4' },
        body: { results: rows.slice((page - 1) * 2, page * 2), page },
      };
    });
    const result = await runPaged(
      {
        url: url('/pg/stop-condition'),
        queryParams: { page: '<<page>>' },
        pagination: {
          type: 'pageBased',
          pageSize: '2',
          stopCondition:
            "(response, pageInfo, sourceData) => pageInfo.totalFetched >= Math.min(Number(response.headers['x-total-count']), sourceData.maxItems)",
        },
      },
      { maxItems: 100 },
    );
    expect(result.status).toBe('success');
    expect(target.count('/pg/stop-condition')).toBe(2);
    expect(result.data).toEqual({ results: rows.slice(0, 4), page: 2 });
  });

  it('fails the step when the first two pages are identical: the parameters are not applied', async () => {
    target.route('GET', '/pg/ignored-params', { body: [{ id: 1 }, { id: 2 }] });
    const result = await runPaged({
      url: url('/pg/ignored-params'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: '2' },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^Step list failed: Pagination parameters are not being applied/);
    expect(target.count('/pg/ignored-params')).toBe(2);
  });

  it('fails the step saying the maxPages cap was hit when more pages remain', async () => {
    target.route('GET', '/pg/endless', (request) => {
      const page = Number(param(request, 'page'));
      return { body: [{ id: page * 2 - 1 }, { id: page * 2 }] };
    });
    const result = await runPaged({
      url: url('/pg/endless'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: '2', maxPages: 3 },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^Step list failed: Pagination hit the maxPages cap of 3 pages/);
    expect(target.count('/pg/endless')).toBe(3);
  });
});

describe('merging pages', () => {
  it('merges object pages: nested arrays concatenate, nested objects merge, scalars take the newest', async () => {
    const pages: JsonObject[] = [
      { results: [{ id: 1 }, { id: 2 }], meta: { page: 1, tags: ['a'], source: 'api' }, total: 3 },
      { results: [{ id: 3 }], meta: { page: 2, tags: ['b'] }, total: 3 },
    ];
    target.route('GET', '/pg/merge', (request) => ({
      body: pages[Number(param(request, 'page')) - 1] ?? {},
    }));
    const result = await runPaged({
      url: url('/pg/merge'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: '2' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({
      results: [{ id: 1 }, { id: 2 }, { id: 3 }],
      meta: { page: 2, tags: ['a', 'b'], source: 'api' },
      total: 3,
    });
  });

  it('never unwraps a one-element array', async () => {
    target.route('GET', '/pg/one', { body: [{ id: 'only' }] });
    const result = await runPaged({
      url: url('/pg/one'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: '5' },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual([{ id: 'only' }]);
    expect(result.stepResults[0]?.data).toEqual([{ id: 'only' }]);
  });
});
