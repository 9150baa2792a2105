import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEngineSettings } from '../../../../config/config.ts';
import type { JsonValue } from '../../../../contract/json.ts';
import { sandboxOptions } from '../../../../engine/deps.ts';
import { Sandbox, SandboxError } from '../../../../engine/sandbox/sandbox.ts';
import { compileSelector } from '../../../../engine/sandbox/selector.ts';

const DEFAULTS = sandboxOptions(defaultEngineSettings());

/** What an evaluation answers, an error included (its kind and message). */
async function outcome(promise: Promise<JsonValue>): Promise<unknown> {
  try {
    return { value: await promise };
  } catch (error) {
    if (error instanceof SandboxError) return { error: error.kind, message: error.message };
    throw error;
  }
}

const DATA: JsonValue = {
  get: { data: { ok: true, name: 'Ada', n: 0, none: null, list: [1, 'two', null, { x: 3 }], '': 'empty' } },
  'content-type': 'application/json',
  text: 'héllo',
  toString: 'own toString',
  nested: { deep: { deeper: [[{ id: 7 }]] } },
};

/** Sources that are selectors, each with arguments that exercise its reads. */
const SELECTORS: [string, JsonValue[]][] = [
  ['(s) => s.get.data.ok', [DATA]],
  ['s => s.get.data.name', [DATA]],
  ['((s) => s.get.data)', [DATA]],
  ['(sourceData => sourceData.get)', [DATA]],
  ['(s) => (s.get.data.n);', [DATA]],
  ['(s) => s', [DATA]],
  ['(s) => s["content-type"]', [DATA]],
  ["(s) => s['get']['data']['']", [DATA]],
  ['(s) => s.get.data.list[3].x', [DATA]],
  ['(s) => s.get.data.list[9]', [DATA]],
  ['(s) => s.get.data.list.length', [DATA]],
  ['(s) => s.text.length', [DATA]],
  ['(s) => s.toString', [DATA]],
  ['(s) => s.__proto__', [JSON.parse('{"__proto__": "an own member, as JSON.parse makes it"}')]],
  ['(s) => s.missing', [DATA]],
  ['(s) => s.missing?.deeper.still', [DATA]],
  ['(s) => s.get.data.none?.x', [DATA]],
  ['(s) => s.nested?.["deep"].deeper[0][0].id', [DATA]],
  [
    '(s) => ({ ok: s.get.data.ok, name: s.get.data.name, gone: s.missing, "a b": [s.text, 1, "x", true, null] })',
    [DATA],
  ],
  [
    '(s) => ({ 2: s.get.data.n, 1: "one", b: { c: [s.get.data.list[0], { d: s.get.data.list[3] }] } })',
    [DATA],
  ],
  ['(s) => [s.missing, s.get?.data.list[2], s.nested.deep]', [DATA]],
  ['(s) => ({ a: 1, a: s.text, b: 2 })', [DATA]],
  ['(response, pageInfo, s) => pageInfo.page', [{ a: 1 }, { page: 3 }, DATA]],
  ['(a, b) => [a, b]', [1]],
  ['(s) => s.get.data.list.map((x) => x)', [DATA]],
  [
    '(s) => s.items.map((item) => ({ id: item.id, name: item.name, gone: item.missing }))',
    [{ items: [{ id: 1, name: 'a' }, { id: 2 }, {}] }],
  ],
  ['(s) => s.items.map(item => [item?.id, s.text])', [{ items: [{ id: 1 }, null, [], {}] }]],
  [
    '(s) => s.items.map((item, i, all) => ({ i, n: all.length, first: all[0], s: item.list?.map((x) => x.v) }))'.replace(
      '{ i,',
      '{ i: i,',
    ),
    [{ items: [{ list: [{ v: 1 }, { v: null }] }, { list: null }] }],
  ],
  ['(s) => s.items.map((s) => s.id)', [{ items: [{ id: 3 }, { id: 4 }] }]],
  ['(s) => s.none?.map((x) => x.id)', [{}]],
  [
    '(s) => ({ open: s.todos.data.map((t) => t.title) })',
    [{ todos: { data: [{ title: 'a' }, { title: 'b' }] } }],
  ],
  ['(s) => s.items.map((x) => x)', [{ items: [] }]],
  ['(s) => s.items', [{ items: [1, null, 2] }]],
  ['(s) => s.big', [{ big: 1e300 }]],
  ['(s) => s.zero', [JSON.parse('{"zero": -0}') as JsonValue]],
];

const NUMBERS: JsonValue = { a: 7, b: 2.5, c: 3, z: 0, s: 'ab', t: 'b', ok: true, no: false, none: null };

/** Selectors with operators on primitives, logical operators and conditionals (answered on the host too). */
const OPERATORS: [string, JsonValue[]][] = [
  ['(s) => ({ ok: s.get.data.ok === true })', [DATA]],
  ['(s) => [s.get.data.n !== 0, s.get.data.name === "Ada", s.get.data.none === null, s.a === s.b]', [DATA]],
  ['(s) => [!s.get.data.ok, !!s.get.data.name, !s.get.data.list, !s.missing, !s.get.data.n]', [DATA]],
  ['(s) => s.get.data.ok ? s.get.data.name : "none"', [DATA]],
  ['(s) => s.none === null ? 1 : s.a ? 2 : 3', [NUMBERS]],
  ['(s) => s.missing?.x ?? "default"', [DATA]],
  ['(s) => s.get.data.none ?? s.get.data.n ?? 1', [DATA]],
  [
    '(s) => [s.missing && s.missing.x, s.get.data.ok || s.missing.x, s.get.data.ok ? s.text : s.missing.x]',
    [DATA],
  ],
  ['(s) => (s.none || s.no) ?? s.a', [NUMBERS]],
  ['(s) => [s.a && s.b || s.c, s.no || s.z && s.a, s.a || s.missing.x && s.b]', [NUMBERS]],
  ['(s) => s.a - -s.b * 2 % 3 / 4 + 1', [NUMBERS]],
  ['(s) => [s.a - s.b - s.c, s.a / s.b / s.c, s.a % s.c, -s.a, - -s.b, -s.s, -s.none]', [NUMBERS]],
  ['(s) => s.s + s.t + "!" + s.a + s.ok + s.none + s.missing', [NUMBERS]],
  ['(s) => [s.a + s.ok, s.none + 1, s.missing + 1, s.s * 2, s.ok - s.no]', [NUMBERS]],
  [
    '(s) => [s.a < s.b, s.a <= s.c, s.a > s.b, s.c >= s.c, s.s < s.t, s.a < s.b < s.c, s.s < s.a, s.none < 1]',
    [NUMBERS],
  ],
  ['(s) => [s.a / s.z, s.z / s.z, -s.z, s.z * -1, { n: -s.z }]', [NUMBERS]],
  ['(s) => [s.missing === undefined, s.none === undefined, undefined, s.a]', [NUMBERS]],
  ['(s) => ({ n: s.items.length + 0, big: s.items.length > 1 })', [{ items: [1, 2, 3] }]],
  [
    '(s) => s.items.map((i) => ({ id: i.id, size: i.n > 1 ? "big" : "small", label: "#" + i.id, has: !!i.tags }))',
    [
      {
        items: [
          { id: 1, n: 2, tags: [] },
          { id: 2, n: 0 },
        ],
      },
    ],
  ],
  ['(s) => s.list && s.list.length > 2', [{ list: [1, 2, 3] }]],
  ['(s) => s.items.map((x) => x?.v ?? "none")', [{ items: [{ v: 1 }, null, {}] }]],
];

/** Sources whose arguments the host cannot settle: the isolate answers (often with an error). */
const UNSETTLED: [string, JsonValue[]][] = [
  ['(s) => s.missing.x', [DATA]],
  ['(s) => s.get.data.none.x', [DATA]],
  ['(s) => s.get.data.map', [{ get: { data: [] } }]],
  ['(s) => s.constructor', [DATA]],
  ['(s) => s.__proto__', [DATA]],
  ['(s) => s.get.data.list.map', [DATA]],
  ['(s) => s.get.data.ok.valueOf', [DATA]],
  ['(s) => s.get.data.n.toFixed', [DATA]],
  ['(s) => s.text[0]', [DATA]],
  ['(s) => s.hasOwnProperty', [DATA]],
  ['(a) => a.x', []],
  ['(s) => s.text.map((x) => x)', [DATA]],
  ['(s) => s.get.map((x) => x)', [DATA]],
  ['(s) => s.items.map((x) => x.a.b)', [{ items: [{ a: { b: 1 } }, {}] }]],
  ['(s) => s.items.map((x) => x.toString)', [{ items: [{}] }]],
  ['(s) => s.items.map((item) => item.id)', [{ items: [{ id: 1 }, null] }]],
  ['(s) => s.a + s.o', [{ a: 1, o: { x: 1 } }]],
  ['(s) => s.o + ""', [{ o: [1, 2] }]],
  ['(s) => s.o === s.o', [{ o: {} }]],
  ['(s) => s.o < 1', [{ o: [] }]],
  ['(s) => -s.o', [{ o: [2] }]],
  ['(s) => s.ok && s.missing.x', [{ ok: true }]],
  ['(s) => s.no ? 1 : s.missing.x', [{ no: 0 }]],
  ['(s) => s.items.map((x) => x) === s.items', [{ items: [] }]],
];

/** Sources that are not selectors: they run in the isolate. */
const NOT_SELECTORS = [
  '() => 42',
  '(s) => ({ a: [1, "x"] })',
  '(s) => s.a == 1',
  '(s) => s.a != 1',
  '(s) => s.a = 1',
  '(s) => s.a --1',
  '(s) => s.a ++ s.b',
  '(s) => s.a ** 2',
  '(s) => s.a ?? s.b || s.c',
  '(s) => s.a || s.b ?? s.c',
  '(s) => s.a && s.b ?? s.c',
  '(s) => s.a / /x/.source',
  '(s) => s.a / 2 // half',
  '(s) => typeof s.a',
  '(s) => s.a in s',
  '(s) => s.a instanceof Object',
  '(s) => s.a ? 1',
  '(s) => s.a ? 1 : 2 : 3',
  '(s) => s.a < < s.b',
  '(s) => s.a >> 1',
  '(s) => s.a & 1',
  '(s) => +s.a',
  '(s) => -(s.a)()',
  '(s) => s.a + 1 (s.b)',
  '(s) => { return s.a; }',
  '(s) => { a: s.a }',
  'async (s) => s.a',
  'function (s) { return s.a; }',
  '(s) => s.a // comment',
  '(s) => globalThis.x',
  '(s) => this.x',
  '(s) => s[s.key]',
  '(s) => s.a`t`',
  '(s) => s.a?.()',
  '(s) => ({ __proto__: s.a })',
  '(s) => ({ ...s })',
  '(s) => ({ s })',
  '(s) => [...s.a]',
  '(s) => [, s.a]',
  '(s) => -1',
  '(s) => s.a\\u0062',
  '(eval) => eval.a',
  '(s, s) => s.a',
  '(s) => s.a; s.b',
  '(s) => s.a) || (s.b',
  '(s) => s.a.map((x) => x).length',
  '(s) => s.a.map((x) => x)[0]',
  '(s) => s.a.map((x) => x).map((y) => y)',
  '(s) => s.a.map((x) => { return x; })',
  '(s) => s.a.map((x, i, a, b) => x)',
  '(s) => s.a.map(function (x) { return x; })',
  '(s) => s.a.map((x) => x, s)',
  '(s) => s.a.filter((x) => x)',
  '(s) => s.a.map((x) => y.b)',
];

describe('selectors answered on the host', () => {
  let host: Sandbox;
  let isolate: Sandbox;

  beforeAll(() => {
    host = new Sandbox(DEFAULTS);
    isolate = new Sandbox({ ...DEFAULTS, hostSelectors: false });
  });

  afterAll(() => {
    host.dispose();
    isolate.dispose();
  });

  it('answers every selector exactly as the isolate does', async () => {
    for (const [source, args] of SELECTORS) {
      expect(compileSelector(source)?.(args), source).toBeDefined();
      expect(await outcome(host.evaluate(source, args)), source).toEqual(
        await outcome(isolate.evaluate(source, args)),
      );
    }
  });

  it('answers operators on primitives, logical operators and conditionals exactly as the isolate does', async () => {
    for (const [source, args] of OPERATORS) {
      expect(compileSelector(source)?.(args), source).toBeDefined();
      expect(await outcome(host.evaluate(source, args)), source).toEqual(
        await outcome(isolate.evaluate(source, args)),
      );
    }
    expect(await host.evaluate('(s) => ({ ok: s.get.data.ok === true })', [DATA])).toEqual({ ok: true });
  });

  it('leaves to the isolate an answer that would take the host much memory or time', async () => {
    const big = 'x'.repeat(100_000);
    const items = Array.from({ length: 100 }, (_, id) => ({ id }));
    const repeated = '(s) => s.items.map((item) => s.big + item.id)';
    expect(compileSelector(repeated)?.([{ items, big }])).toBeUndefined();
    const answer = (await host.evaluate(repeated, [{ items, big }])) as string[];
    expect(answer).toHaveLength(100);
    expect(answer[99]).toBe(`${big}99`);
    const grid = Array.from({ length: 1100 }, (_, i) => i);
    const nested = '(s) => s.grid.map((x) => s.grid.map((y) => x < y))';
    expect(compileSelector(nested)?.([{ grid }])).toBeUndefined();
    expect(compileSelector(nested)?.([{ grid: grid.slice(0, 100) }])).toBeDefined();
  });

  it('leaves a source nested deeper than the host stack to the isolate, which answers it', async () => {
    for (const deep of [
      `(s) => ${'!'.repeat(100_000)}s.a`,
      `(s) => ${'['.repeat(100_000)}s.a${']'.repeat(100_000)}`,
    ]) {
      expect(compileSelector(deep)).toBeUndefined();
      expect(await outcome(host.evaluate(deep, [{ a: 1 }]))).toEqual(
        await outcome(isolate.evaluate(deep, [{ a: 1 }])),
      );
    }
  });

  it('leaves to the isolate the reads a prototype or a TypeError decides, with the same answer', async () => {
    for (const [source, args] of UNSETTLED) {
      expect(compileSelector(source)?.(args), source).toBeUndefined();
      expect(await outcome(host.evaluate(source, args)), source).toEqual(
        await outcome(isolate.evaluate(source, args)),
      );
    }
    const error = await outcome(host.evaluate('(s) => s.get.data.map', [{ get: { data: [] } }]));
    expect(error).toMatchObject({
      error: 'runtime',
      message: expect.stringMatching(/not JSON: it is a function/),
    });
  });

  it('runs everything else in the isolate', async () => {
    for (const source of NOT_SELECTORS) expect(compileSelector(source), source).toBeUndefined();
    expect(await host.evaluate('(s) => s.list.map((x) => x * 2)', [{ list: [1, 2] }])).toEqual([2, 4]);
  });

  it('reads the JSON image of the arguments: undefined members missing, undefined elements and NaN null', async () => {
    const args = [{ u: undefined, list: [undefined, Number.NaN, () => 1], n: Number.POSITIVE_INFINITY }];
    const source =
      '(s) => ({ u: s.u, list: s.list, first: s.list[0], nan: s.list[1], fn: s.list[2], n: s.n })';
    expect(compileSelector(source)?.(args as unknown as JsonValue[])).toEqual({
      value: { list: [null, null, null], first: null, nan: null, fn: null, n: null },
    });
    expect(await host.evaluate(source, args as unknown as JsonValue[])).toEqual(
      await isolate.evaluate(source, args as unknown as JsonValue[]),
    );
  });

  it('leaves a run’s selectors to its context once its code ran there: what the code changed counts', async () => {
    const run = host.openRun({ key: 'k', tool: 't' });
    try {
      expect(await run.evaluate('(s) => s.missing', [{}])).toBeNull();
      await run.evaluate(
        '() => { Object.prototype.missing = "inherited"; Object.prototype.toJSON = function () { return "replaced"; }; }',
        [],
      );
      expect(await run.evaluate('(s) => s.missing', [{}])).toBe('inherited');
      expect(await run.evaluate('(s) => ({ a: s.a })', [{ a: 1 }])).toBe('replaced');
    } finally {
      run.close();
    }
    const fresh = host.openRun({ key: 'k', tool: 't' });
    try {
      expect(await fresh.evaluate('(s) => ({ a: s.a, missing: s.missing })', [{ a: 1 }])).toEqual({ a: 1 });
    } finally {
      fresh.close();
    }
  });

  it('gives a copy: changing the result leaves the arguments alone', async () => {
    const args: JsonValue[] = [{ a: { b: [1] } }];
    const result = (await host.evaluate('(s) => s.a', args)) as { b: number[] };
    result.b.push(2);
    expect(args).toEqual([{ a: { b: [1] } }]);
  });

  it('answers a selector at once while the key’s endless loops hold every isolate it may use', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 1_000, keyConcurrency: 1, maxIsolates: 1 });
    try {
      const run = sandbox.openRun({ key: 'a', tool: 't' });
      const next = sandbox.openRun({ key: 'a', tool: 't' });
      const order: string[] = [];
      const loop = run.evaluate('() => { for (;;) {} }', []).catch(() => order.push('loop'));
      const selected = next.evaluate('(s) => s.get.data.ok', [DATA]).then((value) => {
        order.push('selector');
        return value;
      });
      expect(await selected).toBe(true);
      await loop;
      expect(order).toEqual(['selector', 'loop']);
      run.close();
      next.close();
    } finally {
      sandbox.dispose();
    }
  });
});
