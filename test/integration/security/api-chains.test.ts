/**
 * Issue 7, item 1: a key limited to some tools cannot reach another tool by chaining
 * (`options.webhookUrl: "tool:<id>"`), and the runs it starts, chained ones included, keep its restriction.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';

type List<T> = { data: T[]; total: number };

const api = useTestApi();
let onlyA: string;
let aAndB: string;

const transformTool = (id: string, code: string) => ({
  id,
  steps: [{ id: 'k', config: { type: 'transform', transformCode: code } }],
});

async function createKey(name: string, toolIds: string[]): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', { body: { name, toolIds } });
  expect(created.status).toBe(201);
  return created.body.key;
}

async function runsOf(toolId: string): Promise<Run[]> {
  const list = await api.call<List<Run>>('GET', `/v1/runs?toolId=${toolId}&limit=100`);
  return list.body.data;
}

beforeAll(async () => {
  for (const tool of [
    transformTool('a', '() => ({ n: 1 })'),
    transformTool('b', '(s) => ({ got: s.n })'),
    transformTool('c', '() => 3'),
  ]) {
    expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  }
  onlyA = await createKey('only a', ['a']);
  aAndB = await createKey('a and b', ['a', 'b']);
});

describe('chaining with a tool-restricted key', () => {
  it('refuses, when the run is accepted, a chain to a tool the key may not use (sync and async)', async () => {
    for (const async of [false, true]) {
      const answer = await api.call<ErrorBody>('POST', '/v1/tools/a/run', {
        key: onlyA,
        body: { options: { async, webhookUrl: 'tool:b' } },
      });
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('KG_ERR_CHAIN_TARGET_FORBIDDEN');
      expect(answer.body.error.message).toContain("'b'");
      expect(answer.body.error.message).toContain('options.webhookUrl');
    }
    // Nothing was accepted, so nothing can chain later either.
    expect(await runsOf('a')).toEqual([]);
    expect(await runsOf('b')).toEqual([]);
  });

  it('answers the same whether the chain target exists or not', async () => {
    const existing = await api.call<ErrorBody>('POST', '/v1/tools/a/run', {
      key: onlyA,
      body: { options: { webhookUrl: 'tool:b' } },
    });
    const missing = await api.call<ErrorBody>('POST', '/v1/tools/a/run', {
      key: onlyA,
      body: { options: { webhookUrl: 'tool:no-such-tool' } },
    });
    expect(missing.status).toBe(existing.status);
    expect(missing.body.error.code).toBe(existing.body.error.code);
    expect(missing.body.error.message.replaceAll('no-such-tool', 'b')).toBe(existing.body.error.message);
  });

  it('lets a key chain between its own tools; the chained run keeps the restriction', async () => {
    const first = await api.call<Run>('POST', '/v1/tools/a/run', {
      key: aAndB,
      body: { options: { webhookUrl: 'tool:b' } },
    });
    expect(first.status).toBe(200);
    let chained: Run | undefined;
    await expect
      .poll(
        async () => {
          chained = (await runsOf('b')).find((run) => run.parentRunId === first.body.runId);
          return chained?.status;
        },
        { timeout: 15_000 },
      )
      .toBe('success');
    const stored = await api.embedded.store.getRun(chained?.runId as string);
    expect(stored?.allowedToolIds).toEqual(['a', 'b']);
    expect((await api.embedded.store.getRun(first.body.runId))?.allowedToolIds).toEqual(['a', 'b']);
    // The key sees the chained run: it is one of its tools.
    expect((await api.call('GET', `/v1/runs/${chained?.runId}`, { key: aAndB })).status).toBe(200);
  });

  it('keeps unrestricted keys unrestricted', async () => {
    const first = await api.call<Run>('POST', '/v1/tools/a/run', {
      body: { options: { webhookUrl: 'tool:c' } },
    });
    expect(first.status).toBe(200);
    expect((await api.embedded.store.getRun(first.body.runId))?.allowedToolIds).toBeUndefined();
    await expect
      .poll(async () => (await runsOf('c')).find((run) => run.parentRunId === first.body.runId)?.status, {
        timeout: 15_000,
      })
      .toBe('success');
  });

  it('records webhook runs of a restricted key with its restriction', async () => {
    const accepted = await api.call<{ runId: string }>('POST', `/v1/hooks/a?token=${onlyA}`, {
      key: null,
      body: { event: 'x' },
    });
    expect(accepted.status).toBe(202);
    await waitForRun(api, accepted.body.runId);
    expect((await api.embedded.store.getRun(accepted.body.runId))?.allowedToolIds).toEqual(['a']);
  });
});
