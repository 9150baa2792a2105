/**
 * Issue 29, item 2: a revoked API key starts nothing more, also what it asked for before it was revoked.
 * A chain queued by a run whose key was revoked while the run ran does not start (it is recorded as a
 * refused tool-chain run saying why); a webhook with the key is refused at once. A schedule's ticks:
 * test/integration/operator/schedules.test.ts.
 */
import type { ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { until } from '../../support/schedules.ts';

const target = useHttpTarget();
const api = useTestApi();
/** Requests to /hold wait here until the test lets them go: a run that stays running. */
const held: ServerResponse[] = [];

async function createKey(name: string): Promise<{ id: string; key: string }> {
  const created = await api.call<{ id: string; key: string }>('POST', '/v1/api-keys', {
    body: { name, toolIds: ['slow', 'next'] },
  });
  expect(created.status).toBe(201);
  return created.body;
}

beforeAll(async () => {
  target.route('GET', '/hold', (_req, res) => {
    held.push(res);
    return undefined;
  });
  await api.call('POST', '/v1/systems', { body: { id: 'target', url: target.url } });
  for (const tool of [
    { id: 'slow', steps: [{ id: 'wait', config: { systemId: 'target', url: '/hold' } }] },
    { id: 'next', steps: [{ id: 'k', config: { type: 'transform', transformCode: '(s) => s' } }] },
  ]) {
    expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  }
});

describe('a revoked API key', () => {
  it('starts no chain queued by a run of it that ran while it was revoked', async () => {
    const key = await createKey('revoked while its run runs');
    const accepted = await api.call<Run>('POST', '/v1/tools/slow/run', {
      key: key.key,
      body: { options: { async: true, webhookUrl: 'tool:next' } },
    });
    expect(accepted.status).toBe(202);
    await until(
      'the run to reach the target',
      async () => held.length,
      (n) => n === 1,
    );
    expect((await api.call('DELETE', `/v1/api-keys/${key.id}`)).status).toBe(200);
    for (const res of held.splice(0)) res.end('{"done":true}');
    expect((await waitForRun<Run>(api, accepted.body.runId)).status).toBe('success');

    const chained = await until(
      'the chain to be decided',
      async () => {
        const { body } = await api.call<{ data: Run[] }>('GET', '/v1/runs?toolId=next&limit=100');
        return body.data.find((run) => run.parentRunId === accepted.body.runId);
      },
      (run) => run !== undefined && run.status !== 'running',
    );
    expect(chained).toMatchObject({ status: 'failed', requestSource: 'tool-chain', userId: key.id });
    expect(chained?.error).toContain(`the API key that started run '${accepted.body.runId}' was revoked`);
  });

  it('is refused at once by the webhook route', async () => {
    const key = await createKey('webhook sender');
    const before = await api.call('POST', `/v1/hooks/next?token=${key.key}`, { key: null, body: { a: 1 } });
    expect(before.status).toBe(202);
    expect((await api.call('DELETE', `/v1/api-keys/${key.id}`)).status).toBe(200);
    const after = await api.call<{ error: { code: string } }>('POST', `/v1/hooks/next?token=${key.key}`, {
      key: null,
      body: { a: 1 },
    });
    expect([after.status, after.body.error.code]).toEqual([401, 'KG_ERR_INVALID_API_KEY']);
  });
});
