import { describe, expect, it } from 'vitest';
import { Tool } from '../../../contract/api/tool.ts';
import type { JsonValue } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type {
  ConnectionCall,
  EngineDeps,
  EngineEvent,
  EngineRequest,
  HttpCall,
  ProtocolContext,
  Protocols,
} from '../../../engine/types.ts';
import { unsafeTestEvaluate } from '../../support/js-evaluator.ts';

type HttpHandler = (call: HttpCall, ctx: ProtocolContext) => JsonValue | Promise<JsonValue>;

/** In-memory protocol table: the engine's contract with protocols, not the protocols themselves. */
function protocols(http: HttpHandler) {
  const calls: HttpCall[] = [];
  const table: Protocols = {
    async http(call, ctx) {
      calls.push(call);
      return { status: 200, headers: {}, data: await http(call, ctx) };
    },
    postgres: async (call: ConnectionCall) => ({ url: call.url, body: call.body as JsonValue }),
    ftp: async (call: ConnectionCall) => ({ ftp: call.url }),
    sftp: async (call: ConnectionCall) => ({ sftp: call.url }),
    redis: async (call: ConnectionCall) => ({ redis: call.url }),
    mysql: async (call: ConnectionCall) => ({ mysql: call.url }),
    smb: async (call: ConnectionCall) => ({ smb: call.url }),
  };
  return { table, calls };
}

const echo: HttpHandler = (call) => ({
  url: call.url,
  headers: call.headers,
  query: call.query as JsonValue,
});

/** Runs `tool` on the in-memory protocols; `evaluate` and `openScope` stand in for the sandbox. */
async function run(
  tool: Record<string, unknown>,
  opts: Partial<Omit<EngineRequest, 'tool'>> &
    Partial<Pick<EngineDeps, 'evaluate' | 'openScope'>> & { http?: HttpHandler; maxLoopItems?: number } = {},
) {
  const { table, calls } = protocols(opts.http ?? echo);
  const events: EngineEvent[] = [];
  const result = await runTool(
    {
      evaluate: opts.evaluate ?? unsafeTestEvaluate,
      openScope: opts.openScope,
      protocols: table,
      limits: { maxLoopItems: opts.maxLoopItems ?? 10_000 },
    },
    {
      tool: Tool.parse(tool),
      inputs: opts.inputs ?? {},
      systems: opts.systems ?? [],
      runtimeCredentials: opts.runtimeCredentials,
      timeoutMs: opts.timeoutMs,
      ...(opts.untilStep !== undefined ? { untilStep: opts.untilStep } : {}),
      ...(opts.persistedState !== undefined ? { persistedState: opts.persistedState } : {}),
      ...(opts.reusedSteps !== undefined ? { reusedSteps: opts.reusedSteps } : {}),
      traceId: 'trace-1',
      signal: opts.signal ?? new AbortController().signal,
      onEvent: (e) => events.push(e),
    },
  );
  return { result, calls, events };
}

const STEP_KEYS = new Set(['dataSelector', 'failureBehavior', 'loopConcurrency', 'modify']);

/** A request step; step-level keys in `extra` go to the step, the rest to its config. */
const get = (id: string, url: string, extra: Record<string, unknown> = {}) => {
  const entries = Object.entries(extra);
  return {
    id,
    ...Object.fromEntries(entries.filter(([k]) => STEP_KEYS.has(k))),
    config: { url, ...Object.fromEntries(entries.filter(([k]) => !STEP_KEYS.has(k))) },
  };
};
const transform = (id: string, transformCode: string, extra: Record<string, unknown> = {}) => ({
  id,
  config: { type: 'transform', transformCode },
  ...extra,
});

const crm: ResolvedSystem = {
  id: 'crm',
  url: 'https://crm.example.test/api',
  authType: 'bearer',
  credentials: { bearerToken: 'crm-secret-token' },
};
const billing: ResolvedSystem = { id: 'billing', credentials: { apiKey: 'billing-secret-key' } };

describe('engine: sourceData', () => {
  it('puts the payload at the root and each step envelope under its id', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          get('first', 'https://x.test/<<city>>'),
          transform('second', '(s) => ({ seen: s.first, city: s.city })'),
        ],
      },
      { inputs: { city: 'Oslo' } },
    );
    expect(result.status).toBe('success');
    expect(result.data).toMatchObject({
      city: 'Oslo',
      seen: { currentItem: {}, success: true, data: { url: 'https://x.test/Oslo' } },
    });
  });

  it('shows a request step with a systemId only that system, other steps all systems', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          get('scoped', 'https://x.test/a', { systemId: 'crm' }),
          transform('all', '(s) => Object.keys(s).filter((k) => k.includes("_")).sort()'),
          transform('scopedKeys', '(s) => s.scoped.data.headers'),
        ],
        outputTransform:
          '(s) => ({ all: s.all.data, creds: s.credentials ?? null, crm: s.crm_bearerToken ?? null })',
      },
      { systems: [crm, billing] },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({
      all: ['billing_apiKey', 'crm_bearerToken', 'crm_url'],
      creds: null,
      crm: null,
    });
  });

  it('exposes system credentials as s_k, credentials[s][k] and credentials.s_k', async () => {
    const { calls } = await run(
      {
        id: 't',
        steps: [
          get(
            'a',
            'https://crm.example.test/api/<<crm_bearerToken>>/<<(s) => s.credentials.crm.bearerToken>>/<<(s) => s.credentials.crm_bearerToken>>',
          ),
        ],
      },
      { systems: [crm] },
    );
    // Credentials reach only a URL of the system's own origin (see 'engine: credential origins').
    expect(calls[0]?.url).toBe(
      'https://crm.example.test/api/crm-secret-token/crm-secret-token/crm-secret-token',
    );
  });

  it('lets runtime credentials override stored ones, flat or grouped by system', async () => {
    const billingWithUrl: ResolvedSystem = { ...billing, url: 'https://billing.example.test' };
    const { calls } = await run(
      {
        id: 't',
        steps: [
          get('a', 'https://crm.example.test/api/<<crm_bearerToken>>/<<extra>>'),
          get('b', 'https://billing.example.test/<<billing_apiKey>>'),
        ],
      },
      {
        systems: [crm, billingWithUrl],
        runtimeCredentials: {
          crm_bearerToken: 'runtime-crm',
          billing: { apiKey: 'runtime-billing' },
          extra: 'loose',
        },
      },
    );
    expect(calls.map((call) => call.url)).toEqual([
      'https://crm.example.test/api/runtime-crm/loose',
      'https://billing.example.test/runtime-billing',
    ]);
  });

  it('hides credentials from dataSelector and outputTransform', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          transform('t1', '(s) => 1', {
            dataSelector: '(s) => [s.crm_bearerToken ?? "none", typeof s.credentials]',
          }),
        ],
        outputTransform: '(s) => s.t1.map((e) => e.currentItem)',
      },
      { systems: [crm] },
    );
    expect(result.data).toEqual(['none', 'undefined']);
  });
});

describe('engine: envelopes and loops', () => {
  it('runs once with currentItem = the value when the selector returns a non-array', async () => {
    const { result } = await run({
      id: 't',
      steps: [transform('one', '(s) => s.currentItem * 2', { dataSelector: '() => 21' })],
      outputTransform: '(s) => s.one',
    });
    expect(result.data).toEqual({ currentItem: 21, data: 42, success: true });
  });

  it('runs once per array item in order and stores an envelope per item', async () => {
    const { result, calls } = await run({
      id: 't',
      steps: [
        get('each', 'https://x.test/users/<<(s) => s.currentItem.id>>', {
          dataSelector: '() => [{id: 1}, {id: 2}, {id: 3}]',
        }),
      ],
      outputTransform: '(s) => s.each.map((e) => [e.currentItem.id, e.success, e.data.url])',
    });
    expect(calls.map((c) => c.url)).toEqual([
      'https://x.test/users/1',
      'https://x.test/users/2',
      'https://x.test/users/3',
    ]);
    expect(result.data).toEqual([
      [1, true, 'https://x.test/users/1'],
      [2, true, 'https://x.test/users/2'],
      [3, true, 'https://x.test/users/3'],
    ]);
  });

  it('treats an empty selection as success with data [] and makes no calls', async () => {
    const { result, calls } = await run({
      id: 't',
      steps: [get('each', 'https://x.test/a', { dataSelector: '() => []' })],
    });
    expect(calls).toHaveLength(0);
    expect(result.status).toBe('success');
    expect(result.stepResults[0]).toEqual({
      stepId: 'each',
      success: true,
      data: [],
      loop: { items: 0, failed: 0, failedItems: [] },
    });
  });

  it('fails the step when the selector returns more than maxLoopItems, never truncating', async () => {
    const { result, calls } = await run(
      { id: 't', steps: [get('each', 'https://x.test/a', { dataSelector: '() => [1, 2, 3, 4]' })] },
      { maxLoopItems: 3 },
    );
    expect(calls).toHaveLength(0);
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Step each failed: dataSelector returned 4 items; the limit is 3');
  });

  it('stops at the first failing item when failureBehavior is fail', async () => {
    const { result, calls } = await run(
      {
        id: 't',
        steps: [
          get('each', 'https://x.test/<<currentItem>>', { dataSelector: '() => [1, 2, 3]' }),
          get('after', 'https://x.test/after'),
        ],
      },
      {
        http: (call) => {
          if (call.url.endsWith('/2')) throw new Error('boom on 2');
          return 'ok';
        },
      },
    );
    expect(calls.map((c) => c.url)).toEqual(['https://x.test/1', 'https://x.test/2']);
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Step each failed: item 1: boom on 2');
  });

  it('runs every item with continue, marks failed items and counts the step as successful', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          {
            ...get('each', 'https://x.test/<<currentItem>>', { dataSelector: '() => [1, 2, 3]' }),
            failureBehavior: 'continue',
          },
        ],
        outputTransform: '(s) => s.each.map((e) => ({ ok: e.success, error: e.error ?? null }))',
      },
      {
        http: (call) => {
          if (call.url.endsWith('/2')) throw new Error('boom on 2');
          return 'ok';
        },
      },
    );
    expect(result.status).toBe('success');
    expect(result.stepResults[0]?.success).toBe(true);
    expect(result.data).toEqual([
      { ok: true, error: null },
      { ok: false, error: 'boom on 2' },
      { ok: true, error: null },
    ]);
  });

  it('keeps item order with loopConcurrency above 1', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          {
            ...get('each', 'https://x.test/<<currentItem>>', { dataSelector: '() => [30, 10, 20, 0]' }),
            loopConcurrency: 4,
          },
        ],
        outputTransform: '(s) => s.each.map((e) => e.data)',
      },
      {
        http: async (call) => {
          const ms = Number(call.url.split('/').pop());
          await new Promise((r) => setTimeout(r, ms));
          return ms;
        },
      },
    );
    expect(result.data).toEqual([30, 10, 20, 0]);
  });

  it('gives a failed step with continue an envelope later steps can branch on', async () => {
    const { result } = await run(
      {
        id: 't',
        steps: [
          { ...get('flaky', 'https://x.test/down'), failureBehavior: 'continue' },
          transform('branch', '(s) => s.flaky.success ? "used flaky" : "fallback: " + s.flaky.error'),
        ],
      },
      {
        http: () => {
          throw new Error('HTTP 503 GET https://x.test/down: unavailable');
        },
      },
    );
    expect(result.status).toBe('success');
    expect(result.stepResults[0]).toEqual({
      stepId: 'flaky',
      success: false,
      data: null,
      error: 'HTTP 503 GET https://x.test/down: unavailable',
    });
    expect(result.data).toBe('fallback: HTTP 503 GET https://x.test/down: unavailable');
  });

  it('stops the run on a failing step with failureBehavior fail and says which step', async () => {
    const { result, calls } = await run({
      id: 't',
      steps: [transform('bad', '(s) => { throw new Error("nope") }'), get('never', 'https://x.test')],
    });
    expect(calls).toHaveLength(0);
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Step bad failed: nope');
    expect(result.stepResults).toHaveLength(1);
  });
});

describe('engine: reused steps (a resumed run)', () => {
  const tool = {
    id: 'resumable',
    steps: [
      get('list', 'https://api.test/list'),
      get('each', 'https://api.test/item/<<currentItem>>', { dataSelector: '(s) => s.list.data.ids' }),
      transform('sum', "(s) => s.each.map((e) => e.data.url).join(',') + '|' + s.list.data.ids.length"),
    ],
  };
  const answers: HttpHandler = (call): JsonValue =>
    call.url.endsWith('/list') ? { ids: [1, 2] } : { url: call.url };

  it("executes none of them and gives their data, a loop's envelopes included, to the steps after", async () => {
    const first = await run(tool, { http: answers });
    expect(first.result.status).toBe('success');
    const reusedSteps = first.result.stepResults
      .slice(0, 2)
      .map((result) => ({ ...result, reusedFrom: 'run-0' }));
    const again = await run(tool, {
      http: () => {
        throw new Error('a reused step was executed');
      },
      reusedSteps,
    });
    expect(again.calls).toEqual([]);
    expect(again.result).toMatchObject({ status: 'success', data: first.result.data });
    expect(again.result.stepResults.map((r) => [r.stepId, r.reusedFrom])).toEqual([
      ['list', 'run-0'],
      ['each', 'run-0'],
      ['sum', undefined],
    ]);
    expect(again.result.stepResults[1]?.loop).toEqual(first.result.stepResults[1]?.loop);
    expect(again.events.filter((e) => e.type === 'step_started').map((e) => e.stepId)).toEqual(['sum']);
    expect(again.events.filter((e) => e.type === 'step_finished').map((e) => e.result.stepId)).toEqual([
      'list',
      'each',
      'sum',
    ]);
  });

  it('fails the run when the reused results are not those of the first steps', async () => {
    const { result } = await run(tool, {
      http: answers,
      reusedSteps: [{ stepId: 'each', success: true, data: [], reusedFrom: 'run-0' }],
    });
    expect(result).toMatchObject({
      status: 'failed',
      error: "The reused result of step each is not the tool's step 1",
    });
  });
});

describe('engine: output', () => {
  it('returns the last step data without an outputTransform', async () => {
    const { result } = await run({
      id: 't',
      steps: [transform('a', '() => ({ n: 1 })'), transform('b', '() => [1, 2]')],
    });
    expect(result.data).toEqual([1, 2]);
  });

  it('fails the run with the JSON pointers that do not match outputSchema', async () => {
    const { result } = await run({
      id: 't',
      steps: [transform('a', '() => ({ count: "three", items: [1] })')],
      outputSchema: {
        type: 'object',
        properties: { count: { type: 'number' }, items: { type: 'array', items: { type: 'string' } } },
      },
    });
    expect(result.status).toBe('failed');
    expect(result.error).toContain('/count must be number');
    expect(result.error).toContain('/items/0 must be string');
  });

  it('turns __files__ of the output transform into file artifacts and removes the key', async () => {
    const { result } = await run({
      id: 't',
      steps: [transform('a', '() => 1')],
      outputTransform:
        '() => ({ ok: true, __files__: { "report.csv": "a,b\\n1,2\\n", "logo.bin": { content: "AAEC", encoding: "base64", contentType: "image/x-test" } } })',
    });
    expect(result.data).toEqual({ ok: true });
    expect(result.files).toEqual([
      {
        fileKey: 'report.csv',
        filename: 'report.csv',
        contentType: 'text/csv',
        size: 8,
        contentBase64: Buffer.from('a,b\n1,2\n').toString('base64'),
      },
      {
        fileKey: 'logo.bin',
        filename: 'logo.bin',
        contentType: 'image/x-test',
        size: 3,
        contentBase64: 'AAEC',
      },
    ]);
  });

  it('treats a skipped marker as ordinary successful data', async () => {
    const { result } = await run({
      id: 't',
      steps: [transform('a', '() => 1')],
      outputTransform: '() => ({ skipped: true, reason: "not our event" })',
    });
    expect(result).toMatchObject({ status: 'success', data: { skipped: true, reason: 'not our event' } });
  });
});

describe('engine: requests', () => {
  it('resolves a URL without scheme against the system base URL and adds its auth', async () => {
    const { calls } = await run(
      { id: 't', steps: [get('a', '/users', { systemId: 'crm', headers: { Accept: 'application/json' } })] },
      { systems: [crm] },
    );
    expect(calls[0]).toMatchObject({
      url: 'https://crm.example.test/api/users',
      headers: { Accept: 'application/json', Authorization: 'Bearer crm-secret-token' },
    });
  });

  it('lets a step header win over the system auth', async () => {
    const { calls } = await run(
      { id: 't', steps: [get('a', '/users', { systemId: 'crm', headers: { authorization: 'Token mine' } })] },
      { systems: [crm] },
    );
    expect(calls[0]?.headers).toEqual({ authorization: 'Token mine' });
  });

  it('retries only modify:false steps or idempotent methods', async () => {
    const { calls } = await run({
      id: 't',
      steps: [
        get('read', 'https://x.test/a', { method: 'POST' }),
        { ...get('write', 'https://x.test/b', { method: 'POST' }), modify: true },
        { ...get('put', 'https://x.test/c', { method: 'PUT' }), modify: true },
      ],
    });
    expect(calls.map((c) => c.retry)).toEqual([true, false, true]);
  });

  it('sends no body on GET and renders a JSON body leaf by leaf', async () => {
    const { calls } = await run(
      {
        id: 't',
        steps: [
          get('g', 'https://x.test/a', { body: '{"x": 1}' }),
          get('p', 'https://x.test/b', { method: 'POST', body: { n: '<<n>>', label: 'n=<<n>>' } }),
        ],
      },
      { inputs: { n: 5 } },
    );
    expect(calls[0]?.body).toBeUndefined();
    expect(calls[1]?.body).toEqual({ n: 5, label: 'n=5' });
  });

  it('routes postgres, ftp and sftp URLs to their protocols and refuses unknown schemes', async () => {
    const { result } = await run({
      id: 't',
      steps: [
        get('pg', 'postgres://db.test/app', { method: 'POST', body: '{"query": "select 1"}' }),
        get('f', 'ftps://files.test/in', { method: 'POST', body: '{"operation": "list", "path": "."}' }),
        get('s', 'sftp://files.test/in', { method: 'POST', body: '{"operation": "list", "path": "."}' }),
        get('x', 'gopher://old.test/', { failureBehavior: 'continue' }),
      ],
    });
    expect(result.stepResults.map((r) => r.data)).toEqual([
      { url: 'postgres://db.test/app', body: { query: 'select 1' } },
      { ftp: 'ftps://files.test/in' },
      { sftp: 'sftp://files.test/in' },
      null,
    ]);
    expect(result.stepResults[3]?.error).toMatch(/unsupported URL scheme 'gopher:'/);
  });

  it('fetches pages with <<page>> in the URL until a short page and emits page events', async () => {
    const { result, calls, events } = await run(
      {
        id: 't',
        steps: [
          get('list', 'https://x.test/items?p=<<page>>', {
            pagination: { type: 'pageBased', pageSize: '2' },
          }),
        ],
      },
      {
        http: (call) => {
          const page = Number(new URL(call.url).searchParams.get('p'));
          return page < 3 ? [page * 10, page * 10 + 1] : [page * 10];
        },
      },
    );
    expect(calls.map((c) => c.url)).toEqual([
      'https://x.test/items?p=1',
      'https://x.test/items?p=2',
      'https://x.test/items?p=3',
    ]);
    expect(result.data).toEqual([10, 11, 20, 21, 30]);
    expect(events.filter((e) => e.type === 'page_fetched')).toHaveLength(3);
  });

  it('counts the items of object pages ({items, next_cursor}) in its page events', async () => {
    const pages: Record<string, { items: number[]; next_cursor: string | null }> = {
      start: { items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], next_cursor: 'b' },
      b: { items: [11, 12, 13, 14, 15, 16, 17, 18, 19, 20], next_cursor: 'c' },
      c: { items: [21, 22, 23], next_cursor: null },
    };
    const { result, events } = await run(
      {
        id: 't',
        steps: [
          get('list', 'https://x.test/items?cursor=<<cursor>>', {
            pagination: { type: 'cursorBased', pageSize: '10', cursorPath: 'next_cursor' },
          }),
        ],
      },
      {
        http: (call) => {
          const cursor = new URL(call.url).searchParams.get('cursor');
          return pages[cursor && cursor !== 'null' ? cursor : 'start'] ?? { items: [] };
        },
      },
    );
    expect(result.stepResults[0]?.success).toBe(true);
    const counts = events.flatMap((e) => (e.type === 'page_fetched' ? [[e.page, e.totalFetched]] : []));
    expect(counts.map(([, total]) => total)).toEqual([10, 20, 23]);
  });
});

describe('engine: redaction, deadline, cancellation', () => {
  it('never returns a credential value in errors, step data or events', async () => {
    const { result, events } = await run(
      {
        id: 't',
        steps: [
          get('leak', 'https://crm.example.test/<<crm_bearerToken>>', {
            systemId: 'crm',
            failureBehavior: 'continue',
          }),
          transform('echo', '(s) => ({ token: s.crm_bearerToken, runtime: s.credentials.extra })'),
        ],
      },
      {
        // codeAccess: the transform may read the system's token (and its result is still redacted).
        systems: [{ ...crm, codeAccess: true }],
        runtimeCredentials: { extra: 'runtime-only-secret' },
        http: (call) => {
          throw new Error(`HTTP 401 GET ${call.url}: bad token ${call.headers.Authorization}`);
        },
      },
    );
    const everything = JSON.stringify({ result, events });
    expect(everything).not.toContain('crm-secret-token');
    expect(everything).not.toContain('runtime-only-secret');
    expect(result.stepResults[0]?.error).toBe(
      'HTTP 401 GET https://crm.example.test/<<crm_bearerToken>>: bad token Bearer <<crm_bearerToken>>',
    );
    expect(result.data).toEqual({ token: '<<crm_bearerToken>>', runtime: '<<extra>>' });
  });

  it('fails a run that outlives options.timeout and aborts the call in flight', async () => {
    let aborted = false;
    const { result } = await run(
      { id: 't', steps: [get('slow', 'https://x.test/slow'), get('never', 'https://x.test/never')] },
      {
        timeoutMs: 50,
        http: (_call, ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => {
              aborted = true;
              reject(new Error('request aborted'));
            });
          }),
      },
    );
    expect(aborted).toBe(true);
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Run timed out after 50 ms');
  });

  it('times out a run whose step failed at the deadline before the run timer fired, even with failureBehavior continue', async () => {
    const { result } = await run(
      { id: 't', steps: [get('slow', 'https://x.test/slow', { failureBehavior: 'continue' })] },
      {
        timeoutMs: 30,
        // The request's own deadline timer fires first: the run's timer has not run yet when it fails.
        http: () => {
          const end = Date.now() + 40;
          while (Date.now() < end) {}
          throw new Error('HTTP GET https://x.test/slow timed out: the run deadline was reached');
        },
      },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Run timed out after 30 ms');
  });

  it('stops between steps when cancelled and reports aborted', async () => {
    const controller = new AbortController();
    const { result, calls } = await run(
      { id: 't', steps: [get('first', 'https://x.test/1'), get('second', 'https://x.test/2')] },
      {
        signal: controller.signal,
        http: () => {
          controller.abort();
          return 'first done';
        },
      },
    );
    expect(calls).toHaveLength(1);
    expect(result.status).toBe('aborted');
    expect(result.error).toBe('Run was cancelled');
  });

  it('stops a loop between items when cancelled', async () => {
    const controller = new AbortController();
    const { result, calls } = await run(
      {
        id: 't',
        steps: [
          get('each', 'https://x.test/<<currentItem>>', {
            dataSelector: '() => [1, 2, 3, 4]',
            failureBehavior: 'continue',
          }),
        ],
      },
      {
        signal: controller.signal,
        http: (call) => {
          if (call.url.endsWith('/2')) controller.abort();
          return 'ok';
        },
      },
    );
    expect(calls).toHaveLength(2);
    expect(result.status).toBe('aborted');
  });
});

describe('engine: events', () => {
  it('emits started and finished per step in order', async () => {
    const { events } = await run({ id: 't', steps: [transform('a', '() => 1'), transform('b', '() => 2')] });
    expect(events).toEqual([
      { type: 'step_started', stepId: 'a' },
      { type: 'step_finished', result: { stepId: 'a', success: true, data: 1 } },
      { type: 'step_started', stepId: 'b' },
      { type: 'step_finished', result: { stepId: 'b', success: true, data: 2 } },
    ]);
  });
});

describe('evaluations that need no sandbox', () => {
  const noSandbox = () => Promise.reject(new Error('the sandbox was called'));

  it.each(['(sourceData) => sourceData', 'x => x', '(s) => (s);', 'function (data) { return data; }'])(
    'answers the identity transform %s without the sandbox',
    async (code) => {
      const { result } = await run(
        { id: 't', steps: [transform('same', code)], outputTransform: code },
        { evaluate: noSandbox, inputs: { list: [1, { a: 'b' }] } },
      );
      expect(result.status).toBe('success');
      expect(result.stepResults[0]?.data).toMatchObject({ list: [1, { a: 'b' }], currentItem: {} });
      expect(result.data).toEqual({
        list: [1, { a: 'b' }],
        same: { currentItem: {}, data: result.stepResults[0]?.data, success: true },
      });
    },
  );

  it('sends every other source to the sandbox', async () => {
    const { result } = await run(
      { id: 't', steps: [transform('other', '(s) => s.list')] },
      { evaluate: noSandbox, inputs: { list: [1] } },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain('the sandbox was called');
  });

  it('opens one evaluation scope per run and closes it when the run ends', async () => {
    const scopes: string[] = [];
    let opened = 0;
    const openScope = () => {
      const id = `scope-${opened++}`;
      scopes.push(`${id} open`);
      return { evaluate: unsafeTestEvaluate, close: () => scopes.push(`${id} closed`) };
    };
    for (let i = 0; i < 2; i++) {
      const { result } = await run(
        { id: 't', steps: [transform('a', '(s) => s.n + 1'), transform('b', '(s) => s.a.data * 2')] },
        { evaluate: noSandbox, openScope, inputs: { n: i } },
      );
      expect(result).toMatchObject({ status: 'success', data: (i + 1) * 2 });
    }
    expect(scopes).toEqual(['scope-0 open', 'scope-0 closed', 'scope-1 open', 'scope-1 closed']);
  });
});

describe('engine: a try up to a step (untilStep)', () => {
  it('stops after the step, skips the output transform, and returns the next step’s sourceData without any credential', async () => {
    const { result, calls } = await run(
      {
        id: 't',
        steps: [
          get('who', 'https://crm.example.test/api/me', { systemId: 'crm' }),
          // codeAccess: this transform reads the token; what it returns is redacted like everything else.
          transform('leak', '(s) => ({ token: s.crm_bearerToken, runtime: s.credentials.extra })'),
          transform('next', '(s) => s'),
          get('never', 'https://crm.example.test/api/never', { systemId: 'crm' }),
        ],
        outputTransform: '(s) => { throw new Error("the output transform ran"); }',
      },
      {
        untilStep: 'leak',
        inputs: { region: 'eu' },
        systems: [{ ...crm, codeAccess: true }],
        runtimeCredentials: { extra: 'runtime-only-secret' },
        persistedState: { cursor: 3 },
      },
    );
    expect(result.status).toBe('success');
    expect(result.stepResults.map((step) => step.stepId)).toEqual(['who', 'leak']);
    expect(calls.map((call) => call.url)).toEqual(['https://crm.example.test/api/me']);
    expect(result.data).toEqual({ token: '<<crm_bearerToken>>', runtime: '<<extra>>' });
    expect(result.until?.stepId).toBe('leak');
    expect(result.until?.nextStepId).toBe('next');
    // Inputs, the finished steps by id, the state: not the transform's view of the credentials.
    expect(Object.keys(result.until?.sourceData ?? {})).toEqual(['region', 'who', 'leak', 'persistedState']);
    expect(result.until?.sourceData.leak).toEqual({
      currentItem: {},
      data: { token: '<<crm_bearerToken>>', runtime: '<<extra>>' },
      success: true,
    });
    expect(result.until?.sourceData.persistedState).toEqual({ cursor: 3 });
    const everything = JSON.stringify(result);
    expect(everything).not.toContain('crm-secret-token');
    expect(everything).not.toContain('runtime-only-secret');
  });

  it('stops after a step that failed with failureBehavior continue, which sourceData shows failed', async () => {
    const { result, calls } = await run(
      {
        id: 't',
        steps: [
          get('down', 'https://x.test/down', { failureBehavior: 'continue' }),
          get('after', 'https://x.test/after'),
        ],
      },
      {
        untilStep: 'down',
        http: () => {
          throw new Error('HTTP 503');
        },
      },
    );
    expect(result.status).toBe('success');
    expect(calls).toHaveLength(1);
    expect(result.until).toMatchObject({
      stepId: 'down',
      nextStepId: 'after',
      sourceData: { down: { success: false, error: 'HTTP 503', data: null } },
    });
  });

  it('runs every step and the output transform without untilStep, and answers no until', async () => {
    const { result } = await run(
      { id: 't', steps: [transform('a', '() => 1')], outputTransform: '(s) => s.a.data + 1' },
      {},
    );
    expect(result.data).toBe(2);
    expect(result.until).toBeUndefined();
  });
});
