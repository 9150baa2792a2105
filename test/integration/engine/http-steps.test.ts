/**
 * The engine end to end: real undici HTTP against a local target server and real isolated-vm for
 * every template function, selector and transform. Assertions are on what the server received and
 * on the run result. Every test uses its own route paths, so the shared request log needs no reset.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { EngineEvent, EngineResult } from '../../../engine/types.ts';
import { useEngineDeps } from '../../support/engine.ts';
import { type TargetRequest, useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const engine = useEngineDeps();

interface RunOptions {
  inputs?: JsonObject;
  timeoutMs?: number;
  traceId?: string;
}

function run(tool: Omit<ToolInput, 'id'>, options: RunOptions = {}): Promise<EngineResult> {
  return runTool(engine.deps, {
    tool: Tool.parse({ id: 'engine-http-test', ...tool }),
    inputs: options.inputs ?? {},
    systems: [],
    timeoutMs: options.timeoutMs,
    traceId: options.traceId ?? 'engine-http-test',
    signal: new AbortController().signal,
  });
}

/** Requests the target received for `path`, in arrival order. */
function received(path: string): TargetRequest[] {
  return target.requests.filter((request) => request.path === path);
}

function only(path: string): TargetRequest {
  const requests = received(path);
  expect(requests).toHaveLength(1);
  return requests[0] as TargetRequest;
}

function url(path: string): string {
  return `${target.url}${path}`;
}

const ok = { body: { ok: true } };

/** Runs one step `send` with the config against `path` on the target, which answers ok; the run succeeds. */
async function send(
  method: string,
  path: string,
  config: Record<string, unknown>,
  options: RunOptions = {},
): Promise<EngineResult> {
  target.route(method, path, ok);
  const result = await run({ steps: [{ id: 'send', config: { url: url(path), ...config } }] }, options);
  expect(result.status).toBe('success');
  return result;
}

/** A 1×1 transparent PNG: bytes that are not UTF-8 text. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

describe('templates in a real request', () => {
  it('resolves <<name>> in the url, a header, a query value and the body', async () => {
    target.route('POST', '/tpl/names/u-7', ok);
    const result = await run(
      {
        steps: [
          {
            id: 'send',
            config: {
              url: url('/tpl/names/<<userId>>'),
              method: 'POST',
              headers: { 'X-Tenant': '<<tenant>>', 'Content-Type': 'text/plain' },
              queryParams: { q: 'name:<<name>>' },
              body: 'hello <<name>> of <<tenant>>',
            },
          },
        ],
      },
      { inputs: { userId: 'u-7', tenant: 'acme', name: 'Ada' } },
    );
    expect(result.status).toBe('success');
    const request = only('/tpl/names/u-7');
    expect(request.headers['x-tenant']).toBe('acme');
    expect(request.query).toEqual([['q', 'name:Ada']]);
    expect(request.text).toBe('hello Ada of acme');
  });

  it('evaluates arrow, bare-parameter, async and function expressions in the sandbox', async () => {
    await send(
      'GET',
      '/tpl/functions',
      {
        queryParams: {
          arrow: '<<(sourceData) => sourceData.user.name.toUpperCase()>>',
          bare: '<<s => s.user.id * 2>>',
          async: '<<async (s) => { const v = await Promise.resolve(s.user.id); return v + 1; }>>',
          fn: '<<function (s) { return s.user.tags.join("+"); }>>',
        },
      },
      { inputs: { user: { name: 'ada', id: 21, tags: ['x', 'y'] } } },
    );
    expect(only('/tpl/functions').query).toEqual([
      ['arrow', 'ADA'],
      ['bare', '42'],
      ['async', '22'],
      ['fn', 'x+y'],
    ]);
  });

  it('renders strings as is, numbers and booleans with String(), objects, arrays and null as JSON, undefined as null', async () => {
    await send(
      'POST',
      '/tpl/rendering',
      {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: 'str=<<str>>|num=<<num>>|bool=<<bool>>|obj=<<obj>>|arr=<<arr>>|nil=<<nil>>|undef=<<(s) => s.absent>>',
      },
      {
        inputs: { str: 'hi there', num: 3.5, bool: false, obj: { a: 1, b: 'x' }, arr: [1, 'two'], nil: null },
      },
    );
    expect(only('/tpl/rendering').text).toBe(
      'str=hi there|num=3.5|bool=false|obj={"a":1,"b":"x"}|arr=[1,"two"]|nil=null|undef=null',
    );
  });

  it('does not end an expression at a >> inside quotes, template literals or brackets', async () => {
    await send(
      'GET',
      '/tpl/scanner',
      {
        queryParams: {
          shift: '<<(s) => s.items.map(x => x.id).filter(id => (id >> 1) > 0).join(",")>>',
          quoted: '<<(s) => ["x>>y", s.tag].join("|")>>',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: user code, evaluated in the sandbox
          literal: '<<(s) => `${s.tag}>>end`>>',
        },
      },
      { inputs: { items: [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }], tag: 't' } },
    );
    expect(only('/tpl/scanner').query).toEqual([
      ['shift', '2,3,4'],
      ['quoted', 'x>>y|t'],
      ['literal', 't>>end'],
    ]);
  });

  it('sends \\<< as a literal <<', async () => {
    await send(
      'POST',
      '/tpl/escape',
      {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: 'write \\<<name>> to get <<name>>',
      },
      { inputs: { name: 'Ada' } },
    );
    expect(only('/tpl/escape').text).toBe('write <<name>> to get Ada');
  });

  it('never scans substituted text again, so an input containing <<secret>> arrives literally', async () => {
    await send(
      'POST',
      '/tpl/no-rescan',
      {
        method: 'POST',
        headers: { 'X-Note': '<<note>>' },
        queryParams: { note: '<<note>>', viaFunction: '<<(s) => s.note>>' },
        body: { text: '<<note>>', framed: '[<<note>>]' },
      },
      { inputs: { note: 'keep <<secret>> as is', secret: 'hunter2-value' } },
    );
    const request = only('/tpl/no-rescan');
    expect(request.headers['x-note']).toBe('keep <<secret>> as is');
    expect(request.query).toEqual([
      ['note', 'keep <<secret>> as is'],
      ['viaFunction', 'keep <<secret>> as is'],
    ]);
    expect(request.json).toEqual({ text: 'keep <<secret>> as is', framed: '[keep <<secret>> as is]' });
    expect(JSON.stringify(request.headers) + request.text).not.toContain('hunter2-value');
  });

  it('fails the step on an undefined name, listing the available keys, and sends nothing', async () => {
    const result = await run(
      { steps: [{ id: 'fetch', config: { url: url('/tpl/missing/<<userId>>') } }] },
      { inputs: { beta: 2, alpha: 1 } },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toBe(
      "Step fetch failed: Template variable 'userId' is not defined; available keys: alpha, beta, credentials, currentItem",
    );
    expect(target.requests.some((request) => request.path.startsWith('/tpl/missing'))).toBe(false);
  });

  it('drops a header or query parameter whose value resolves to null, undefined or ""', async () => {
    await send(
      'GET',
      '/tpl/drop',
      {
        headers: {
          'X-Null': '<<nil>>',
          'X-Undefined': '<<(s) => s.absent>>',
          'X-Empty': '<<empty>>',
          'X-Kept': '<<str>>',
        },
        queryParams: {
          nil: '<<nil>>',
          undef: '<<(s) => s.absent>>',
          empty: '<<empty>>',
          kept: '<<str>>',
          zero: '<<zero>>',
          no: '<<no>>',
        },
      },
      { inputs: { nil: null, empty: '', str: 'hi', zero: 0, no: false } },
    );
    const request = only('/tpl/drop');
    expect(request.headers['x-kept']).toBe('hi');
    expect(request.headers).not.toHaveProperty('x-null');
    expect(request.headers).not.toHaveProperty('x-undefined');
    expect(request.headers).not.toHaveProperty('x-empty');
    expect(request.query).toEqual([
      ['kept', 'hi'],
      ['zero', '0'],
      ['no', 'false'],
    ]);
  });

  it('sends an array query value as repeated keys', async () => {
    await send(
      'GET',
      '/tpl/array-query',
      {
        queryParams: { id: '<<ids>>', tag: ['fixed', '<<tag>>'] },
      },
      { inputs: { ids: [1, 2, 3], tag: 't' } },
    );
    expect(only('/tpl/array-query').query).toEqual([
      ['id', '1'],
      ['id', '2'],
      ['id', '3'],
      ['tag', 'fixed'],
      ['tag', 't'],
    ]);
  });

  it('keeps the JSON type of a body leaf that is exactly one expression', async () => {
    await send(
      'POST',
      '/tpl/json-leaves',
      {
        method: 'POST',
        body: {
          num: '<<num>>',
          bool: '<<bool>>',
          obj: '<<obj>>',
          nil: '<<nil>>',
          undef: '<<(s) => s.absent>>',
          ids: '<<(s) => s.obj.ids>>',
          mixed: 'n=<<num>>',
          nested: { list: ['<<num>>', 'literal'] },
        },
      },
      { inputs: { num: 42, bool: true, obj: { ids: [1, 2] }, nil: null } },
    );
    expect(only('/tpl/json-leaves').json).toEqual({
      num: 42,
      bool: true,
      obj: { ids: [1, 2] },
      nil: null,
      undef: null,
      ids: [1, 2],
      mixed: 'n=42',
      nested: { list: [42, 'literal'] },
    });
  });

  it('gives a JSON body without a Content-Type application/json and keeps a given one', async () => {
    target.route('POST', '/tpl/json-default-type', ok);
    target.route('POST', '/tpl/json-own-type', ok);
    const result = await run({
      steps: [
        {
          id: 'plain',
          config: { url: url('/tpl/json-default-type'), method: 'POST', body: { a: 1 } },
        },
        {
          id: 'own',
          config: {
            url: url('/tpl/json-own-type'),
            method: 'POST',
            headers: { 'Content-Type': 'application/vnd.api+json' },
            body: { a: 2 },
          },
        },
      ],
    });
    expect(result.status).toBe('success');
    const plain = only('/tpl/json-default-type');
    expect(plain.headers['content-type']).toBe('application/json');
    expect(plain.json).toEqual({ a: 1 });
    expect(only('/tpl/json-own-type').headers['content-type']).toBe('application/vnd.api+json');
  });
});

describe('HTTP behaviour through the engine', () => {
  it('turns a binary response into a file reference in the step data', async () => {
    target.route('GET', '/http/files/logo.png', { headers: { 'content-type': 'image/png' }, body: PNG });
    const result = await run({ steps: [{ id: 'download', config: { url: url('/http/files/logo.png') } }] });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({
      __file__: true,
      filename: 'logo.png',
      contentType: 'image/png',
      size: PNG.byteLength,
      contentBase64: PNG.toString('base64'),
    });
    expect(result.stepResults[0]?.data).toEqual(result.data);
  });

  it('turns a Content-Disposition attachment into a file reference even when it is text', async () => {
    target.route('GET', '/http/export', {
      headers: { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="report.csv"' },
      body: 'a,b\n1,2\n',
    });
    const result = await run({ steps: [{ id: 'export', config: { url: url('/http/export') } }] });
    expect(result.status).toBe('success');
    expect(result.data).toMatchObject({
      __file__: true,
      filename: 'report.csv',
      contentType: 'text/csv',
      size: 8,
    });
  });

  it('retries a 503 with Retry-After: 0 for a modify:false step', async () => {
    let calls = 0;
    target.route('GET', '/http/retry-503', () => {
      calls += 1;
      return calls === 1
        ? { status: 503, headers: { 'retry-after': '0' }, body: 'busy' }
        : { body: { attempt: calls } };
    });
    const result = await run({ steps: [{ id: 'fetch', config: { url: url('/http/retry-503') } }] });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ attempt: 2 });
    expect(target.count('/http/retry-503')).toBe(2);
  });

  it('does not retry a modify:true POST on 503', async () => {
    target.route('POST', '/http/no-retry-post', {
      status: 503,
      headers: { 'retry-after': '0' },
      body: 'busy',
    });
    const result = await run({
      steps: [
        {
          id: 'create',
          modify: true,
          config: { url: url('/http/no-retry-post'), method: 'POST', body: { name: 'x' } },
        },
      ],
    });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(`Step create failed: HTTP 503 POST ${url('/http/no-retry-post')}: busy`);
    expect(target.count('/http/no-retry-post')).toBe(1);
  });

  it('does not retry a 404 and reports status, method, url and body', async () => {
    target.route('GET', '/http/not-found', { status: 404, body: 'no such user' });
    const result = await run({ steps: [{ id: 'lookup', config: { url: url('/http/not-found') } }] });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(`Step lookup failed: HTTP 404 GET ${url('/http/not-found')}: no such user`);
    expect(result.stepResults).toEqual([
      {
        stepId: 'lookup',
        success: false,
        data: null,
        error: `HTTP 404 GET ${url('/http/not-found')}: no such user`,
      },
    ]);
    expect(target.count('/http/not-found')).toBe(1);
  });

  it('reports the URL as sent, query pairs included, with credential-like values masked', async () => {
    target.route('GET', '/http/with-query', { status: 404, body: 'gone' });
    const result = await run({
      steps: [
        {
          id: 'lookup',
          config: { url: `${url('/http/with-query')}?x=1`, queryParams: { id: '7', api_key: 'k-123456' } },
        },
      ],
    });
    expect(result.error).toBe(
      `Step lookup failed: HTTP 404 GET ${url('/http/with-query')}?x=1&id=7&api_key=***: gone`,
    );
    expect(result.error).not.toContain('k-123456');
  });

  it('fails the run after options.timeout and aborts the request in flight', async () => {
    const held: ServerResponse[] = [];
    target.route('GET', '/http/slow', (_req, res) => {
      held.push(res);
      return undefined;
    });
    const result = await run(
      { steps: [{ id: 'slow', config: { url: url('/http/slow') } }] },
      { timeoutMs: 1000 },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Run timed out after 1000 ms');
    expect(held).toHaveLength(1);
    await expect.poll(() => held[0]?.closed, { timeout: 10_000 }).toBe(true);
  });

  it('sends the run trace id as a W3C traceparent header', async () => {
    target.route('GET', '/http/trace', ok);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const result = await run({ steps: [{ id: 'fetch', config: { url: url('/http/trace') } }] }, { traceId });
    expect(result.status).toBe('success');
    expect(only('/http/trace').headers.traceparent).toMatch(
      /^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/,
    );
  });
});

describe('transforms in the real sandbox', () => {
  const users = [
    { name: 'Ada', active: true },
    { name: 'Bob', active: false },
    { name: 'Cy', active: true },
  ];

  it("shares one sandbox context between a run's evaluations, never with another run", async () => {
    const tool = {
      steps: [
        {
          id: 'first',
          config: {
            type: 'transform' as const,
            transformCode:
              '(s) => { const before = typeof runNote; globalThis.runNote = s.n; return before; }',
          },
        },
        { id: 'second', config: { type: 'transform' as const, transformCode: '() => runNote' } },
      ],
    };
    const one = await run(tool, { inputs: { n: 1 } });
    const two = await run(tool, { inputs: { n: 2 } });
    expect(one.stepResults.map((r) => r.data)).toEqual(['undefined', 1]);
    expect(two.stepResults.map((r) => r.data)).toEqual(['undefined', 2]);
  });

  it('returns the data unchanged from an identity transform', async () => {
    const items = Array.from({ length: 3 }, (_, i) => ({
      id: i,
      tags: ['a', `b${i}`],
      nested: { ok: true },
    }));
    target.route('GET', '/tx/identity', { body: items });
    const result = await run({
      steps: [{ id: 'items', config: { url: url('/tx/identity') } }],
      outputTransform: '(sourceData) => sourceData',
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ items: { currentItem: {}, data: items, success: true } });
  });

  it('uses a transform step result as step data and as the run data', async () => {
    target.route('GET', '/tx/users', { body: users });
    const result = await run({
      steps: [
        { id: 'users', config: { url: url('/tx/users') } },
        {
          id: 'names',
          config: {
            type: 'transform',
            transformCode: '(s) => s.users.data.filter((u) => u.active).map((u) => u.name)',
          },
        },
      ],
    });
    expect(result.status).toBe('success');
    expect(result.stepResults.map((r) => [r.stepId, r.success, r.data])).toEqual([
      ['users', true, users],
      ['names', true, ['Ada', 'Cy']],
    ]);
    expect(result.data).toEqual(['Ada', 'Cy']);
  });

  it('makes the outputTransform result the run data', async () => {
    target.route('GET', '/tx/output-users', { body: users });
    const result = await run(
      {
        steps: [{ id: 'users', config: { url: url('/tx/output-users') } }],
        outputTransform:
          'async (s) => ({ team: s.team, count: s.users.data.length, first: s.users.data[0].name, ok: s.users.success })',
      },
      { inputs: { team: 'core' } },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ team: 'core', count: 3, first: 'Ada', ok: true });
  });

  it('fails the run with the JSON pointers that do not match outputSchema', async () => {
    target.route('GET', '/tx/schema', { body: { count: '3', items: ['a', 2] } });
    const result = await run({
      steps: [{ id: 'fetch', config: { url: url('/tx/schema') } }],
      outputSchema: {
        type: 'object',
        required: ['count', 'items', 'total'],
        properties: { count: { type: 'number' }, items: { type: 'array', items: { type: 'string' } } },
      },
    });
    expect(result.status).toBe('failed');
    expect(result.data).toBeNull();
    expect(result.error).toMatch(/^Output does not match outputSchema: /);
    expect(result.error).toContain('/count must be number');
    expect(result.error).toContain('/items/1 must be string');
    expect(result.error).toContain("/ must have required property 'total'");
  });

  it('turns __files__ of the output transform into files and removes the key from data', async () => {
    target.route('GET', '/tx/files/logo.png', { headers: { 'content-type': 'image/png' }, body: PNG });
    const result = await run({
      steps: [{ id: 'download', config: { url: url('/tx/files/logo.png') } }],
      outputTransform: `(s) => ({
        ok: true,
        __files__: {
          'report.csv': 'id,name\\n1,Ada\\n',
          'logo.png': s.download.data,
          'data.bin': { content: 'AAEC', encoding: 'base64', contentType: 'application/x-custom' },
        },
      })`,
    });
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ ok: true });
    expect(result.files).toEqual([
      {
        fileKey: 'report.csv',
        filename: 'report.csv',
        contentType: 'text/csv',
        size: Buffer.byteLength('id,name\n1,Ada\n'),
        contentBase64: Buffer.from('id,name\n1,Ada\n').toString('base64'),
      },
      {
        fileKey: 'logo.png',
        filename: 'logo.png',
        contentType: 'image/png',
        size: PNG.byteLength,
        contentBase64: PNG.toString('base64'),
      },
      {
        fileKey: 'data.bin',
        filename: 'data.bin',
        contentType: 'application/x-custom',
        size: 3,
        contentBase64: 'AAEC',
      },
    ]);
  });

  it('keeps require and process out of reach of a transform', async () => {
    const result = await run({
      steps: [
        {
          id: 'useRequire',
          failureBehavior: 'continue',
          config: { type: 'transform', transformCode: "() => require('node:fs').readdirSync('/')" },
        },
        {
          id: 'useProcess',
          failureBehavior: 'continue',
          config: { type: 'transform', transformCode: '() => process.env' },
        },
        {
          id: 'useImport',
          failureBehavior: 'continue',
          config: {
            type: 'transform',
            transformCode: "async () => (await import('node:fs')).readdirSync('/')",
          },
        },
      ],
    });
    const [useRequire, useProcess, useImport] = result.stepResults;
    expect(useRequire?.success).toBe(false);
    expect(useRequire?.error).toMatch(/require is not defined/);
    expect(useProcess?.success).toBe(false);
    expect(useProcess?.error).toMatch(/process is not defined/);
    expect(useImport?.success).toBe(false);
    expect(useImport?.data).toBeNull();
  });
});

describe('loops over real HTTP', () => {
  it('sends one request per selected item, in order, with currentItem in the url', async () => {
    for (const id of ['u1', 'u2', 'u3']) target.route('GET', `/loop/seq/${id}`, { body: { id, seen: true } });
    const result = await run(
      {
        steps: [
          {
            id: 'each',
            dataSelector: '(s) => s.ids',
            config: { url: url('/loop/seq/<<currentItem>>') },
          },
        ],
      },
      { inputs: { ids: ['u1', 'u2', 'u3'] } },
    );
    expect(result.status).toBe('success');
    expect(target.requests.filter((r) => r.path.startsWith('/loop/seq/')).map((r) => r.path)).toEqual([
      '/loop/seq/u1',
      '/loop/seq/u2',
      '/loop/seq/u3',
    ]);
    expect(result.data).toEqual(
      ['u1', 'u2', 'u3'].map((id) => ({ currentItem: id, data: { id, seen: true }, success: true })),
    );
  });

  it('runs loopConcurrency items at once yet keeps the envelopes in item order', async () => {
    const held = new Map<string, ServerResponse>();
    target.route('GET', '/loop/concurrent', (req, res) => {
      const item = new URLSearchParams(req.query).get('item') ?? '?';
      held.set(item, res);
      return undefined;
    });
    const answer = (items: string[]) => {
      for (const item of items) {
        const res = held.get(item);
        held.delete(item);
        res?.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ item }));
      }
    };
    const items = ['a', 'b', 'c', 'd', 'e'];
    const running = run(
      {
        steps: [
          {
            id: 'each',
            dataSelector: '(s) => s.items',
            loopConcurrency: 3,
            config: { url: url('/loop/concurrent'), queryParams: { item: '<<currentItem>>' } },
          },
        ],
      },
      { inputs: { items } },
    );

    // Three requests are open at the server at the same time, and no fourth starts meanwhile.
    await expect.poll(() => held.size, { timeout: 10_000 }).toBe(3);
    expect([...held.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(target.count('/loop/concurrent')).toBe(3);

    // Answer in reverse order: completion order must not decide envelope order.
    answer(['c', 'b', 'a']);
    await expect.poll(() => held.size, { timeout: 10_000 }).toBe(2);
    expect([...held.keys()].sort()).toEqual(['d', 'e']);
    answer(['e', 'd']);

    const result = await running;
    expect(result.status).toBe('success');
    expect(target.count('/loop/concurrent')).toBe(5);
    expect(result.data).toEqual(items.map((item) => ({ currentItem: item, data: { item }, success: true })));
  });
});

describe('failed loop items in the step result', () => {
  /** `/loop/items/<n>` answers 404 for the ids in `missing`, else the item. */
  function itemsRoute(path: string, missing: ReadonlySet<number>) {
    target.route('GET', path, (req) => {
      const id = Number(new URLSearchParams(req.query).get('id'));
      return missing.has(id) ? { status: 404, body: { error: `item ${id} not found` } } : { body: { id } };
    });
  }

  it('counts the items and lists each failed one with its error when the loop goes on past them', async () => {
    itemsRoute('/loop/items', new Set([20, 30, 50]));
    const events: EngineEvent[] = [];
    const result = await runTool(engine.deps, {
      tool: Tool.parse({
        id: 'engine-http-test',
        steps: [
          {
            id: 'each',
            dataSelector: '() => [10, 20, 30, 40, 50]',
            failureBehavior: 'continue',
            loopConcurrency: 2,
            config: { url: url('/loop/items'), queryParams: { id: '<<currentItem>>' } },
          },
        ],
      }),
      inputs: {},
      systems: [],
      traceId: 'engine-http-test',
      signal: new AbortController().signal,
      onEvent: (event) => events.push(event),
    });
    expect(result.status).toBe('success');
    const notFound = (id: number) =>
      `HTTP 404 GET ${url(`/loop/items?id=${id}`)}: {"error":"item ${id} not found"}`;
    const loop = {
      items: 5,
      failed: 3,
      failedItems: [
        { index: 1, error: notFound(20) },
        { index: 2, error: notFound(30) },
        { index: 4, error: notFound(50) },
      ],
    };
    expect(result.stepResults[0]).toMatchObject({ stepId: 'each', success: true, loop });
    // The live event of the step's end carries the same account (the views show it while the run goes on).
    const finished = events.find((event) => event.type === 'step_finished');
    expect(finished?.type === 'step_finished' && finished.result.loop).toEqual(loop);
  });

  it('lists the first 100 failed items and counts them all', async () => {
    itemsRoute('/loop/many-missing', new Set(Array.from({ length: 150 }, (_, i) => i)));
    const result = await run({
      steps: [
        {
          id: 'each',
          dataSelector: '() => Array.from({ length: 160 }, (_, i) => i)',
          failureBehavior: 'continue',
          loopConcurrency: 8,
          config: { url: url('/loop/many-missing'), queryParams: { id: '<<currentItem>>' } },
        },
      ],
    });
    const loop = result.stepResults[0]?.loop;
    expect(loop).toMatchObject({ items: 160, failed: 150 });
    expect(loop?.failedItems.map((item) => item.index)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('counts the failed item that stopped a loop with failureBehavior fail', async () => {
    itemsRoute('/loop/stops', new Set([2]));
    const result = await run({
      steps: [
        {
          id: 'each',
          dataSelector: '() => [1, 2, 3]',
          config: { url: url('/loop/stops'), queryParams: { id: '<<currentItem>>' } },
        },
      ],
    });
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]).toMatchObject({
      success: false,
      error: `item 1: HTTP 404 GET ${url('/loop/stops?id=2')}: {"error":"item 2 not found"}`,
      loop: { items: 3, failed: 1, failedItems: [{ index: 1 }] },
    });
  });
});
