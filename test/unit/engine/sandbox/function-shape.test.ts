import { describe, expect, it } from 'vitest';
import { checkFunctionShape } from '../../../../engine/sandbox/function-shape.ts';
import { LruCache } from '../../../../engine/sandbox/lru.ts';

describe('checkFunctionShape', () => {
  it.each([
    ['arrow with parameter list', '(sourceData) => sourceData.items.length'],
    ['arrow with bare parameter', 's => s.a'],
    ['arrow with destructuring and defaults', '({ items = [] }, [first] = []) => items.concat(first)'],
    ['async arrow', 'async (s) => { await null; return s; }'],
    ['async arrow with bare parameter', 'async s => s'],
    ['arrow whose parameter is named async', 'async => async'],
    ['function expression', 'function (response, pageInfo, sourceData) { return pageInfo.page > 3; }'],
    ['named async generator-free function', 'async function stop(r) { return !r.data.next; }'],
    ['parenthesized arrow', '((s) => s)'],
    ['arrow returning an object literal with commas', '(s) => ({ a: s.a, b: [1, 2, 3] })'],
    ['arrow with commas inside calls', '(s) => s.items.map((x, i) => x + i)'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a JavaScript source for the sandbox
    ['template literal with nested braces', '(s) => `${s.a}, ${`${s.b}`}, {not a group}`'],
    ['strings holding brackets and commas', `(s) => s.x + "), (" + ')}' + ","`],
    ['regular expression with brackets', '(s) => /[(,]\\)/.test(s.a) ? s.a.split(/,/) : []'],
    ['division after a closing bracket', '(s) => (s.a + 1) / 2 / s.b'],
    ['comments everywhere', '/* a, b */ (s /* ) */) => // trailing, comma\n s.a'],
    ['arrow returning an arrow', 's => t => s + t'],
  ])('accepts a %s', (_name, source) => {
    expect(checkFunctionShape(source)).toEqual({ ok: true });
  });

  it.each([
    ['a number', '42'],
    ['a member expression', 's.items'],
    ['a call of a function expression', '(function () { return 1; })()'],
    ['a function followed by a member access', 'function () {}.call'],
    ['a comma sequence after an arrow', '(s) => s, 5'],
    ['a comma sequence after a block body', '(s) => { return s; }, 5'],
    ['a parenthesized sequence', '(1, (s) => s)'],
    ['a class', 'class { run() {} }'],
    ['a bare async keyword', 'async'],
    ['an object literal', '({ run: (s) => s })'],
    ['a string', '"(s) => s"'],
  ])('rejects %s', (_name, source) => {
    const verdict = checkFunctionShape(source);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.message).toContain('the source must be a function expression');
  });

  it('rejects sources it cannot scan rather than guessing', () => {
    expect(checkFunctionShape('(s) => "unterminated').ok).toBe(false);
    expect(checkFunctionShape('(s) => { ').ok).toBe(false);
  });
});

describe('LruCache', () => {
  it('evicts the least recently used entry and tells the owner', () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, string>(2, (value) => evicted.push(value));
    cache.set('a', 'A');
    cache.set('b', 'B');
    expect(cache.get('a')).toBe('A');
    cache.set('c', 'C');
    expect(evicted).toEqual(['B']);
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.size]).toEqual(['A', 'C', 2]);
  });

  it('forgets entries on clear without evicting them', () => {
    const evicted: number[] = [];
    const cache = new LruCache<string, number>(4, (value) => evicted.push(value));
    cache.set('x', 1);
    cache.clear();
    expect([cache.size, evicted]).toEqual([0, []]);
  });
});
