/**
 * Issue 19, item 3: one key's endless transforms must not starve another key's. Through the real API
 * (embedded app, one engine worker so that every run shares one sandbox), with two API keys.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_WORKERS: '1', KUBEGLUE_SANDBOX_TIMEOUT_MS: '300' });
let keyA: string;
let keyB: string;

async function createKey(name: string, toolId: string): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name, toolIds: [toolId] },
  });
  expect(created.status).toBe(201);
  return created.body.key;
}

beforeAll(async () => {
  target.route('GET', '/reached-the-loop', { body: { ok: true } });
  const spin = {
    id: 'spin',
    steps: [
      { id: 'mark', config: { url: `${target.url}/reached-the-loop` } },
      {
        id: 'loop',
        dataSelector: '() => [1, 2, 3, 4, 5, 6, 7, 8]',
        loopConcurrency: 8,
        config: { type: 'transform', transformCode: '() => { while (true) {} }' },
      },
    ],
  };
  const quick = {
    id: 'quick',
    steps: [{ id: 'add', config: { type: 'transform', transformCode: '(s) => ({ sum: s.n + 1 })' } }],
  };
  for (const tool of [spin, quick])
    expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  keyA = await createKey('a', 'spin');
  keyB = await createKey('b', 'quick');
}, 60_000);

describe('sandbox capacity shared between API keys', () => {
  it('runs key B’s one-line transform to success while all four of key A’s endless loop runs are still running', async () => {
    const started: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await api.call<Run>('POST', '/v1/tools/spin/run', {
        key: keyA,
        body: { options: { async: true } },
      });
      expect(res.status).toBe(202);
      started.push(res.body.runId);
    }
    // Each run reached its loop step: 4 × 8 endless evaluations now wait for the sandbox.
    for (let polls = 0; target.count('/reached-the-loop') < 4; polls++) {
      if (polls > 400) throw new Error('key A’s runs did not reach their loop step');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const quick = await api.call<Run>('POST', '/v1/tools/quick/run', {
      key: keyB,
      body: { inputs: { n: 41 } },
    });
    expect(quick.status).toBe(200);
    expect(quick.body).toMatchObject({ status: 'success', data: { sum: 42 } });

    const stillRunning = await Promise.all(
      started.map(async (runId) => (await api.call<Run>('GET', `/v1/runs/${runId}`)).body.status),
    );
    expect(stillRunning).toEqual(['running', 'running', 'running', 'running']);

    for (const runId of started) await api.call('POST', `/v1/runs/${runId}/cancel`, { key: keyA });
    for (const runId of started) expect((await waitForRun<Run>(api, runId)).status).not.toBe('running');
  }, 60_000);
});
