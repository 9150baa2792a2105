import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import {
  type AcceptResult,
  createPaginator,
  type PageResponse,
  type PaginationConfig,
  PaginationError,
  type PaginationVariables,
  parsePaginationSettings,
} from '../../../engine/pagination.ts';
import { getByPath } from '../../../engine/paths.ts';
import type { Evaluate } from '../../../engine/template.ts';

/**
 * TEST-ONLY stand-in for the isolated-vm sandbox: runs the (trusted, test-authored) function
 * source in-process with `new Function`. Never use this outside tests.
 */
const testEvaluate: Evaluate = async (source, args) => {
  const fn = new Function(`return (${source}\n);`)() as (...values: JsonValue[]) => unknown;
  return (await fn(...args)) as JsonValue | undefined;
};

const noEvaluate: Evaluate = async () => {
  throw new Error('evaluate must not be called');
};

interface Run {
  requests: PaginationVariables[];
  outcome: AcceptResult;
  result: JsonValue;
}

/** Plays the HTTP step: asks for the variables, "sends" the request to `serve`, accepts the page. */
async function drive(
  config: PaginationConfig,
  serve: (variables: PaginationVariables) => JsonValue | PageResponse,
  options: { evaluate?: Evaluate; sourceData?: JsonObject; maxRequests?: number } = {},
): Promise<Run> {
  const paginator = createPaginator(config, {
    evaluate: options.evaluate ?? noEvaluate,
    sourceData: options.sourceData ?? {},
  });
  const requests: PaginationVariables[] = [];
  for (let i = 0; i < (options.maxRequests ?? 5000); i++) {
    const variables = paginator.variables();
    requests.push(variables);
    const served = serve(variables);
    const response: PageResponse = isPageResponse(served) ? served : { data: served, headers: {} };
    const outcome = await paginator.accept(response);
    if (outcome.done) return { requests, outcome, result: paginator.result() };
  }
  throw new Error('test server was asked for too many pages');
}

function isPageResponse(value: JsonValue | PageResponse): value is PageResponse {
  return typeof value === 'object' && value !== null && 'headers' in value && 'data' in value;
}

/** A collection of `total` numbered items served by offset and limit. */
function items(from: number, count: number): JsonValue[] {
  return Array.from({ length: Math.max(0, count) }, (_, i) => ({ id: from + i }));
}

describe('pagination counters', () => {
  it('pageBased: page starts at 1 and grows by 1 per request', async () => {
    const run = await drive({ type: 'pageBased', pageSize: 2 }, ({ page }) =>
      items((page - 1) * 2, page < 3 ? 2 : 1),
    );
    expect(run.requests.map((r) => r.page)).toEqual([1, 2, 3]);
    expect(run.result).toEqual(items(0, 5));
  });

  it('offsetBased: offset starts at 0 and grows by pageSize', async () => {
    const run = await drive({ type: 'offsetBased', pageSize: '10' }, ({ offset, limit }) =>
      items(offset, Math.min(limit, 25 - offset)),
    );
    expect(run.requests.map((r) => r.offset)).toEqual([0, 10, 20]);
    expect(run.requests.map((r) => r.page)).toEqual([1, 2, 3]);
    expect(run.result).toEqual(items(0, 25));
  });

  it('cursorBased: cursor starts at null, then is the value at cursorPath of the last response', async () => {
    const pages: Record<string, JsonValue> = {
      start: { data: items(0, 2), next: 'c2' },
      c2: { data: items(2, 2), next: 'c3' },
      c3: { data: items(4, 1), next: null },
    };
    const run = await drive(
      { type: 'cursorBased', cursorPath: 'next' },
      ({ cursor }) => pages[cursor === null ? 'start' : String(cursor)]!,
    );
    expect(run.requests.map((r) => r.cursor)).toEqual([null, 'c2', 'c3']);
    expect(run.outcome).toEqual({ done: true, reason: 'emptyCursor' });
    expect(run.result).toEqual({ data: items(0, 5), next: null });
  });

  it('limit and pageSize equal the number given, as numbers', () => {
    const paginator = createPaginator(
      { type: 'offsetBased', pageSize: '25' },
      { evaluate: noEvaluate, sourceData: {} },
    );
    expect(paginator.variables()).toEqual({ page: 1, offset: 0, cursor: null, limit: 25, pageSize: 25 });
  });

  it('pageSize defaults to 50', () => {
    const paginator = createPaginator({ type: 'pageBased' }, { evaluate: noEvaluate, sourceData: {} });
    expect(paginator.variables()).toEqual({ page: 1, offset: 0, cursor: null, limit: 50, pageSize: 50 });
  });

  it('rejects invalid settings', () => {
    expect(() => parsePaginationSettings({ type: 'pageBased', pageSize: 'ten' })).toThrow(
      "Pagination pageSize must be a positive integer, got 'ten'",
    );
    expect(() => parsePaginationSettings({ type: 'pageBased', pageSize: 0 })).toThrow(PaginationError);
    expect(() => parsePaginationSettings({ type: 'cursorBased' })).toThrow(
      'cursorBased pagination needs a cursorPath',
    );
  });
});

describe('pagination stop rules without a stopCondition', () => {
  it('stops on an array page shorter than pageSize', async () => {
    const run = await drive({ type: 'pageBased', pageSize: 3 }, ({ page }) =>
      items(page * 10, page === 2 ? 2 : 3),
    );
    expect(run.outcome).toEqual({ done: true, reason: 'shortPage' });
    expect(run.requests).toHaveLength(2);
    expect(run.result).toHaveLength(5);
  });

  it('stops on an empty page', async () => {
    for (const empty of [[], null, {}, '', { data: [], total: 4 }] as JsonValue[]) {
      const run = await drive({ type: 'pageBased', pageSize: 2 }, ({ page }) =>
        page === 1 ? { data: items(0, 2), total: 4 } : empty,
      );
      expect(run.outcome).toEqual({ done: true, reason: 'emptyPage' });
      expect(run.requests).toHaveLength(2);
    }
  });

  it('measures an object page by its longest array (also in nested objects)', async () => {
    const run = await drive({ type: 'offsetBased', pageSize: 3 }, ({ offset }) => ({
      result: { records: items(offset, offset < 6 ? 3 : 1) },
      errors: [],
    }));
    expect(run.outcome).toEqual({ done: true, reason: 'shortPage' });
    expect(run.requests.map((r) => r.offset)).toEqual([0, 3, 6]);
    expect(run.result).toEqual({ result: { records: items(0, 7) }, errors: [] });
  });

  it('stops on an empty cursor (cursorBased), even on a full page', async () => {
    const lastPages: JsonValue[] = [
      { data: items(2, 2), next: '' },
      { data: items(2, 2), next: null },
      { data: items(2, 2), next: false },
      { data: items(2, 2), next: {} },
    ];
    for (const last of lastPages) {
      const run = await drive(
        { type: 'cursorBased', cursorPath: 'next', pageSize: 2 },
        ({ cursor }): JsonValue => (cursor === null ? { data: items(0, 2), next: 'b' } : last),
      );
      expect(run.outcome).toEqual({ done: true, reason: 'emptyCursor' });
      expect(run.requests).toHaveLength(2);
    }
  });

  it('ends on a later page that was not full and has no cursor at all, saying so', async () => {
    const paginator = createPaginator(
      { type: 'cursorBased', cursorPath: 'next', pageSize: 2 },
      { evaluate: noEvaluate, sourceData: {} },
    );
    await paginator.accept({ data: { data: items(0, 2), next: 'b' }, headers: {} });
    expect(await paginator.accept({ data: { data: items(2, 1) }, headers: {} })).toEqual({
      done: true,
      reason: 'absentCursor',
    });
    expect(paginator.summary()).toEqual({
      pages: 2,
      items: 3,
      stoppedBy: 'absentCursor',
      reason:
        "page 2 had nothing at cursorPath 'next' (a page of 1 item, fewer than pageSize 2, taken as the last page)",
    });
  });

  it('fails when the cursorPath finds nothing on the first page, naming the path and the keys there are', async () => {
    const firstPages: JsonValue[] = [
      { data: items(0, 1), meta: { nextCursor: 'b', total: 9 } },
      { data: items(0, 2) },
    ];
    for (const first of firstPages) {
      const failure = drive({ type: 'cursorBased', cursorPath: 'next', pageSize: 2 }, () => first);
      await expect(failure).rejects.toMatchObject({ code: 'cursorNotFound' });
      await expect(failure).rejects.toThrow(/^Pagination cursorPath 'next' found nothing on page 1/);
    }
    const failure = drive({ type: 'cursorBased', cursorPath: 'next', pageSize: 2 }, () => ({
      data: items(0, 1),
      meta: { nextCursor: 'b', total: 9 },
    }));
    await expect(failure).rejects.toThrow(
      'the response has the keys data, meta, meta.nextCursor, meta.total.',
    );
  });

  it('fails when the cursorPath finds nothing on a full later page', async () => {
    const failure = drive(
      { type: 'cursorBased', cursorPath: 'next', pageSize: 2 },
      ({ cursor }): JsonValue => (cursor === null ? { data: items(0, 2), next: 'b' } : { data: items(2, 2) }),
    );
    await expect(failure).rejects.toThrow(
      /^Pagination cursorPath 'next' found nothing on page 2, a full page of 2 items; the response has the keys data\./,
    );
  });

  it('ends on an empty page without a cursor, also the first', async () => {
    const run = await drive({ type: 'cursorBased', cursorPath: 'next' }, () => ({ data: [] }));
    expect(run.outcome).toEqual({ done: true, reason: 'emptyPage' });
  });

  it('does not stop cursorBased object pages on a short item list while a cursor exists', async () => {
    const run = await drive({ type: 'cursorBased', cursorPath: 'next', pageSize: 50 }, ({ page }) => ({
      data: items(page * 10, 10),
      next: page < 3 ? `p${page + 1}` : null,
    }));
    expect(run.requests).toHaveLength(3);
    expect(run.outcome).toEqual({ done: true, reason: 'emptyCursor' });
  });

  it('stops on a repeated cursor', async () => {
    const run = await drive({ type: 'cursorBased', cursorPath: 'next', pageSize: 1 }, ({ cursor }) =>
      cursor === null
        ? { data: items(0, 1), next: 'a' }
        : { data: items(cursor === 'a' ? 1 : 2, 1), next: 'a' },
    );
    expect(run.requests.map((r) => r.cursor)).toEqual([null, 'a']);
    expect(run.outcome).toEqual({ done: true, reason: 'repeatedCursor' });
  });

  it('stops on a page identical to one already seen and does not merge it', async () => {
    const pages: JsonValue[] = [items(0, 2), items(2, 2), items(0, 2)];
    const run = await drive({ type: 'pageBased', pageSize: 2 }, ({ page }) => pages[page - 1]!);
    expect(run.outcome).toEqual({ done: true, reason: 'repeatedPage' });
    expect(run.requests).toHaveLength(3);
    expect(run.result).toEqual(items(0, 4));
  });

  it('treats pages that differ only in key order as identical', async () => {
    const pages: JsonValue[] = [
      { a: items(0, 2), b: 1 },
      { a: items(2, 2), b: 2 },
      { b: 1, a: items(0, 2) },
    ];
    const run = await drive({ type: 'pageBased', pageSize: 2 }, ({ page }) => pages[page - 1]!);
    expect(run.outcome).toEqual({ done: true, reason: 'repeatedPage' });
  });
});

describe('pagination stopCondition', () => {
  it('stops when the stopCondition returns true, after merging that page', async () => {
    const run = await drive(
      { type: 'pageBased', pageSize: 2, stopCondition: '(response) => response.data.hasMore === false' },
      ({ page }) => ({ data: items(page * 2, 2), hasMore: page < 3 }),
      { evaluate: testEvaluate },
    );
    expect(run.outcome).toEqual({ done: true, reason: 'stopCondition' });
    expect(run.requests).toHaveLength(3);
    expect(run.result).toEqual({ data: items(2, 6), hasMore: false });
  });

  it('continues on false even for pages the default rules would stop on', async () => {
    const run = await drive(
      { type: 'pageBased', pageSize: 10, stopCondition: '(response, pageInfo) => pageInfo.page === 3' },
      ({ page }) => items(page * 10, 1),
      { evaluate: testEvaluate },
    );
    expect(run.requests).toHaveLength(3);
  });

  it('ends cursorBased pagination on an empty cursor though the stopCondition says go on', async () => {
    const run = await drive(
      { type: 'cursorBased', cursorPath: 'next', pageSize: 2, stopCondition: '() => false' },
      ({ cursor }) =>
        cursor === null ? { data: items(0, 2), next: 'b' } : { data: items(2, 2), next: null },
      { evaluate: testEvaluate },
    );
    expect(run.requests.map((r) => r.cursor)).toEqual([null, 'b']);
    expect(run.outcome).toEqual({ done: true, reason: 'emptyCursor' });
  });

  it('asks the stopCondition before the cursor rules: it may stop on a page without a cursor', async () => {
    const run = await drive(
      { type: 'cursorBased', cursorPath: 'next', stopCondition: '(response) => !response.data.next' },
      () => ({ data: items(0, 2) }),
      { evaluate: testEvaluate },
    );
    expect(run.outcome).toEqual({ done: true, reason: 'stopCondition' });
    const failure = drive(
      { type: 'cursorBased', cursorPath: 'next', stopCondition: '() => false' },
      () => ({ data: items(0, 2) }),
      { evaluate: testEvaluate },
    );
    await expect(failure).rejects.toMatchObject({ code: 'cursorNotFound' });
  });

  it('gets response {data, headers} with lower-case header names, pageInfo and sourceData', async () => {
    const calls: Array<{ source: string; args: JsonValue[] }> = [];
    const evaluate: Evaluate = async (source, args) => {
      calls.push({ source, args: structuredClone(args) });
      return testEvaluate(source, args);
    };
    const stopCondition = '(response, pageInfo, sourceData) => pageInfo.totalFetched >= sourceData.want';
    await drive(
      { type: 'offsetBased', pageSize: 2, stopCondition },
      ({ offset }) => ({ data: items(offset, 2), headers: { 'X-Total-Count': '4', Link: ['<a>', '<b>'] } }),
      { evaluate, sourceData: { want: 4 } },
    );
    expect(calls).toHaveLength(2);
    expect(calls[0]!.source).toBe(stopCondition);
    expect(calls[1]!.args).toEqual([
      { data: items(2, 2), headers: { 'x-total-count': '4', link: ['<a>', '<b>'] } },
      { page: 2, offset: 2, cursor: null, totalFetched: 4 },
      { want: 4 },
    ]);
  });

  it('passes mergedResult (including the current page) when the stopCondition uses it', async () => {
    const seen: JsonValue[] = [];
    const evaluate: Evaluate = async (source, args) => {
      seen.push(structuredClone(args[1]!));
      return testEvaluate(source, args);
    };
    await drive(
      {
        type: 'cursorBased',
        cursorPath: 'next',
        stopCondition: '(r, { mergedResult, cursor }) => mergedResult.data.length >= 3',
      },
      ({ cursor }) => ({ data: items(cursor === null ? 0 : 2, 2), next: 'n' }),
      { evaluate },
    );
    expect(seen).toEqual([
      { page: 1, offset: 0, cursor: null, totalFetched: 2, mergedResult: { data: items(0, 2), next: 'n' } },
      { page: 2, offset: 50, cursor: 'n', totalFetched: 4, mergedResult: { data: items(0, 4), next: 'n' } },
    ]);
  });
});

describe('pagination failures', () => {
  it('fails when the first two pages are identical and non-empty', async () => {
    const failure = drive({ type: 'pageBased', pageSize: 2 }, () => items(0, 2));
    await expect(failure).rejects.toThrow(/pagination parameters are not being applied/i);
    await expect(failure).rejects.toMatchObject({ code: 'parametersNotApplied' });
  });

  it('fails on identical first two pages even with a stopCondition', async () => {
    const failure = drive(
      { type: 'pageBased', pageSize: 2, stopCondition: '() => false' },
      () => items(0, 2),
      {
        evaluate: testEvaluate,
      },
    );
    await expect(failure).rejects.toThrow(/not being applied/);
  });

  it('does not fail when the identical first two pages are empty', async () => {
    const run = await drive(
      { type: 'pageBased', stopCondition: '(r, info) => info.page === 2' },
      () => ({ data: [] }),
      { evaluate: testEvaluate },
    );
    expect(run.outcome).toEqual({ done: true, reason: 'stopCondition' });
  });

  it('fails with a message saying the maxPages cap was hit (default 1000)', async () => {
    const failure = drive({ type: 'pageBased', pageSize: 1 }, ({ page }) => items(page, 1));
    await expect(failure).rejects.toThrow('Pagination hit the maxPages cap of 1000 pages');
    await expect(failure).rejects.toMatchObject({ code: 'maxPages' });
  });

  it('honours a configured maxPages and succeeds when the last page is exactly the cap', async () => {
    await expect(
      drive({ type: 'pageBased', pageSize: 1, maxPages: 3 }, ({ page }) => items(page, 1)),
    ).rejects.toThrow('maxPages cap of 3 pages');
    const run = await drive({ type: 'pageBased', pageSize: 2, maxPages: 3 }, ({ page }) =>
      items(page * 2, page < 3 ? 2 : 1),
    );
    expect(run.outcome).toEqual({ done: true, reason: 'shortPage' });
    expect(run.requests).toHaveLength(3);
  });

  it('refuses pages after pagination finished', async () => {
    const paginator = createPaginator({ type: 'pageBased' }, { evaluate: noEvaluate, sourceData: {} });
    expect(await paginator.accept({ data: [], headers: {} })).toEqual({ done: true, reason: 'emptyPage' });
    await expect(paginator.accept({ data: [], headers: {} })).rejects.toMatchObject({ code: 'finished' });
  });

  it('reports a failing stopCondition with the page number', async () => {
    const failure = drive(
      { type: 'pageBased', stopCondition: '(r) => r.data.nope.deeper' },
      () => items(0, 50),
      {
        evaluate: testEvaluate,
      },
    );
    await expect(failure).rejects.toMatchObject({ code: 'stopCondition' });
    await expect(failure).rejects.toThrow(/^Pagination stopCondition failed on page 1: /);
  });

  it('fails instead of dropping data when an object page follows array pages', async () => {
    const pages: JsonValue[] = [items(0, 2), { error: 'rate limited' }];
    await expect(
      drive({ type: 'pageBased', pageSize: 2 }, ({ page }) => pages[page - 1]!),
    ).rejects.toMatchObject({
      code: 'shapeMismatch',
    });
  });
});

describe('pagination merge', () => {
  async function mergeOf(pages: JsonValue[]): Promise<JsonValue> {
    const paginator = createPaginator(
      { type: 'pageBased', stopCondition: `(r, info) => info.page === ${pages.length}` },
      { evaluate: testEvaluate, sourceData: {} },
    );
    for (const data of pages) await paginator.accept({ data, headers: {} });
    return paginator.result();
  }

  it('concatenates array pages', async () => {
    expect(await mergeOf([[1, 2], [3], [4, 5]])).toEqual([1, 2, 3, 4, 5]);
  });

  it('merges object pages key by key: nested arrays concatenate, nested objects merge, scalars take the newest value', async () => {
    const merged = await mergeOf([
      { data: [1], meta: { total: 3, first: true, tags: ['a'] }, next: 'p2', onlyFirst: 1 },
      { data: [2, 3], meta: { total: 3, last: true, tags: ['b'] }, next: null, onlyLast: 2 },
    ]);
    expect(merged).toEqual({
      data: [1, 2, 3],
      meta: { total: 3, first: true, last: true, tags: ['a', 'b'] },
      next: null,
      onlyFirst: 1,
      onlyLast: 2,
    });
  });

  it('never unwraps a one-element array', async () => {
    expect(await mergeOf([[{ id: 1 }]])).toEqual([{ id: 1 }]);
    expect(await mergeOf([{ data: [{ id: 1 }] }])).toEqual({ data: [{ id: 1 }] });
  });

  it('does not merge a closing empty page of another kind', async () => {
    expect(await mergeOf([{ data: [1] }, [], null, ''])).toEqual({ data: [1] });
    expect(await mergeOf([[1], {}, null])).toEqual([1]);
  });

  it('does not let null replace an accumulated array or object', async () => {
    expect(
      await mergeOf([
        { data: [1], meta: { a: 1 } },
        { data: null, meta: null },
      ]),
    ).toEqual({
      data: [1],
      meta: { a: 1 },
    });
  });

  it('treats __proto__ in a page as an ordinary key', async () => {
    const page = JSON.parse('{"__proto__": {"polluted": true}, "data": [1]}') as JsonValue;
    const merged = (await mergeOf([page])) as JsonObject;
    expect(Object.hasOwn(merged, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
  });

  it('keeps the merged result independent of the caller’s page objects', async () => {
    const paginator = createPaginator(
      { type: 'pageBased', pageSize: 2 },
      { evaluate: noEvaluate, sourceData: {} },
    );
    const page: JsonObject = { data: [{ id: 1 }, { id: 2 }], meta: { n: 1 } };
    await paginator.accept({ data: page, headers: {} });
    (page.data as JsonObject[])[0]!.id = 99;
    (page.data as JsonValue[]).push({ id: 3 });
    (page.meta as JsonObject).n = 2;
    expect(paginator.result()).toEqual({ data: [{ id: 1 }, { id: 2 }], meta: { n: 1 } });
  });

  it('merges in place and in linear time: 1 000 pages × 100 items cost ~10× 100 pages', async () => {
    async function paginate(
      pageCount: number,
    ): Promise<{ work: number; sameAccumulator: boolean; length: number }> {
      const paginator = createPaginator(
        { type: 'offsetBased', pageSize: 100, maxPages: 2000 },
        { evaluate: noEvaluate, sourceData: {} },
      );
      let accumulator: JsonValue | undefined;
      let sameAccumulator = true;
      for (;;) {
        const { offset } = paginator.variables();
        const count = offset < pageCount * 100 ? 100 : 0;
        const outcome = await paginator.accept({
          data: { data: items(offset, count), meta: { offset } },
          headers: {},
        });
        const result = paginator.result() as JsonObject;
        accumulator ??= result.data;
        sameAccumulator &&= result.data === accumulator;
        if (outcome.done)
          return { work: paginator.work(), sameAccumulator, length: (result.data as JsonValue[]).length };
      }
    }
    const small = await paginate(100);
    const large = await paginate(1000);
    expect(small.length).toBe(100 * 100);
    expect(large.length).toBe(1000 * 100);
    expect(large.sameAccumulator).toBe(true);
    // Linear: 10× the data costs about 10× the work (quadratic would be ~100×).
    expect(large.work / small.work).toBeGreaterThan(8);
    expect(large.work / small.work).toBeLessThan(12);
    // And the work per merged item is a small constant.
    expect(large.work / large.length).toBeLessThan(20);
  });
});

describe('cursorPath (getByPath)', () => {
  it('tries the whole path as a literal key first', () => {
    const body = { '@odata.nextLink': 'https://next', '@odata': { nextLink: 'wrong' } };
    expect(getByPath(body, '@odata.nextLink')).toBe('https://next');
  });

  it('falls back to a dotted path through objects and array indexes', () => {
    const body = { meta: { next: 'm' }, data: [{ id: 'first' }, { id: 'second' }] };
    expect(getByPath(body, 'meta.next')).toBe('m');
    expect(getByPath(body, 'data.0.id')).toBe('first');
    expect(getByPath(body, 'data[1].id')).toBe('second');
    expect(getByPath(body, 'data.5.id')).toBeUndefined();
    expect(getByPath(body, 'meta.next.deeper')).toBeUndefined();
  });

  it('ignores a leading $.', () => {
    expect(getByPath({ meta: { next: 'm' } }, '$.meta.next')).toBe('m');
    expect(getByPath({ '@odata.nextLink': 'n' }, '$.@odata.nextLink')).toBe('n');
  });

  it('reads own properties only', () => {
    expect(getByPath({ a: {} }, 'a.constructor')).toBeUndefined();
    expect(getByPath({}, '__proto__')).toBeUndefined();
  });

  it('drives cursorBased pagination with an @odata.nextLink cursor', async () => {
    const run = await drive(
      { type: 'cursorBased', cursorPath: '@odata.nextLink' },
      ({ cursor }): JsonValue =>
        cursor === null
          ? { value: items(0, 2), '@odata.nextLink': 'https://api/next' }
          : { value: items(2, 1) },
    );
    expect(run.requests.map((r) => r.cursor)).toEqual([null, 'https://api/next']);
    expect(run.result).toEqual({ value: items(0, 3), '@odata.nextLink': 'https://api/next' });
  });
});
