/**
 * Issue 34: whatever the sandbox reuses between runs (the isolate, its compiled scripts, contexts
 * prepared ahead, the host's selectors), a run of a tool cannot see or change anything that another run
 * of the same tool, under another API key, left behind. One isolate, so both runs meet in it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultEngineSettings } from '../../../../config/config.ts';
import { sandboxOptions } from '../../../../engine/deps.ts';
import { Sandbox } from '../../../../engine/sandbox/sandbox.ts';

const DEFAULTS = sandboxOptions(defaultEngineSettings());
const MEMORY_MB = 32;

/** The tool's one transform: the first run (key a) leaves everything it can behind; the second looks. */
const TRANSFORM = `(s) => {
  if (s.mode === 'leave') {
    // A callback that runs after the function returned, a promise nothing settles, memory held in a global.
    Promise.resolve().then(() => { globalThis.afterReturn = s.secret; });
    globalThis.later = new Promise(() => {});
    globalThis.held = new Float64Array(3_000_000);
    globalThis.leaked = s.secret;
    sloppyGlobal = s.secret;
    Object.defineProperty(globalThis, 'pinned', { value: s.secret, configurable: false });
    Array.prototype.map = function () { return 'hijacked'; };
    Array.prototype.secret = s.secret;
    Object.prototype.polluted = s.secret;
    Object.defineProperty(Object.prototype, 'frozenIn', { value: s.secret, configurable: false });
    String.prototype.toUpperCase = () => s.secret;
    JSON.stringify = () => '"hijacked"';
    Promise.prototype.then = function () { return 'hijacked'; };
    Function.prototype.call = () => 'hijacked';
    Math.random = () => 4;
    Object.freeze(Object.prototype);
    new RegExp('(' + s.secret + ')').exec('x' + s.secret);
    return 'left';
  }
  const own = [];
  for (const key in {}) own.push(key);
  for (const key in []) own.push(key);
  return {
    globals: [typeof leaked, typeof sloppyGlobal, typeof pinned, typeof later, typeof afterReturn, typeof held],
    inherited: own,
    map: [1, 2].map((x) => x * 2),
    polluted: ({}).polluted === undefined && ({}).frozenIn === undefined && [].secret === undefined,
    extensible: Object.isExtensible(Object.prototype),
    upper: 'b'.toUpperCase(),
    json: JSON.stringify({ a: 1 }),
    random: Math.random() < 1,
    regexp: RegExp.$1,
    timers: [typeof setTimeout, typeof setInterval, typeof setImmediate, typeof queueMicrotask],
    memory: new Float64Array(3_000_000).length,
  };
}`;

describe('a run of a tool under another key', () => {
  let sandbox: Sandbox;

  beforeAll(() => {
    sandbox = new Sandbox({ ...DEFAULTS, memoryLimitMb: MEMORY_MB, timeoutMs: 5_000, maxIsolates: 1 });
  });

  afterAll(() => {
    sandbox.dispose();
  });

  const clean = {
    globals: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'],
    inherited: [],
    map: [2, 4],
    polluted: true,
    extensible: true,
    upper: 'B',
    json: '{"a":1}',
    random: true,
    regexp: '',
    timers: ['undefined', 'undefined', 'undefined', 'undefined'],
    memory: 3_000_000,
  };

  it('sees none of the globals, prototype changes, pending callbacks or memory the other run left', async () => {
    const first = sandbox.openRun({ key: 'a', tool: 'shared' });
    try {
      expect(await first.evaluate(TRANSFORM, [{ mode: 'leave', secret: 'k3y-a' }])).toBe('left');
      // The run itself keeps what it set: the isolate and the compiled script are those the next run uses.
      expect(await first.evaluate('() => [leaked, afterReturn, [1].map((x) => x)]', [])).toEqual([
        'k3y-a',
        'k3y-a',
        'hijacked',
      ]);
    } finally {
      first.close();
    }

    for (let i = 0; i < 3; i++) {
      const second = sandbox.openRun({ key: 'b', tool: 'shared' });
      try {
        // 2 × 24 MB would pass the 32 MB limit: the first run's array is gone with its context.
        expect(await second.evaluate(TRANSFORM, [{ mode: 'look' }])).toEqual(clean);
        expect(await second.evaluate('(s) => s.mode', [{ mode: 'look' }])).toBe('look');
      } finally {
        second.close();
      }
    }
  });

  it('sees nothing of it either while the other run is still open', async () => {
    const first = sandbox.openRun({ key: 'a', tool: 'shared' });
    const second = sandbox.openRun({ key: 'b', tool: 'shared' });
    try {
      expect(await first.evaluate(TRANSFORM, [{ mode: 'leave', secret: 'k3y-a' }])).toBe('left');
      const { memory: _memory, ...rest } = clean;
      // Both runs' contexts are alive: the second's own 24 MB array would not fit beside the first's.
      const look = TRANSFORM.replace('memory: new Float64Array(3_000_000).length', 'memory: 0');
      expect(await second.evaluate(look, [{ mode: 'look' }])).toEqual({ ...rest, memory: 0 });
      expect(await first.evaluate('() => typeof leaked', [])).toBe('string');
    } finally {
      first.close();
      second.close();
    }
  });
});
