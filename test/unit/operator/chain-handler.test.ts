import { describe, expect, it } from 'vitest';
import { KG_ERR_INTERNAL, KG_ERR_TOOL_NOT_FOUND } from '../../../contract/api/errors.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { type ChainStarter, chainedRunId, createChainHandler } from '../../../operator/outbox/chain.ts';
import type { Store, StoredRun } from '../../../store/index.ts';

function parentRun(overrides: Partial<StoredRun> = {}): StoredRun {
  return {
    runId: 'parent-1',
    toolId: 'a',
    status: 'success',
    requestSource: 'api',
    userId: 'key-1',
    systemIds: [],
    metadata: { startedAt: '2026-03-01T10:00:00.000Z' },
    ...overrides,
  };
}

/** A store with just the reads the chain handler makes. */
function storeWith(runs: StoredRun[]): Store {
  const byId = new Map(runs.map((run) => [run.runId, run]));
  const fake: Pick<Store, 'getRun' | 'getRunResult' | 'findApiKeyById'> = {
    getRun: async (runId) => byId.get(runId),
    // No API key has the parents' user ids here (test/integration/security/api-revoked-keys.test.ts
    // plays a key revoked while its run ran).
    findApiKeyById: async () => undefined,
    getRunResult: async (runId) => ({
      runId,
      success: true,
      data: { n: 1 },
      stepResults: [],
      toolPayload: null,
      error: null,
      storedAt: '2026-03-01T10:00:01.000Z',
    }),
  };
  return fake as Store;
}

function recordingStarter(startError?: Error) {
  const started: Array<{ runId: string; toolId: string; inputs: JsonObject; parent: StoredRun }> = [];
  const refused: Array<{ runId: string; toolId: string; reason: string }> = [];
  const starter: ChainStarter = {
    startChained: async (input) => {
      if (startError) throw startError;
      started.push(input);
    },
    recordRefused: async ({ runId, toolId, reason }) => {
      refused.push({ runId, toolId, reason });
    },
  };
  return { starter, started, refused };
}

const row = (toolId: string) => ({ runId: 'parent-1', payload: { toolId } });

describe('the chain handler', () => {
  it("refuses and records a chain to a tool outside the parent's key restriction", async () => {
    const { starter, started, refused } = recordingStarter();
    const handle = createChainHandler({ store: storeWith([parentRun({ allowedToolIds: ['a'] })]), starter });
    expect(await handle(row('b'))).toEqual({ done: true });
    expect(started).toEqual([]);
    expect(refused).toEqual([
      {
        runId: chainedRunId('parent-1', 'b'),
        toolId: 'b',
        reason: "Chain refused: the API key that started run 'parent-1' may not use tool 'b'",
      },
    ]);
  });

  it('starts a chain within the restriction, and any chain of an unrestricted run', async () => {
    for (const parent of [parentRun({ allowedToolIds: ['a', 'b'] }), parentRun()]) {
      const { starter, started, refused } = recordingStarter();
      await createChainHandler({ store: storeWith([parent]), starter })(row('b'));
      expect(refused).toEqual([]);
      expect(started.map((s) => [s.toolId, s.parent.allowedToolIds])).toEqual([['b', parent.allowedToolIds]]);
    }
  });

  it('records a chain the start refuses as a client error; retries on anything else', async () => {
    const missing = recordingStarter(KG_ERR_TOOL_NOT_FOUND('b'));
    await createChainHandler({ store: storeWith([parentRun()]), starter: missing.starter })(row('b'));
    expect(missing.refused.map((r) => r.reason)).toEqual(["Chain refused: Tool 'b' not found"]);

    const broken = recordingStarter(KG_ERR_INTERNAL());
    const handle = createChainHandler({ store: storeWith([parentRun()]), starter: broken.starter });
    await expect(handle(row('b'))).rejects.toThrow('Internal server error');
    expect(broken.refused).toEqual([]);
  });
});
