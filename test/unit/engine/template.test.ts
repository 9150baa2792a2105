import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../contract/json.ts';
import {
  compileTemplate,
  type Evaluate,
  listExpressions,
  listExpressionsInValue,
  renderBody,
  renderHeaders,
  renderQuery,
  renderString,
  renderValue,
  TemplateError,
} from '../../../engine/template.ts';
import { renderStepUrl as renderUrl } from '../../../engine/url-template.ts';

/**
 * TEST-ONLY stand-in for the isolated-vm sandbox: runs the (trusted, test-authored) function
 * source in-process with `new Function`. Never use this outside tests.
 */
const testEvaluate: Evaluate = async (source, args) => {
  const fn = new Function(`return (${source}\n);`)() as (...values: JsonValue[]) => unknown;
  return (await fn(...args)) as JsonValue | undefined;
};

/** Records the sources it was asked to run, then delegates to the test evaluator. */
function recordingEvaluate(): { evaluate: Evaluate; calls: Array<{ source: string; args: JsonValue[] }> } {
  const calls: Array<{ source: string; args: JsonValue[] }> = [];
  return {
    calls,
    evaluate: async (source, args) => {
      calls.push({ source, args });
      return testEvaluate(source, args);
    },
  };
}

const noEvaluate: Evaluate = async () => {
  throw new Error('evaluate must not be called');
};

async function render(text: string, sourceData: JsonObject): Promise<string> {
  return renderString(text, sourceData, testEvaluate);
}

describe('template scanner', () => {
  it('splits text into literal parts and expressions', () => {
    const template = compileTemplate('a <<x>> b <<(s) => s.y>> c');
    expect(template.parts).toEqual([
      { kind: 'text', text: 'a ' },
      { kind: 'name', name: 'x', position: 2 },
      { kind: 'text', text: ' b ' },
      { kind: 'function', source: '(s) => s.y', position: 10 },
      { kind: 'text', text: ' c' },
    ]);
    expect(template.single).toBeNull();
  });

  it('parses once and returns the cached template for the same text', () => {
    expect(compileTemplate('cached <<a>>')).toBe(compileTemplate('cached <<a>>'));
  });

  it('does not end an expression at a shift inside brackets', async () => {
    expect(await render('<<(s) => (s.n >> 1)>>', { n: 8 })).toBe('4');
    expect(await render('<<(s) => { return s.n >> 2; }>>', { n: 8 })).toBe('2');
    expect(await render('<<(s) => s.list.map((x) => x >> 1)>>!', { list: [4, 6] })).toBe('[2,3]!');
  });

  // The template texts below are JavaScript source on purpose, `${}` included.
  it('does not end an expression at >> inside single, double or template-literal quotes', async () => {
    expect(await render("<<(s) => '>>' + s.a>>", { a: 'x' })).toBe('>>x');
    expect(await render('<<(s) => ">>" + s.a>>', { a: 'x' })).toBe('>>x');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source inside a template
    expect(await render('<<(s) => `>>${s.a}>>`>>', { a: 'x' })).toBe('>>x>>');
  });

  it('follows placeholder nesting inside template literals', async () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source inside a template
    const text = '<<(s) => `a${s.list.map((x) => `<${x}>>`).join("")}b`>>';
    expect(await render(text, { list: [1, 2] })).toBe('a<1>><2>>b');
  });

  it('skips quotes inside comments and regex literals', async () => {
    expect(await render("<<(s) => /* don't >> */ s.a>>", { a: 'ok' })).toBe('ok');
    expect(await render("<<(s) => {\n// it's >> fine\nreturn s.a; }>>", { a: 'ok' })).toBe('ok');
    expect(await render(`<<(s) => s.a.replace(/['">]/g, '')>>`, { a: `x'"y>` })).toBe('xy');
  });

  it('ends an expression at a top-level >> (a top-level shift must be parenthesised)', () => {
    const template = compileTemplate('<<(s) => s.n >> 1>>');
    expect(template.parts[0]).toEqual({ kind: 'function', source: '(s) => s.n', position: 0 });
    expect(template.parts[1]).toEqual({ kind: 'text', text: ' 1>>' });
  });

  it('treats \\<< as a literal <<', async () => {
    expect(await render('a \\<<b>> c <<x>>', { x: 1 })).toBe('a <<b>> c 1');
    expect(listExpressions('\\<<not an expression>>')).toEqual([]);
  });

  it('fails on an unterminated << with its position', () => {
    expect(() => compileTemplate('abc <<name')).toThrow(
      "Unterminated template expression: '<<' at position 4 has no matching '>>'",
    );
    try {
      compileTemplate('0123<<(s) => "x>>');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TemplateError);
      expect((error as TemplateError).position).toBe(4);
      expect((error as TemplateError).code).toBe('syntax');
      expect((error as TemplateError).message).toContain('unclosed string');
    }
  });

  it('rejects an expression that is neither a name nor a function', () => {
    expect(() => compileTemplate('<<a + 1>>')).toThrow(/neither a key name nor a function/);
    expect(() => compileTemplate('x <<  >>')).toThrow("Empty template expression '<<>>' at position 2");
  });

  it('lists expressions for save-time validation', () => {
    expect(listExpressions('<<a>>/<<async (s) => s.b>>/<<function (s) { return 1; }>>')).toEqual([
      { kind: 'name', name: 'a', position: 0 },
      { kind: 'function', source: 'async (s) => s.b', position: 6 },
      { kind: 'function', source: 'function (s) { return 1; }', position: 27 },
    ]);
    expect(listExpressionsInValue({ a: ['<<x>>', { b: '<<(s) => 1>>' }], n: 1 })).toEqual([
      { kind: 'name', name: 'x', position: 0 },
      { kind: 'function', source: '(s) => 1', position: 0 },
    ]);
  });
});

describe('template expressions', () => {
  it('<<name>> reads the top-level key of sourceData', async () => {
    expect(await renderString('id=<<userId>>', { userId: 'u1' }, noEvaluate)).toBe('id=u1');
    expect(await renderString('<< userId >>', { userId: 'u1' }, noEvaluate)).toBe('u1');
    expect(await renderString('<<get-users>>', { 'get-users': 'step' }, noEvaluate)).toBe('step');
  });

  it('<<name>> reads own properties only', async () => {
    await expect(renderString('<<toString>>', { a: 1 }, noEvaluate)).rejects.toThrow(
      "Template variable 'toString' is not defined; available keys: a",
    );
    await expect(renderString('<<constructor>>', {}, noEvaluate)).rejects.toThrow(
      "Template variable 'constructor' is not defined",
    );
  });

  it('dotted names are not paths: <<a.b>> reads the key "a.b"', async () => {
    expect(await renderString('<<a.b>>', { 'a.b': 'flat', a: { b: 'nested' } }, noEvaluate)).toBe('flat');
    await expect(renderString('<<a.b>>', { a: { b: 'nested' } }, noEvaluate)).rejects.toThrow(
      "Template variable 'a.b' is not defined; available keys: a",
    );
  });

  it('evaluates arrow, async arrow and function forms with sourceData', async () => {
    const { evaluate, calls } = recordingEvaluate();
    const sourceData = { a: 2 };
    expect(await renderString('<<(sourceData) => sourceData.a * 10>>', sourceData, evaluate)).toBe('20');
    expect(await renderString('<<async (s) => s.a + 1>>', sourceData, evaluate)).toBe('3');
    expect(await renderString('<<function (s) { return s.a - 1; }>>', sourceData, evaluate)).toBe('1');
    expect(await renderString('<<async function (s) { return s.a; }>>', sourceData, evaluate)).toBe('2');
    expect(await renderString('<<s => s.a>>', sourceData, evaluate)).toBe('2');
    expect(calls.map((call) => call.args)).toEqual(Array(5).fill([sourceData]));
    expect(calls[0]!.source).toBe('(sourceData) => sourceData.a * 10');
  });

  it('renders undefined from an expression as null', async () => {
    expect(await render('v=<<(s) => s.missing>>', {})).toBe('v=null');
    expect(await renderValue('<<(s) => undefined>>', {}, testEvaluate)).toBeNull();
  });

  it('renders strings as is, numbers and booleans with String(), objects, arrays and null as JSON', async () => {
    const sourceData = { s: 'text "q"', n: 1.5, t: true, f: false, o: { a: [1] }, arr: [1, 'x'], z: null };
    expect(await render('<<s>>|<<n>>|<<t>>|<<f>>|<<o>>|<<arr>>|<<z>>', sourceData)).toBe(
      'text "q"|1.5|true|false|{"a":[1]}|[1,"x"]|null',
    );
  });

  it('fails on an unresolved name listing the sorted available keys', async () => {
    await expect(renderString('<<x>>', { c: 1, a: 2, b: 3 }, noEvaluate)).rejects.toThrow(
      new TemplateError(
        'undefined-variable',
        "Template variable 'x' is not defined; available keys: a, b, c",
        0,
      ),
    );
  });

  it('lists credential keys by name only, never their values', async () => {
    const sourceData = {
      github_token: 'ghp_SECRET1',
      credentials: { github: { token: 'ghp_SECRET1' }, github_token: 'ghp_SECRET1' },
      userId: 'u1',
    };
    const failure = renderString('<<github_tokn>>', sourceData, noEvaluate);
    await expect(failure).rejects.toThrow(
      "Template variable 'github_tokn' is not defined; available keys: credentials, github_token, userId",
    );
    await expect(failure).rejects.not.toThrow(/SECRET/);
  });

  it('never scans substituted text again', async () => {
    const sourceData = { note: 'hi <<secret>> and <<(s) => s.secret>>', secret: 'S3CRET' };
    expect(await render('<<note>>', sourceData)).toBe('hi <<secret>> and <<(s) => s.secret>>');
    expect(await render('<<(s) => "<<" + "secret>>">>', sourceData)).toBe('<<secret>>');
    expect(await renderValue('<<note>>', sourceData, testEvaluate)).toBe(
      'hi <<secret>> and <<(s) => s.secret>>',
    );
  });

  it('resolves every expression per render, so <<page>> works in the URL', async () => {
    const url = 'https://api.test/items?page=<<page>>';
    expect(await renderUrl(url, { page: 1 }, noEvaluate)).toBe('https://api.test/items?page=1');
    expect(await renderUrl(url, { page: 2 }, noEvaluate)).toBe('https://api.test/items?page=2');
  });

  it('wraps evaluation failures with the expression', async () => {
    const failing: Evaluate = async () => {
      throw new Error('ReferenceError: foo is not defined');
    };
    await expect(renderString('x <<(s) => foo>>', {}, failing)).rejects.toMatchObject({
      name: 'TemplateError',
      code: 'evaluation',
      position: 2,
      message: "Template expression '<<(s) => foo>>' failed: ReferenceError: foo is not defined",
    });
  });
});

describe('renderValue', () => {
  it('keeps the JSON type of a value that is exactly one expression', async () => {
    const sourceData = { n: 5, list: [1, 2], o: { a: 1 }, z: null };
    expect(await renderValue('<<n>>', sourceData, noEvaluate)).toBe(5);
    expect(await renderValue('<<list>>', sourceData, noEvaluate)).toEqual([1, 2]);
    expect(await renderValue('<<o>>', sourceData, noEvaluate)).toEqual({ a: 1 });
    expect(await renderValue('<<z>>', sourceData, noEvaluate)).toBeNull();
  });

  it('renders to a string when there is text around the expression', async () => {
    expect(await renderValue(' <<n>>', { n: 5 }, noEvaluate)).toBe(' 5');
    expect(await renderValue('plain', {}, noEvaluate)).toBe('plain');
  });
});

describe('renderHeaders', () => {
  it('drops a header whose whole value resolves to null, undefined or ""', async () => {
    const headers = {
      'X-Null': '<<z>>',
      'X-Undefined': '<<(s) => s.nothing>>',
      'X-Empty': '<<empty>>',
      'X-Empty-Concat': '<<empty>><<empty>>',
      'X-Kept': '<<name>>',
    };
    expect(await renderHeaders(headers, { z: null, empty: '', name: 'n' }, testEvaluate)).toEqual({
      'X-Kept': 'n',
    });
  });

  it('keeps text around a null expression and literal values as written', async () => {
    const headers = { Authorization: 'Bearer <<token>>', 'X-Literal-Empty': '', Accept: 'application/json' };
    expect(await renderHeaders(headers, { token: null }, noEvaluate)).toEqual({
      Authorization: 'Bearer null',
      'X-Literal-Empty': '',
      Accept: 'application/json',
    });
  });

  it('renders credentials into header values', async () => {
    const sourceData = { github_token: 'ghp_x', credentials: { token: 'rt' } };
    expect(
      await renderHeaders(
        { Authorization: 'token <<github_token>>', 'X-Runtime': '<<(s) => s.credentials.token>>' },
        sourceData,
        testEvaluate,
      ),
    ).toEqual({ Authorization: 'token ghp_x', 'X-Runtime': 'rt' });
  });

  it('joins an array header value with ", " and drops an empty array', async () => {
    expect(
      await renderHeaders(
        { Accept: '<<types>>', 'X-None': '<<none>>' },
        { types: ['a', 'b'], none: [] },
        noEvaluate,
      ),
    ).toEqual({ Accept: 'a, b' });
  });
});

describe('renderQuery', () => {
  it('drops a parameter whose whole value resolves to null, undefined or ""', async () => {
    const query = { a: '<<z>>', b: '<<(s) => undefined>>', c: '<<empty>>', d: '<<n>>' };
    expect(await renderQuery(query, { z: null, empty: '', n: 0 }, testEvaluate)).toEqual([['d', '0']]);
  });

  it('turns an array value into repeated keys', async () => {
    expect(await renderQuery({ id: '<<ids>>', q: 'x' }, { ids: [1, 'two', true] }, noEvaluate)).toEqual([
      ['id', '1'],
      ['id', 'two'],
      ['id', 'true'],
      ['q', 'x'],
    ]);
  });

  it('drops null and "" elements of an array value', async () => {
    expect(await renderQuery({ id: '<<ids>>' }, { ids: [1, null, '', 2] }, noEvaluate)).toEqual([
      ['id', '1'],
      ['id', '2'],
    ]);
  });

  it('renders non-string JSON values of the record too', async () => {
    const query = {
      limit: 50,
      flag: false,
      none: null,
      tags: ['a', '<<tag>>', '<<more>>'],
      filter: { owner: '<<owner>>' },
    };
    expect(await renderQuery(query, { tag: 'b', more: ['c', 'd'], owner: 'me' }, noEvaluate)).toEqual([
      ['limit', '50'],
      ['flag', 'false'],
      ['tags', 'a'],
      ['tags', 'b'],
      ['tags', 'c'],
      ['tags', 'd'],
      ['filter', '{"owner":"me"}'],
    ]);
  });

  it('renders pagination variables in query values', async () => {
    expect(
      await renderQuery({ limit: '<<limit>>', offset: '<<offset>>' }, { limit: 50, offset: 100 }, noEvaluate),
    ).toEqual([
      ['limit', '50'],
      ['offset', '100'],
    ]);
  });
});

describe('renderBody', () => {
  it('renders a string body as text', async () => {
    expect(await renderBody('{"id": <<id>>, "tags": <<tags>>}', { id: 7, tags: ['a'] }, noEvaluate)).toBe(
      '{"id": 7, "tags": ["a"]}',
    );
  });

  it('resolves every string leaf of a JSON body', async () => {
    const body = {
      user: { name: 'Hi <<name>>', id: '<<id>>' },
      list: ['<<id>>', 'x'],
      n: 1,
      b: true,
      z: null,
    };
    expect(await renderBody(body, { name: 'Ann', id: 7 }, noEvaluate)).toEqual({
      user: { name: 'Hi Ann', id: 7 },
      list: [7, 'x'],
      n: 1,
      b: true,
      z: null,
    });
  });

  it('keeps the JSON type of a leaf that is exactly one expression', async () => {
    const body = { count: '<<(s) => s.n * 2>>', obj: '<<o>>', missing: '<<(s) => s.nope>>' };
    expect(await renderBody(body, { n: 2, o: { k: [1] } }, testEvaluate)).toEqual({
      count: 4,
      obj: { k: [1] },
      missing: null,
    });
  });

  it('does not template object keys and does not touch the input', async () => {
    const body = { '<<k>>': '<<k>>' };
    expect(await renderBody(body, { k: 'v' }, noEvaluate)).toEqual({ '<<k>>': 'v' });
    expect(body).toEqual({ '<<k>>': '<<k>>' });
  });
});
