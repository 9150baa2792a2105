/**
 * Pagination end to end: the engine pages through a real local HTTP server whose handlers read the
 * query like real APIs do, with stopConditions and cursor expressions evaluated in isolated-vm.
 * Every test uses its own route paths, so the shared request log needs no reset.
 */
import { describe, expect, it } from 'vitest';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { EngineResult } from '../../../engine/types.ts';
import { useEngineDeps } from '../../support/engine.ts';
import { type TargetHandler, type TargetRequest, useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const engine = useEngineDeps();

type RequestConfig = Extract<ToolInput['steps'][number]['config'], { url: string }>;

/** Runs a tool of one paginated GET step `list`. */
function runPaged(config: RequestConfig, inputs: JsonObject = {}): Promise<EngineResult> {
  const tool: ToolInput = { id: 'engine-pagination-test', steps: [{ id: 'list', config }] };
  return runTool(engine.deps, {
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

/** A cursor endpoint serving `pages` by the cursor in query parameter `cursorParam` ('' when there is none). */
function cursorEndpoint(pages: Record<string, JsonValue>, cursorParam = 'after') {
  return (request: TargetRequest) => ({
    body: pages[param(request, cursorParam) ?? ''] ?? { error: 'unknown cursor' },
  });
}

/** An offset endpoint: `offset` and `limit` from the query over `rows`. */
function offsetEndpoint(rows: JsonValue[]) {
  return (request: TargetRequest) => {
    const offset = Number(param(request, 'offset'));
    const limit = Number(param(request, 'limit'));
    return { body: rows.slice(offset, offset + limit) };
  };
}

/** A page-numbered endpoint that wraps around to its first page past the last of `pages`. */
function repeatingEndpoint(pages: JsonValue[]) {
  return (request: TargetRequest) => ({ body: pages[(Number(param(request, 'page')) - 1) % pages.length] });
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
    target.route('GET', '/pg/offset', offsetEndpoint(rows));
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
    target.route('GET', '/pg/cursor-dotted', cursorEndpoint(pages));
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
    target.route('GET', '/pg/cursor-dollar', cursorEndpoint(pages));
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
  /** Pages of 3 through `count` records at path. */
  function pagesOf(path: string, count: number): Promise<EngineResult> {
    target.route('GET', path, pageEndpoint(records(count)));
    return runPaged({
      url: url(path),
      queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
      pagination: { type: 'pageBased', pageSize: '3' },
    });
  }

  it('stops on a page shorter than pageSize without asking for another', async () => {
    const result = await pagesOf('/pg/short', 7);
    expect(result.status).toBe('success');
    expect(result.data).toEqual(records(7));
    expect(target.count('/pg/short')).toBe(3);
  });

  it('stops on an empty page', async () => {
    const result = await pagesOf('/pg/empty', 6);
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
    target.route('GET', '/pg/missing-cursor', cursorEndpoint(pages, 'cursor'));
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
    target.route('GET', '/pg/repeat', repeatingEndpoint(pages));
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

describe('how pagination ended, in the step result', () => {
  /** A run that pages through the endpoint at `path` and succeeds: its data and how its one step's pagination ended. */
  interface Ending {
    case: string;
    path: string;
    endpoint: TargetHandler;
    request: Omit<RequestConfig, 'url'>;
    data: JsonValue;
    ended: NonNullable<EngineResult['stepResults'][number]['pagination']>;
  }

  const endings: Ending[] = [
    {
      case: 'a short page: the page, its item count and pageSize',
      path: '/pg/end/short',
      endpoint: pageEndpoint(records(7)),
      request: {
        queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
        pagination: { type: 'pageBased', pageSize: 3 },
      },
      data: records(7),
      ended: {
        pages: 3,
        items: 7,
        stoppedBy: 'shortPage',
        reason: 'page 3 had 1 item, fewer than pageSize 3',
      },
    },
    {
      case: 'an empty page',
      path: '/pg/end/empty',
      endpoint: offsetEndpoint(records(4)),
      request: {
        queryParams: { offset: '<<offset>>', limit: '<<limit>>' },
        pagination: { type: 'offsetBased', pageSize: 2 },
      },
      data: records(4),
      ended: { pages: 3, items: 4, stoppedBy: 'emptyPage', reason: 'page 3 was empty' },
    },
    {
      case: 'a page repeating an earlier one, which is not merged',
      path: '/pg/end/repeat',
      endpoint: repeatingEndpoint([records(2), [{ id: 3 }, { id: 4 }]]),
      request: { queryParams: { page: '<<page>>' }, pagination: { type: 'pageBased', pageSize: 2 } },
      data: records(4),
      ended: {
        pages: 3,
        items: 4,
        stoppedBy: 'repeatedPage',
        reason: 'page 3 repeated an earlier page (it was not merged)',
      },
    },
    {
      case: 'the stopCondition',
      path: '/pg/end/stop',
      endpoint: pageEndpoint(records(10)),
      request: {
        queryParams: { page: '<<page>>', per_page: '<<pageSize>>' },
        pagination: {
          type: 'pageBased',
          pageSize: 2,
          stopCondition: '(response, pageInfo) => pageInfo.totalFetched >= 4',
        },
      },
      data: records(4),
      ended: {
        pages: 2,
        items: 4,
        stoppedBy: 'stopCondition',
        reason: 'the stopCondition returned true on page 2',
      },
    },
    {
      case: 'an empty cursor, even on a full page',
      path: '/pg/end/null-cursor',
      endpoint: cursorEndpoint({
        '': { items: records(2), next: 'b' },
        b: { items: [{ id: 3 }, { id: 4 }], next: null },
      }),
      request: {
        queryParams: { after: '<<cursor>>' },
        pagination: { type: 'cursorBased', pageSize: 2, cursorPath: 'next' },
      },
      data: { items: records(4), next: null },
      ended: { pages: 2, items: 4, stoppedBy: 'emptyCursor', reason: "page 2 had null at cursorPath 'next'" },
    },
    {
      case: 'a cursor left out of a later page that was not full: taken as the last page, and said so',
      path: '/pg/end/absent-cursor',
      endpoint: cursorEndpoint({
        '': { items: records(2), meta: { next: 'b' } },
        b: { items: [{ id: 3 }], meta: {} },
      }),
      request: {
        queryParams: { after: '<<cursor>>' },
        pagination: { type: 'cursorBased', pageSize: 2, cursorPath: 'meta.next' },
      },
      data: { items: records(3), meta: { next: 'b' } },
      ended: {
        pages: 2,
        items: 3,
        stoppedBy: 'absentCursor',
        reason:
          "page 2 had nothing at cursorPath 'meta.next' (a page of 1 item, fewer than pageSize 2, taken as the last page)",
      },
    },
    {
      case: 'a cursor that was sent before',
      path: '/pg/end/same-cursor',
      endpoint: cursorEndpoint({
        '': { items: records(2), next: 'b' },
        b: { items: [{ id: 3 }, { id: 4 }], next: 'b' },
      }),
      request: {
        queryParams: { after: '<<cursor>>' },
        pagination: { type: 'cursorBased', pageSize: 2, cursorPath: 'next' },
      },
      data: { items: records(4), next: 'b' },
      ended: {
        pages: 2,
        items: 4,
        stoppedBy: 'repeatedCursor',
        reason: "page 2 had a cursor at cursorPath 'next' that was sent before",
      },
    },
  ];

  it.each(endings)('$case', async ({ path, endpoint, request, data, ended }) => {
    target.route('GET', path, endpoint);
    const result = await runPaged({ url: url(path), ...request });
    expect(result.status).toBe('success');
    expect(result.data).toEqual(data);
    expect(result.stepResults[0]?.pagination).toEqual(ended);
  });
});

describe('pagination that cannot go on fails the step instead of ending quietly', () => {
  it('fails when the cursorPath finds nothing on the first page, naming the path and the keys the response has', async () => {
    const pages: Record<string, JsonObject> = {
      '': { items: records(5), meta: { nextCursor: 'b', total: 8 } },
      b: { items: [{ id: 6 }, { id: 7 }, { id: 8 }], meta: { nextCursor: null, total: 8 } },
    };
    target.route('GET', '/pg/wrong-cursor-path', cursorEndpoint(pages, 'cursor'));
    const result = await runPaged({
      url: url('/pg/wrong-cursor-path'),
      queryParams: { cursor: '<<cursor>>' },
      pagination: { type: 'cursorBased', pageSize: 5, cursorPath: 'next' },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(
      "Step list failed: Pagination cursorPath 'next' found nothing on page 1, a full page of 5 items; " +
        'the response has the keys items, meta, meta.nextCursor, meta.total. Set cursorPath to where the ' +
        'response holds the next cursor; if the API leaves the cursor out of its last page, add a ' +
        'stopCondition that recognises that page',
    );
    expect(target.count('/pg/wrong-cursor-path')).toBe(1);
  });

  it('fails on a short first page too: a path that never found a cursor is not known to be right', async () => {
    target.route('GET', '/pg/wrong-cursor-short', { body: { data: [{ id: 1 }], paging: { after: 'b' } } });
    const result = await runPaged({
      url: url('/pg/wrong-cursor-short'),
      queryParams: { after: '<<cursor>>' },
      pagination: { type: 'cursorBased', pageSize: 50, cursorPath: 'after' },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^Step list failed: Pagination cursorPath 'after' found nothing on page 1; the response has the keys data, paging, paging\.after\./,
    );
  });

  it('fails when the cursorPath finds nothing on a later page whose items filled it', async () => {
    const pages: Record<string, JsonObject> = {
      '': { items: records(2), next: 'b' },
      b: { items: [{ id: 3 }, { id: 4 }] },
    };
    target.route('GET', '/pg/cursor-gone', cursorEndpoint(pages, 'cursor'));
    const result = await runPaged({
      url: url('/pg/cursor-gone'),
      queryParams: { cursor: '<<cursor>>' },
      pagination: { type: 'cursorBased', pageSize: 2, cursorPath: 'next' },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^Step list failed: Pagination cursorPath 'next' found nothing on page 2, a full page of 2 items; the response has the keys items\./,
    );
  });

  it('lets a stopCondition recognise the last page of an API that leaves its cursor out', async () => {
    target.route('GET', '/pg/odata-single', { body: { value: [{ name: 'Ada' }] } });
    const result = await runPaged({
      url: url('/pg/odata-single'),
      pagination: {
        type: 'cursorBased',
        cursorPath: '@odata.nextLink',
        stopCondition: "(response) => !response.data['@odata.nextLink']",
      },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ value: [{ name: 'Ada' }] });
    expect(result.stepResults[0]?.pagination?.stoppedBy).toBe('stopCondition');
  });

  it('ends at an empty cursor though the stopCondition says go on, instead of asking for the first page again', async () => {
    const pages: Record<string, JsonObject> = {
      '': { items: records(2), next: 'b' },
      b: { items: [{ id: 3 }, { id: 4 }], next: null },
    };
    target.route('GET', '/pg/cursor-ends-stop', cursorEndpoint(pages, 'cursor'));
    const result = await runPaged({
      url: url('/pg/cursor-ends-stop'),
      queryParams: { cursor: '<<cursor>>' },
      pagination: {
        type: 'cursorBased',
        pageSize: 2,
        cursorPath: 'next',
        maxPages: 10,
        stopCondition: '(response, pageInfo) => pageInfo.totalFetched >= 100',
      },
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ items: records(4), next: null });
    expect(target.count('/pg/cursor-ends-stop')).toBe(2);
    expect(result.stepResults[0]?.pagination?.stoppedBy).toBe('emptyCursor');
  });

  it('fails the step with the error and the page number when the stopCondition throws', async () => {
    target.route('GET', '/pg/stop-throws', (request) => {
      const page = Number(param(request, 'page'));
      return { body: page === 1 ? { items: records(2), meta: { more: true } } : { items: [{ id: 3 }] } };
    });
    const result = await runPaged({
      url: url('/pg/stop-throws'),
      queryParams: { page: '<<page>>' },
      pagination: { type: 'pageBased', pageSize: 2, stopCondition: '(response) => !response.data.meta.more' },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^Step list failed: Pagination stopCondition failed on page 2: step list stopCondition: TypeError at line 1, column \d+: Cannot read properties of undefined \(reading 'more'\)$/,
    );
    expect(result.stepResults[0]).toMatchObject({ success: false, data: null });
  });
});
