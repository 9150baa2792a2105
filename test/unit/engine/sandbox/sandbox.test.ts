import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEngineSettings } from '../../../../config/config.ts';
import type { JsonValue } from '../../../../contract/json.ts';
import { sandboxOptions } from '../../../../engine/deps.ts';
import {
  checkSource,
  Sandbox,
  SandboxError,
  type SandboxErrorKind,
} from '../../../../engine/sandbox/sandbox.ts';

/** The sandbox as a role runs it without any variable set. */
const DEFAULTS = sandboxOptions(defaultEngineSettings());
const LABEL = 'step fetchUsers transformCode';

async function failure(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SandboxError) return error;
    throw new Error(`expected a SandboxError, got ${String(error)}`);
  }
  throw new Error('expected the evaluation to fail');
}

async function expectKind(promise: Promise<unknown>, kind: SandboxErrorKind): Promise<SandboxError> {
  const error = await failure(promise);
  expect(error.kind, error.message).toBe(kind);
  return error;
}

describe('Sandbox.evaluate', () => {
  let sandbox: Sandbox;

  beforeAll(() => {
    sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000 });
  });

  afterAll(() => {
    sandbox.dispose();
  });

  describe('results', () => {
    it('calls the function with the arguments and returns its result', async () => {
      expect(await sandbox.evaluate('(sourceData) => sourceData.a + 1', [{ a: 41 }])).toBe(42);
      expect(await sandbox.evaluate('function (a, b, c) { return [c, b, a]; }', [1, 'two', null])).toEqual([
        null,
        'two',
        1,
      ]);
    });

    it('round-trips JSON values unchanged', async () => {
      const value: JsonValue = {
        text: 'héllo \u2028 😀 "quoted" \\ E',
        numbers: [0, -1.5, 1e21, Number.MAX_SAFE_INTEGER],
        flags: [true, false],
        nothing: null,
        nested: { list: [{ id: 1, tags: ['a', 'b'] }, []], empty: {} },
      };
      expect(await sandbox.evaluate('(s) => s', [value])).toEqual(value);
      expect(await sandbox.evaluate('() => "E"', [])).toBe('E');
    });

    it('gives the function a copy: changing its arguments leaves the caller’s data alone', async () => {
      const input = { items: [1, 2, 3] };
      expect(await sandbox.evaluate('(s) => { s.items.push(4); return s.items.length; }', [input])).toBe(4);
      expect(input.items).toEqual([1, 2, 3]);
    });

    it('awaits async functions and returned promises', async () => {
      expect(await sandbox.evaluate('async (s) => { await null; return s.x * 2; }', [{ x: 21 }])).toBe(42);
      expect(await sandbox.evaluate('(s) => Promise.resolve(s).then((v) => v.x)', [{ x: 'ok' }])).toBe('ok');
    });

    it('returns undefined as null and applies JSON semantics to dates and undefined members', async () => {
      expect(await sandbox.evaluate('() => undefined', [])).toBeNull();
      expect(await sandbox.evaluate('async () => {}', [])).toBeNull();
      expect(
        await sandbox.evaluate('() => ({ a: undefined, at: new Date(0), list: [undefined, NaN] })', []),
      ).toEqual({
        at: '1970-01-01T00:00:00.000Z',
        list: [null, null],
      });
    });

    it('tolerates a trailing semicolon and a trailing line comment', async () => {
      expect(await sandbox.evaluate('(s) => s.a;', [{ a: 1 }])).toBe(1);
      expect(await sandbox.evaluate('(s) => s.a // the answer', [{ a: 2 }])).toBe(2);
    });

    it('rejects results that are not JSON with the path of the offending value', async () => {
      const fn = await expectKind(
        sandbox.evaluate('() => ({ ok: 1, nested: { run: () => 1 } })', []),
        'runtime',
      );
      expect(fn.message).toContain('the result is not JSON: it contains a function at $.nested.run');
      const map = await expectKind(sandbox.evaluate('() => [1, new Map()]', []), 'runtime');
      expect(map.message).toContain('a Map object at $[1]');
      const pending = await expectKind(
        sandbox.evaluate('(s) => s.items.map(async (x) => x)', [{ items: [1] }]),
        'runtime',
      );
      expect(pending.message).toContain('a Promise');
      const top = await expectKind(sandbox.evaluate('() => () => 1', []), 'runtime');
      expect(top.message).toContain('the result is not JSON: it is a function');
    });
  });

  describe('errors', () => {
    it('reports compile errors with the label, line and column', async () => {
      const error = await expectKind(
        sandbox.evaluate('(sourceData) => {\n  let x = ;\n  return x;\n}', [{}], { label: LABEL }),
        'compile',
      );
      expect(error.message).toBe(`${LABEL}: SyntaxError at line 2, column 11: Unexpected token ';'`);
      expect([error.line, error.column, error.label]).toEqual([2, 11, LABEL]);
    });

    it('rejects a source that does not evaluate to a function as a compile error', async () => {
      const error = await expectKind(sandbox.evaluate('42', [], { label: LABEL }), 'compile');
      expect(error.message).toContain(LABEL);
      expect(error.message).toContain('must be a function expression');
      expect(error.message).toContain('a number');
    });

    it('reports runtime errors with the thrown message, line and column', async () => {
      const source = '(s) => {\n  const users = s.users;\n  return users.length;\n}';
      const error = await expectKind(sandbox.evaluate(source, [{}], { label: LABEL }), 'runtime');
      expect(error.message).toBe(
        `${LABEL}: TypeError at line 3, column 16: Cannot read properties of undefined (reading 'length')`,
      );
      expect([error.line, error.column]).toEqual([3, 16]);
    });

    it('carries the message of thrown non-Error values and of rejected promises', async () => {
      const thrown = await expectKind(
        sandbox.evaluate('() => { throw "boom"; }', [], { label: LABEL }),
        'runtime',
      );
      expect(thrown.message).toBe(`${LABEL}: Uncaught boom`);
      const object = await expectKind(sandbox.evaluate('() => { throw { code: 42 }; }', []), 'runtime');
      expect(object.message).toBe('Uncaught {"code":42}');
      const rejected = await expectKind(
        sandbox.evaluate('async () => {\n  await null;\n  throw new RangeError("too far");\n}', []),
        'runtime',
      );
      expect(rejected.message).toBe('RangeError at line 3, column 9: too far');
    });

    it('reports runaway recursion as a runtime error', async () => {
      const error = await expectKind(
        sandbox.evaluate('() => { const f = () => f(); return f(); }', []),
        'runtime',
      );
      expect(error.message).toContain('Maximum call stack size exceeded');
    });
  });

  describe('limits', () => {
    it('stops an infinite loop at the timeout and serves the next call', async () => {
      const error = await expectKind(
        sandbox.evaluate('() => { while (true) {} }', [], { timeoutMs: 300, label: LABEL }),
        'timeout',
      );
      expect(error.message).toBe(`${LABEL}: timed out after 300 ms`);
      expect(await sandbox.evaluate('(s) => s.n', [{ n: 7 }])).toBe(7);
    });

    it('never lets a call raise the timeout above the sandbox limit', async () => {
      const strict = new Sandbox({ ...DEFAULTS, timeoutMs: 200 });
      try {
        const error = await expectKind(
          strict.evaluate('() => { for (;;) {} }', [], { timeoutMs: 600_000 }),
          'timeout',
        );
        expect(error.message).toBe('timed out after 200 ms');
      } finally {
        strict.dispose();
      }
    });

    it('stops a loop that starts after an await', async () => {
      await expectKind(
        sandbox.evaluate('async () => { await null; for (;;) {} }', [], { timeoutMs: 300 }),
        'timeout',
      );
      expect(await sandbox.evaluate('() => "still serving"', [])).toBe('still serving');
    });

    it('stops a returned promise that never settles and serves the next call', async () => {
      const error = await expectKind(
        sandbox.evaluate('() => new Promise(() => {})', [], { timeoutMs: 200, label: LABEL }),
        'timeout',
      );
      expect(error.message).toContain('did not settle');
      expect(await sandbox.evaluate('async (s) => s.ok', [{ ok: true }])).toBe(true);
    });

    it('fails an evaluation that has no time left without running it', async () => {
      await expectKind(sandbox.evaluate('() => 1', [], { timeoutMs: 0 }), 'timeout');
    });

    it('kills an isolate that allocates past the memory limit, reports it, and keeps serving', async () => {
      const small = new Sandbox({ ...DEFAULTS, memoryLimitMb: 32, timeoutMs: 60_000 });
      try {
        const hostHeapBefore = process.memoryUsage().heapUsed;
        const bomb = '() => { const parts = []; for (;;) parts.push("x".repeat(1 << 20) + parts.length); }';
        const error = await expectKind(small.evaluate(bomb, [], { label: LABEL }), 'memory');
        expect(error.message).toBe(`${LABEL}: exceeded the memory limit of 32 MB`);
        expect(await small.evaluate('(s) => s.after', [{ after: 'bomb' }])).toBe('bomb');
        // The host (API/test) process is unaffected: its heap did not absorb the sandbox's allocation.
        expect(process.memoryUsage().heapUsed - hostHeapBefore).toBeLessThan(32 * 1024 * 1024);
      } finally {
        small.dispose();
      }
    });

    it('refuses the WebAssembly memory that escaped the memory limit, with a clear error', async () => {
      // Issue 19: 256 MB of WebAssembly memory, fully touched, got through a 128 MB limit.
      const touch = `() => {
        const memory = new WebAssembly.Memory({ initial: 4096 });
        const bytes = new Uint8Array(memory.buffer);
        for (let i = 0; i < bytes.length; i += 4096) bytes[i] = 1;
        return bytes.length;
      }`;
      const error = await expectKind(sandbox.evaluate(touch, [], { label: LABEL }), 'runtime');
      expect(error.message).toBe(
        `${LABEL}: ReferenceError at line 2, column 24: WebAssembly is not defined ` +
          '(WebAssembly is not available in the sandbox: its memory would escape the memory limit)',
      );
      expect(await sandbox.evaluate('(s) => s.still', [{ still: 'serving' }])).toBe('serving');
    });

    it('leaves user code no way back to WebAssembly', async () => {
      const probe = `() => ({
        global: typeof WebAssembly,
        viaGlobalThis: typeof globalThis.WebAssembly,
        viaFunction: typeof Function('return this')().WebAssembly,
        viaIndirectEval: (0, eval)('typeof WebAssembly'),
        viaConstructor: typeof (() => {}).constructor('return this')().WebAssembly,
        viaPrototypeChain: Object.getOwnPropertyNames(Object.getPrototypeOf(globalThis)).includes('WebAssembly'),
        inGlobals: Reflect.ownKeys(globalThis).includes('WebAssembly'),
      })`;
      expect(await sandbox.evaluate(probe, [])).toEqual({
        global: 'undefined',
        viaGlobalThis: 'undefined',
        viaFunction: 'undefined',
        viaIndirectEval: 'undefined',
        viaConstructor: 'undefined',
        viaPrototypeChain: false,
        inGlobals: false,
      });
    });

    it('refuses resizable and growable buffers (their memory escaped the limit too), however reached', async () => {
      const probe = `() => {
        const big = { maxByteLength: 512 * 1024 * 1024 };
        const attempts = {
          arrayBuffer: () => new ArrayBuffer(256 * 1024 * 1024, big),
          resized: () => new ArrayBuffer(0, big).resize(256 * 1024 * 1024),
          shared: () => new SharedArrayBuffer(0, big).grow(256 * 1024 * 1024),
          viaPrototype: () => new (Object.getPrototypeOf(new Uint8Array(1).buffer).constructor)(0, big),
          viaConstructorProperty: () => new (new Uint8Array(1).buffer.constructor)(0, big),
          viaSubclass: () => new (class extends ArrayBuffer {})(0, big),
          viaReflect: () => Reflect.construct(SharedArrayBuffer, [0, big]),
          viaGlobal: () => new (Function('return this')().ArrayBuffer)(0, big),
        };
        const outcome = {};
        for (const [name, attempt] of Object.entries(attempts)) {
          try {
            attempt();
            outcome[name] = 'allocated';
          } catch (error) {
            outcome[name] = error.name + ': ' + error.message;
          }
        }
        return outcome;
      }`;
      const refused = (name: string) =>
        `RangeError: resizable ${name}s (maxByteLength) are not available in the sandbox: their memory would escape its memory limit`;
      expect(await sandbox.evaluate(probe, [])).toEqual({
        arrayBuffer: refused('ArrayBuffer'),
        resized: refused('ArrayBuffer'),
        shared: refused('SharedArrayBuffer'),
        viaPrototype: refused('ArrayBuffer'),
        viaConstructorProperty: refused('ArrayBuffer'),
        viaSubclass: refused('ArrayBuffer'),
        viaReflect: refused('SharedArrayBuffer'),
        viaGlobal: refused('ArrayBuffer'),
      });
    });

    it('keeps fixed-length buffers working as before', async () => {
      const probe = `() => {
        const buffer = new ArrayBuffer(8, {});
        const view = new Uint8Array(buffer);
        view[0] = 7;
        class Tagged extends ArrayBuffer {}
        return {
          length: buffer.byteLength,
          resizable: buffer.resizable,
          instance: buffer instanceof ArrayBuffer && view.buffer instanceof ArrayBuffer,
          sameConstructor: view.buffer.constructor === ArrayBuffer,
          isView: ArrayBuffer.isView(view),
          slice: new Uint8Array(buffer.slice(0, 1))[0],
          sliceInstance: buffer.slice(0, 1) instanceof ArrayBuffer,
          subclass: new Tagged(4) instanceof ArrayBuffer,
          shared: new SharedArrayBuffer(4).byteLength,
          name: ArrayBuffer.name,
          notCallable: (() => { try { ArrayBuffer(1); return 'called'; } catch (e) { return e.name; } })(),
        };
      }`;
      expect(await sandbox.evaluate(probe, [])).toEqual({
        length: 8,
        resizable: false,
        instance: true,
        sameConstructor: true,
        isView: true,
        slice: 7,
        sliceInstance: true,
        subclass: true,
        shared: 4,
        name: 'ArrayBuffer',
        notCallable: 'TypeError',
      });
    });

    it('reports a refused ArrayBuffer allocation as a memory error', async () => {
      const error = await expectKind(
        sandbox.evaluate('() => new ArrayBuffer(2 ** 31).byteLength', []),
        'memory',
      );
      expect(error.message).toContain('Array buffer allocation failed');
    });
  });

  describe('abort', () => {
    it('stops a running evaluation when the signal aborts and keeps serving', async () => {
      const controller = new AbortController();
      const running = sandbox.evaluate('() => { for (;;) {} }', [], {
        signal: controller.signal,
        label: LABEL,
      });
      setTimeout(() => controller.abort(), 100);
      const error = await expectKind(running, 'aborted');
      expect(error.message).toBe(`${LABEL}: aborted`);
      expect(await sandbox.evaluate('() => "after abort"', [])).toBe('after abort');
    });

    it('rejects at once when the signal has already aborted', async () => {
      await expectKind(sandbox.evaluate('() => 1', [], { signal: AbortSignal.abort() }), 'aborted');
    });

    it('drops a queued evaluation whose signal aborts before it starts', async () => {
      const single = new Sandbox({ ...DEFAULTS, maxIsolates: 1, timeoutMs: 5_000 });
      try {
        const settled: string[] = [];
        const blocker = single.evaluate('() => { for (;;) {} }', [], { timeoutMs: 300 });
        const controller = new AbortController();
        const queued = single.evaluate('() => 1', [], { signal: controller.signal });
        blocker.catch(() => settled.push('blocker'));
        queued.catch(() => settled.push('queued'));
        controller.abort();
        await expectKind(queued, 'aborted');
        await expectKind(blocker, 'timeout');
        // The queued call did not wait for the isolate to become free.
        expect(settled).toEqual(['queued', 'blocker']);
      } finally {
        single.dispose();
      }
    });
  });

  describe('isolation', () => {
    it('exposes no host objects', async () => {
      const probe = `() => ({
        require: typeof require,
        process: typeof process,
        fetch: typeof fetch,
        setTimeout: typeof setTimeout,
        setInterval: typeof setInterval,
        queueMicrotask: typeof queueMicrotask,
        Buffer: typeof Buffer,
        module: typeof module,
        globalProcess: typeof globalThis.process,
        viaFunction: Function('return typeof process')(),
        viaConstructor: (() => {}).constructor('return typeof require')(),
        viaEval: eval('typeof fetch'),
        globals: Object.keys(globalThis),
      })`;
      expect(await sandbox.evaluate(probe, [])).toEqual({
        require: 'undefined',
        process: 'undefined',
        fetch: 'undefined',
        setTimeout: 'undefined',
        setInterval: 'undefined',
        queueMicrotask: 'undefined',
        Buffer: 'undefined',
        module: 'undefined',
        globalProcess: 'undefined',
        viaFunction: 'undefined',
        viaConstructor: 'undefined',
        viaEval: 'undefined',
        globals: [],
      });
    });

    it('fails when user code calls require or process', async () => {
      const required = await expectKind(sandbox.evaluate('() => require("fs")', []), 'runtime');
      expect(required.message).toContain('require is not defined');
      const exited = await expectKind(sandbox.evaluate('() => process.exit(1)', []), 'runtime');
      expect(exited.message).toContain('process is not defined');
      const fetched = await expectKind(
        sandbox.evaluate('async () => fetch("http://example.com")', []),
        'runtime',
      );
      expect(fetched.message).toContain('fetch is not defined');
    });

    it('provides console methods that do nothing', async () => {
      expect(
        await sandbox.evaluate('() => { console.log("hidden"); console.error(1); return "done"; }', []),
      ).toBe('done');
    });

    it('starts every evaluation in a fresh context: globals and prototypes do not leak', async () => {
      const pollute = `() => {
        globalThis.leaked = 'secret';
        counter = 1;
        Array.prototype.map = () => 'hijacked';
        Object.prototype.polluted = true;
        JSON.parse = () => 'hijacked';
        return 'polluted';
      }`;
      expect(await sandbox.evaluate(pollute, [])).toBe('polluted');
      const inspect = `(s) => ({
        leaked: typeof leaked,
        counter: typeof counter,
        map: s.list.map((x) => x * 2),
        polluted: ({}).polluted === undefined,
        parse: JSON.parse('[1]'),
      })`;
      expect(await sandbox.evaluate(inspect, [{ list: [1, 2] }])).toEqual({
        leaked: 'undefined',
        counter: 'undefined',
        map: [2, 4],
        polluted: true,
        parse: [1],
      });
    });

    it('keeps overlapping evaluations apart', async () => {
      const calls = Array.from({ length: 60 }, (_, i) => {
        if (i % 10 === 3) {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a JavaScript source for the sandbox
          return failure(sandbox.evaluate('(s) => { throw new Error(`bad ${s.i}`); }', [{ i }])).then(
            (e) => e.message,
          );
        }
        if (i === 17) {
          return failure(sandbox.evaluate('() => { for (;;) {} }', [], { timeoutMs: 200 })).then(
            (e) => e.kind,
          );
        }
        return sandbox.evaluate('async (s) => { globalThis.mine ??= s.i; await null; return [s.i, mine]; }', [
          { i },
        ]);
      });
      const results = await Promise.all(calls);
      results.forEach((result, i) => {
        if (i % 10 === 3) expect(result).toBe(`Error at line 1, column 16: bad ${i}`);
        else if (i === 17) expect(result).toBe('timeout');
        else expect(result).toEqual([i, i]);
      });
    });
  });
});

describe('Sandbox.evaluate with guarded properties', () => {
  let sandbox: Sandbox;
  const guarded = [
    { path: ['credentials', 'crm', 'apiKey'], message: 'credential crm_apiKey is not available to code' },
    { path: ['crm_apiKey'], message: 'credential crm_apiKey is not available to code' },
  ];

  beforeAll(() => {
    sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000 });
  });

  afterAll(() => {
    sandbox.dispose();
  });

  it('shows the names, and throws the message to code that reads one or reads every value', async () => {
    expect(
      await sandbox.evaluate(
        '(s) => [Object.keys(s).sort(), Object.keys(s.credentials.crm), "apiKey" in s.credentials.crm]',
        [{ other: 1, credentials: {} }],
        { guarded },
      ),
    ).toEqual([['credentials', 'crm_apiKey', 'other'], ['apiKey'], true]);
    for (const source of [
      '(s) => s.crm_apiKey',
      '(s) => JSON.stringify(s.credentials)',
      '(s) => ({ ...s })',
      '(s) => Object.values(s.credentials.crm)',
      '(s) => s.credentials',
    ]) {
      const error = await expectKind(sandbox.evaluate(source, [{ credentials: {} }], { guarded }), 'runtime');
      expect(error.detail, source).toBe('credential crm_apiKey is not available to code');
    }
  });

  it('lets code assign its own value, and leaves a path through a non-object alone', async () => {
    expect(
      await sandbox.evaluate('(s) => { s.crm_apiKey = "mine"; return s.crm_apiKey; }', [{}], { guarded }),
    ).toBe('mine');
    expect(
      await sandbox.evaluate('(s) => s.credentials', [{ credentials: 'text' }], {
        guarded: [{ path: ['credentials', 'crm', 'apiKey'], message: 'no' }],
      }),
    ).toBe('text');
  });
});

describe('Sandbox.check', () => {
  let sandbox: Sandbox;

  beforeAll(() => {
    sandbox = new Sandbox(DEFAULTS);
  });

  afterAll(() => {
    sandbox.dispose();
  });

  it('accepts the function forms user code comes in', () => {
    for (const source of [
      '(sourceData) => sourceData.items.length',
      's => s.a',
      'async (s) => { const r = await Promise.resolve(s); return r; }',
      'function (response, pageInfo, sourceData) { return pageInfo.page > 3; }',
      'async function stop(r) { return !r.data.next; }',
      '((s) => s)',
      '(s) => s.x;',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a JavaScript source for the sandbox
      '/* leading comment */ (s) => `${s.a}/${s.b}`',
    ]) {
      expect(sandbox.check(source), source).toEqual({ ok: true });
    }
  });

  it('rejects syntax errors with the label, line and column', () => {
    const result = sandbox.check('(s) => {\n  return s..x;\n}', LABEL);
    expect(result).toEqual({
      ok: false,
      message: `${LABEL}: SyntaxError at line 2, column 12: Unexpected token '.'`,
      line: 2,
      column: 12,
    });
    const words = sandbox.check('foo bar');
    expect(words).toMatchObject({ ok: false, line: 1, column: 5 });
  });

  it('rejects sources that are not a function expression', () => {
    for (const source of ['42', 's.items', '(s) => s, 5', '(() => 1)()', 'class {}', '']) {
      const result = sandbox.check(source, LABEL);
      expect(result.ok, source).toBe(false);
      if (!result.ok) expect(result.message).toContain(`${LABEL}: the source must be a function expression`);
    }
  });

  it('is available without a Sandbox for processes that never evaluate', () => {
    expect(checkSource('(s) => s.items')).toEqual({ ok: true });
    expect(checkSource('s.items', 'tool outputTransform')).toMatchObject({
      ok: false,
      message: expect.stringContaining('tool outputTransform: the source must be a function expression'),
    });
  });

  it('runs nothing while checking', () => {
    expect(sandbox.check('(() => { for (;;) {} })()').ok).toBe(false);
    expect(sandbox.check('(s) => { for (;;) {} }')).toEqual({ ok: true });
  });
});

describe('Sandbox.dispose', () => {
  it('fails running and queued evaluations and refuses new ones', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, maxIsolates: 1 });
    const running = sandbox.evaluate('() => { for (;;) {} }', []);
    const queued = sandbox.evaluate('() => 1', []);
    await new Promise((resolve) => setTimeout(resolve, 50));
    sandbox.dispose();
    await expectKind(running, 'aborted');
    await expectKind(queued, 'aborted');
    await expectKind(sandbox.evaluate('() => 1', []), 'aborted');
  });
});

describe('Sandbox: sharing the isolates between API keys', () => {
  it('runs another key’s evaluation while one key’s endless loops hold all that key may use', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 1_000, keyConcurrency: 2 });
    try {
      const order: string[] = [];
      const hog = Array.from({ length: 2 }, () => sandbox.openRun({ key: 'a', tool: 'spin' }));
      const spinning = hog.flatMap((run, i) =>
        [0, 1].map((j) => run.evaluate('() => { for (;;) {} }', []).catch(() => order.push(`a${i}.${j}`))),
      );
      const other = sandbox.openRun({ key: 'b', tool: 'quick' });
      const quick = other.evaluate('(s) => s.n + 1', [{ n: 41 }]).then((value) => {
        order.push('b');
        return value;
      });
      expect(await quick).toBe(42);
      await Promise.all(spinning);
      // b's evaluation did not wait behind any of a's four.
      expect(order[0]).toBe('b');
      for (const run of [...hog, other]) run.close();
    } finally {
      sandbox.dispose();
    }
  });

  it('lets a key use no more than keyConcurrency isolates: its third evaluation waits', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 1_000, keyConcurrency: 2, maxIsolates: 4 });
    try {
      const order: string[] = [];
      const run = sandbox.openRun({ key: 'a', tool: 't' });
      const loops = [0, 1].map((i) =>
        run.evaluate('() => { for (;;) {} }', []).catch(() => order.push(`loop${i}`)),
      );
      const third = run.evaluate('() => 3', []).then(() => order.push('third'));
      await Promise.all([...loops, third]);
      expect(order.indexOf('third')).toBeGreaterThan(
        Math.min(order.indexOf('loop0'), order.indexOf('loop1')),
      );
      run.close();
    } finally {
      sandbox.dispose();
    }
  });
});

describe('Sandbox.openRun', () => {
  let sandbox: Sandbox;

  beforeAll(() => {
    sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000, memoryLimitMb: 32 });
  });

  afterAll(() => {
    sandbox.dispose();
  });

  const remember =
    '(s) => { globalThis.seen = (globalThis.seen ?? []).concat(s.n); return globalThis.seen; }';

  it("shares one context between a run's evaluations: a global set by one is seen by the next", async () => {
    const run = sandbox.openRun();
    try {
      expect(await run.evaluate(remember, [{ n: 1 }])).toEqual([1]);
      expect(await run.evaluate(remember, [{ n: 2 }])).toEqual([1, 2]);
      expect(await run.evaluate('() => typeof seen', [])).toBe('object');
    } finally {
      run.close();
    }
  });

  it('never shows a global of one run to another run, even while both are open', async () => {
    const first = sandbox.openRun();
    const second = sandbox.openRun();
    try {
      await first.evaluate(
        '() => { globalThis.secret = "first"; Array.prototype.map = () => "hijacked"; }',
        [],
      );
      expect(
        await second.evaluate('(s) => [typeof secret, s.list.map((x) => x * 2)]', [{ list: [1] }]),
      ).toEqual(['undefined', [2]]);
      expect(await first.evaluate('() => secret', [])).toBe('first');
    } finally {
      first.close();
      second.close();
    }
  });

  it('gives each evaluation outside a run, and a run after it closed, a fresh context', async () => {
    const run = sandbox.openRun();
    await run.evaluate('() => { globalThis.kept = 1; }', []);
    run.close();
    expect(await run.evaluate('() => typeof kept', [])).toBe('undefined');
    expect(await sandbox.evaluate('() => typeof kept', [])).toBe('undefined');
  });

  it('gives the same results from a script compiled once, across evaluations and runs', async () => {
    const source = '(s) => s.items.map((item) => item.id * 2)';
    const results: JsonValue[] = [];
    for (let r = 0; r < 3; r++) {
      const run = sandbox.openRun();
      try {
        for (let i = 0; i < 3; i++)
          results.push(await run.evaluate(source, [{ items: [{ id: r }, { id: i }] }]));
      } finally {
        run.close();
      }
    }
    expect(results).toEqual([
      [0, 0],
      [0, 2],
      [0, 4],
      [2, 0],
      [2, 2],
      [2, 4],
      [4, 0],
      [4, 2],
      [4, 4],
    ]);
  });

  it("keeps the driver's own intrinsics for a run's later evaluations when user code replaces them", async () => {
    const run = sandbox.openRun();
    try {
      await run.evaluate('() => { JSON.parse = () => "hijacked"; JSON.stringify = () => "hijacked"; }', []);
      expect(await run.evaluate('(s) => ({ doubled: s.n * 2 })', [{ n: 21 }])).toEqual({ doubled: 42 });
    } finally {
      run.close();
    }
  });

  it("applies the timeout to each of a run's evaluations and keeps the run's context after it", async () => {
    const run = sandbox.openRun();
    try {
      await run.evaluate('() => { globalThis.before = "kept"; }', []);
      await expectKind(run.evaluate('() => { for (;;) {} }', [], { timeoutMs: 200 }), 'timeout');
      expect(await run.evaluate('() => before', [])).toBe('kept');
    } finally {
      run.close();
    }
  });

  it('goes on after its isolate passed the memory limit, in a new context', async () => {
    const run = sandbox.openRun();
    try {
      await run.evaluate('() => { globalThis.before = "lost"; }', []);
      const bomb = '() => { const a = []; for (;;) a.push("x".repeat(1024 * 1024) + a.length); }';
      // The limit, not the clock, must stop it, however loaded the machine is.
      await expectKind(run.evaluate(bomb, [], { timeoutMs: 25_000 }), 'memory');
      expect(await run.evaluate('(s) => [s.after, typeof before]', [{ after: 'bomb' }])).toEqual([
        'bomb',
        'undefined',
      ]);
    } finally {
      run.close();
    }
  });
});

describe('Sandbox.trim', () => {
  it('replaces the isolates of a busy period once nothing is open, and evaluates on afterwards', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000, memoryLimitMb: 32, maxIsolates: 2 });
    try {
      // Two evaluations at once: the second isolate is created for the second one.
      const slow = '(s) => { const until = Date.now() + 50; while (Date.now() < until); return s.n * 2; }';
      expect(
        await Promise.all([sandbox.evaluate(slow, [{ n: 1 }]), sandbox.evaluate(slow, [{ n: 2 }])]),
      ).toEqual([2, 4]);
      expect(sandbox.trim()).toBe(2);
      expect(await sandbox.evaluate('(s) => s.n + 1', [{ n: 41 }])).toBe(42);
    } finally {
      sandbox.dispose();
    }
  });

  it('leaves the isolates alone while a run is open: its context and globals survive', async () => {
    const sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000, memoryLimitMb: 32 });
    try {
      const run = sandbox.openRun();
      await run.evaluate('() => { globalThis.kept = 7; return null; }', []);
      expect(sandbox.trim()).toBe(0);
      expect(await run.evaluate('() => globalThis.kept', [])).toBe(7);
      run.close();
      expect(sandbox.trim()).toBe(1);
      const next = sandbox.openRun();
      expect(await next.evaluate('() => globalThis.kept ?? null', [])).toBe(null);
      next.close();
    } finally {
      sandbox.dispose();
    }
  });
});

describe('Sandbox.evaluate with a captured property', () => {
  let sandbox: Sandbox;
  beforeAll(() => {
    sandbox = new Sandbox({ ...DEFAULTS, timeoutMs: 5_000 });
  });
  afterAll(() => sandbox.dispose());
  const capture = 'persistedState';

  it('answers the result with the property as the call left it: changed keys, a new object, async', async () => {
    const changed = '(s) => { s.persistedState.cursor = "c2"; delete s.persistedState.old; return 1; }';
    expect(
      await sandbox.evaluate(changed, [{ persistedState: { cursor: 'c1', old: true } }], { capture }),
    ).toEqual([1, { cursor: 'c2' }]);
    const replaced = 'async (s) => { await null; s.persistedState = { fresh: [1] }; return null; }';
    expect(await sandbox.evaluate(replaced, [{ persistedState: {} }], { capture })).toEqual([
      null,
      { fresh: [1] },
    ]);
    expect(
      await sandbox.evaluate('(s) => { delete s.persistedState; return 2; }', [{ persistedState: {} }], {
        capture,
      }),
    ).toEqual([2, null]);
  });

  it('works with guarded properties, and without capture answers the result alone', async () => {
    const guarded = [{ path: ['secret'], message: 'no' }];
    expect(
      await sandbox.evaluate('(s) => { s.persistedState.n = 1; return 0; }', [{ persistedState: {} }], {
        guarded,
        capture,
      }),
    ).toEqual([0, { n: 1 }]);
    expect(
      await sandbox.evaluate('(s) => { s.persistedState.n = 1; return 0; }', [{ persistedState: {} }]),
    ).toBe(0);
  });

  it('fails when the property is not JSON, naming it', async () => {
    const error = await expectKind(
      sandbox.evaluate('(s) => { s.persistedState.f = () => 1; return 0; }', [{ persistedState: {} }], {
        capture,
      }),
      'runtime',
    );
    expect(error.message).toContain('sourceData.persistedState is not JSON: it contains a function at $.f');
  });
});
