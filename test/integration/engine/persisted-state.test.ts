/**
 * Persistent tool state in the engine (docs/state.md), with real isolated-vm and a real HTTP target:
 * `sourceData.persistedState` as the order carries it, read by templates and code, changed by transforms
 * (key by key, loop items included), and reported with the result; never the store (the engine has none).
 */
import { describe, expect, it } from 'vitest';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { EngineResult } from '../../../engine/types.ts';
import { useEngineDeps } from '../../support/engine.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const engine = useEngineDeps();

function run(
  tool: Omit<ToolInput, 'id'>,
  state: JsonObject | undefined,
  options: { version?: number; systems?: ResolvedSystem[]; signal?: AbortSignal } = {},
): Promise<EngineResult> {
  return runTool(engine.deps, {
    tool: Tool.parse({ id: 'state-engine-test', ...tool }),
    inputs: {},
    systems: options.systems ?? [],
    traceId: 'state-engine-test',
    signal: options.signal ?? new AbortController().signal,
    ...(state !== undefined ? { persistedState: state } : {}),
    ...(options.version !== undefined ? { stateVersion: options.version } : {}),
  });
}

const transform = (id: string, transformCode: string, extra: Record<string, unknown> = {}) => ({
  id,
  config: { type: 'transform' as const, transformCode },
  ...extra,
});

describe('reading the state', () => {
  it('a template reads sourceData.persistedState: the first run sees {} and takes the fallback', async () => {
    target.route('GET', '/state/changes', { body: [] });
    const tool = {
      steps: [
        {
          id: 'changes',
          config: {
            url: `${target.url}/state/changes`,
            queryParams: { since: '<<(sourceData) => sourceData.persistedState.cursor || "2024-01-01">>' },
          },
        },
      ],
    };
    expect((await run(tool, {}, { version: 0 })).status).toBe('success');
    expect((await run(tool, { cursor: '2025-06-30' }, { version: 3 })).status).toBe('success');
    const since = target.requests
      .filter((request) => request.path === '/state/changes')
      .map((request) => request.query);
    expect(since).toEqual([[['since', '2024-01-01']], [['since', '2025-06-30']]]);
  });

  it('transforms and the output transform see it; a run of a tool without state sees no such key', async () => {
    const tool = {
      steps: [transform('peek', '(s) => Object.keys(s.persistedState)')],
      outputTransform: '(s) => ({ keys: s.peek.data, has: "persistedState" in s })',
    };
    expect((await run(tool, { a: 1, b: 2 })).data).toEqual({ keys: ['a', 'b'], has: true });
    const without = await run(tool, undefined);
    expect(without.status).toBe('failed');
    expect(without.state).toBeUndefined();
  });
});

describe('writing the state', () => {
  it('a transform that sets keys reports them with what the run read, and the version it read', async () => {
    target.route('GET', '/state/orders', { body: { items: [1, 2], nextCursor: 'c-2' } });
    const result = await run(
      {
        steps: [
          { id: 'orders', config: { url: `${target.url}/state/orders` } },
          transform(
            'remember',
            `(sourceData) => {
              sourceData.persistedState.cursor = sourceData.orders.data.nextCursor;
              sourceData.persistedState.runs = (sourceData.persistedState.runs || 0) + 1;
              delete sourceData.persistedState.obsolete;
              return sourceData.orders.data.items;
            }`,
          ),
        ],
      },
      { cursor: 'c-1', runs: 4, obsolete: true, untouched: 'x' },
      { version: 7 },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual([1, 2]);
    expect(result.state).toEqual({
      versionRead: 7,
      writes: [
        { key: 'cursor', before: 'c-1', after: 'c-2' },
        { key: 'runs', before: 4, after: 5 },
        { key: 'obsolete', before: true },
      ],
      warnings: [],
    });
  });

  it('later code sees what an earlier transform wrote; the output transform may write too', async () => {
    const result = await run(
      {
        steps: [
          transform('first', '(s) => { s.persistedState.n = 1; return null; }'),
          transform('second', '(s) => s.persistedState.n + 1'),
        ],
        outputTransform: 'async (s) => { s.persistedState.last = s.second.data; return s.persistedState; }',
      },
      {},
      { version: 0 },
    );
    expect(result.data).toEqual({ n: 1, last: 2 });
    expect(result.state?.writes).toEqual([
      { key: 'n', after: 1 },
      { key: 'last', after: 2 },
    ]);
  });

  it('loop items of a transform each add their keys, also when they run at once', async () => {
    const result = await run(
      {
        steps: [
          transform(
            'mark',
            '(s) => { s.persistedState["seen_" + s.currentItem] = true; return s.currentItem; }',
            {
              dataSelector: '() => [1, 2, 3, 4]',
              loopConcurrency: 4,
            },
          ),
        ],
      },
      {},
    );
    expect(result.status).toBe('success');
    expect(result.state?.writes.map((write) => write.key).sort()).toEqual([
      'seen_1',
      'seen_2',
      'seen_3',
      'seen_4',
    ]);
  });

  it('reassigning the object in a transform counts; something that is not an object is ignored with a warning', async () => {
    const replaced = await run(
      { steps: [transform('swap', '(s) => { s.persistedState = { fresh: 1 }; return null; }')] },
      { old: 1 },
    );
    expect(replaced.state?.writes).toEqual([
      { key: 'old', before: 1 },
      { key: 'fresh', after: 1 },
    ]);
    const nulled = await run(
      { steps: [transform('wipe', '(s) => { s.persistedState = null; return null; }')] },
      { old: 1 },
    );
    expect(nulled.status).toBe('success');
    expect(nulled.state?.writes).toEqual([]);
    expect(nulled.state?.warnings).toEqual([
      'step wipe transformCode set sourceData.persistedState to null; it must stay an object, so its changes were ignored',
    ]);
  });

  it('templates and data selectors cannot write: their changes stay in their own copy', async () => {
    const result = await run(
      {
        steps: [
          transform('x', '(s) => s.currentItem', {
            dataSelector: '(s) => { s.persistedState.fromSelector = 1; return [1]; }',
          }),
        ],
      },
      {},
    );
    expect(result.status).toBe('success');
    expect(result.state?.writes).toEqual([]);
  });

  it('a transform that fails leaves the state as it was before it', async () => {
    const result = await run(
      {
        steps: [
          transform('broken', '(s) => { s.persistedState.half = 1; throw new Error("boom"); }', {
            failureBehavior: 'continue',
          }),
        ],
      },
      {},
    );
    expect(result.status).toBe('success');
    expect(result.state?.writes).toEqual([]);
  });

  it('a write holding a credential value of the run is refused as a whole, with a warning naming the key', async () => {
    const crm: ResolvedSystem = {
      id: 'crm',
      url: target.url,
      credentials: { apiKey: 'crm-secret-4f1b2c' },
      codeAccess: true,
    };
    const result = await run(
      {
        steps: [
          transform(
            'leak',
            '(s) => { s.persistedState.cursor = 5; s.persistedState.copy = "key=" + s.crm_apiKey; return null; }',
          ),
        ],
      },
      {},
      { systems: [crm] },
    );
    expect(result.status).toBe('success');
    expect(result.state?.writes).toEqual([]);
    expect(result.state?.warnings).toEqual([
      "persistedState was not saved: 'copy' holds a credential value of the run's systems (state is stored unencrypted; keep credentials out of it)",
    ]);
    expect(JSON.stringify(result)).not.toContain('crm-secret-4f1b2c');
  });
});
