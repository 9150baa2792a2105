/**
 * superglue's `sg` CLI (superglue-ai/cli 1.1.35) against kubeglue's persistent tool state, unmodified:
 * `sg tool state get|set|reset` and `sg tool run --state-fixture`, replayed with exactly the method, path,
 * headers and body fields its bundled client sends (`getToolState`, `setToolState`, `deleteToolState`,
 * `runTool`, `runToolConfig` in `_shared/index.js`), and checked for what the CLI reads back.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { SuperglueLikeClient } from '../../support/superglue-like-client.ts';

const target = useHttpTarget();
const api = useTestApi();
let sg: SuperglueLikeClient;

/** An incremental sync as an agent following superglue's skill documentation writes it. */
function syncConfig(id: string) {
  return {
    id,
    instruction: 'Fetch the orders changed since the last run',
    steps: [
      {
        id: 'fetchOrders',
        config: {
          url: `${target.url}/orders`,
          method: 'GET',
          queryParams: {
            since: '<<(sourceData) => sourceData.persistedState.lastSyncedAt || "2024-01-01">>',
          },
        },
      },
    ],
    outputTransform:
      '(sourceData) => { sourceData.persistedState.lastSyncedAt = sourceData.fetchOrders.data.until; return sourceData.fetchOrders.data.items; }',
  };
}

/** What the client's runTool sends and returns (success from status, warnings from metadata.warnings). */
async function runTool(toolId: string, stateFixture?: Record<string, unknown>) {
  const traceId = randomUUID();
  const t = await sg.request('POST', `/v1/tools/${encodeURIComponent(toolId)}/run`, {
    inputs: undefined,
    files: undefined,
    credentials: undefined,
    includeStepResultData: false,
    options: { requestSource: 'cli', traceId, timeout: undefined },
    runId: undefined,
    stateFixture,
  });
  return {
    success: t.status === 'success',
    data: t.data,
    error: t.error,
    ...(t.metadata?.warnings?.length ? { warnings: t.metadata.warnings } : {}),
    raw: t,
  };
}

const sinceSeen = () =>
  target.requests.filter((request) => request.path === '/orders').map((request) => request.query[0]?.[1]);

beforeAll(async () => {
  let day = 1;
  target.route('GET', '/orders', () => ({
    body: { items: [{ id: day }], until: `2025-01-0${++day}` },
  }));
  sg = new SuperglueLikeClient(api.url, TEST_ADMIN_KEY);
  // sg tool save: POST /v1/tools with the config and its id.
  await sg.request('POST', '/v1/tools', { ...syncConfig('orders-sync'), id: 'orders-sync' });
});

describe('sg tool state', () => {
  it('get: GET /v1/tools/{id}/state, the CLI prints .state ({} before the first run)', async () => {
    const answer = await sg.request('GET', '/v1/tools/orders-sync/state');
    expect(answer.state).toEqual({});
    // A run saves the state the next `get` shows.
    expect((await runTool('orders-sync')).success).toBe(true);
    expect((await sg.request('GET', '/v1/tools/orders-sync/state')).state).toEqual({
      lastSyncedAt: '2025-01-02',
    });
    expect(sinceSeen()).toEqual(['2024-01-01']);
  });

  it('set --state: PUT {state}, the CLI reads .warnings (an array) and the next run reads the state', async () => {
    const warnings = (
      await sg.request('PUT', '/v1/tools/orders-sync/state', { state: { lastSyncedAt: '2025-06-01' } })
    ).warnings;
    expect(warnings).toEqual([]);
    // What `sg tool state set` prints.
    const printed = {
      success: true,
      toolId: 'orders-sync',
      keyCount: 1,
      ...(warnings.length > 0 ? { warnings } : {}),
    };
    expect(printed).toEqual({ success: true, toolId: 'orders-sync', keyCount: 1 });
    expect((await runTool('orders-sync')).success).toBe(true);
    expect(sinceSeen().at(-1)).toBe('2025-06-01');
  });

  it('set past a limit: an error the CLI prints (it exits 1), the state unchanged', async () => {
    const state = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
    await expect(sg.request('PUT', '/v1/tools/orders-sync/state', { state })).rejects.toThrow(
      "The state of tool 'orders-sync' was not saved: it would have 101 keys, more than the limit of 100 (KUBEGLUE_TOOL_STATE_MAX_KEYS)",
    );
  });

  it('reset: DELETE /v1/tools/{id}/state, the CLI prints .deletedKeys; the next run starts over', async () => {
    const deletedKeys = (await sg.request('DELETE', '/v1/tools/orders-sync/state')).deletedKeys;
    expect(deletedKeys).toBe(1);
    expect((await sg.request('GET', '/v1/tools/orders-sync/state')).state).toEqual({});
    await runTool('orders-sync');
    expect(sinceSeen().at(-1)).toBe('2024-01-01');
  });

  it('an unknown tool: the message the CLI prints', async () => {
    await expect(sg.request('GET', '/v1/tools/no-such-tool/state')).rejects.toThrow(
      "Tool 'no-such-tool' not found",
    );
  });
});

describe('sg tool run --state-fixture', () => {
  it('--tool: stateFixture at the top level of the run body seeds the run; nothing is saved', async () => {
    const before = await sg.request('GET', '/v1/tools/orders-sync/state');
    const result = await runTool('orders-sync', { lastSyncedAt: '2030-12-31' });
    expect(result.success).toBe(true);
    expect(result.raw.metadata.state).toEqual({ fixture: true });
    expect(sinceSeen().at(-1)).toBe('2030-12-31');
    expect(await sg.request('GET', '/v1/tools/orders-sync/state')).toEqual(before);
  });

  it('--config: runToolConfig sends it with the unsaved definition; it reads the fixture, saves nothing', async () => {
    const before = await sg.request('GET', '/v1/tools/orders-sync/state');
    const traceId = randomUUID();
    const res = await sg.request(
      'POST',
      '/v1/tools/run?createRun=true',
      {
        tool: syncConfig('orders-sync'),
        payload: undefined,
        includeStepResultData: false,
        options: { requestSource: 'cli', timeout: undefined },
        stateFixture: { lastSyncedAt: '2031-01-01' },
        executionKind: 'full',
      },
      { 'X-Trace-Id': traceId },
    );
    expect(res.status).toBe('success');
    expect(sinceSeen().at(-1)).toBe('2031-01-01');
    expect(await sg.request('GET', '/v1/tools/orders-sync/state')).toEqual(before);
  });

  it('the CLI shows state warnings of a run under warnings', async () => {
    await sg.request('POST', '/v1/tools', {
      id: 'too-big',
      steps: [
        {
          id: 'fill',
          config: {
            type: 'transform',
            transformCode:
              '(sourceData) => { sourceData.persistedState.blob = "x".repeat(70000); return 1; }',
          },
        },
      ],
    });
    const result = await runTool('too-big');
    expect(result.success).toBe(true);
    expect(result.warnings).toEqual([
      "persistedState was not saved: the value of 'blob' is 70002 bytes of JSON, more than the limit of 65536 (KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES)",
    ]);
  });
});
