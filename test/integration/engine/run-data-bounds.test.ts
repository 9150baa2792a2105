/**
 * Issue 19, item 6: a transform returning 60 MB was stored without limit (the API process grew to
 * 631 MB and `/healthz` stalled). Runs now fail clearly above KUBEGLUE_MAX_STEP_DATA_BYTES, in the
 * worker, before the data reaches the API process; the API keeps answering.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';

const api = useTestApi({ KUBEGLUE_SANDBOX_TIMEOUT_MS: '60000' });
const SIXTY_MB = 60 * 1024 * 1024;

beforeAll(async () => {
  // A CPU limit that a 60 MB string comfortably fits in on a loaded machine.
  const tools = [
    {
      id: 'huge',
      steps: [{ id: 'blob', config: { type: 'transform', transformCode: `() => "x".repeat(${SIXTY_MB})` } }],
    },
    {
      id: 'fits',
      steps: [
        { id: 'blob', config: { type: 'transform', transformCode: `() => "y".repeat(${1024 * 1024})` } },
      ],
    },
  ];
  for (const tool of tools) expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
}, 60_000);

const TOO_LARGE =
  "Step blob failed: the step's data is 62914562 bytes (60.0 MiB) of JSON, more than the limit of " +
  '10485760 bytes (10.0 MiB) (KUBEGLUE_MAX_STEP_DATA_BYTES); return less data, or raise KUBEGLUE_MAX_STEP_DATA_BYTES';

/** Calls /healthz until `done` settles; answers every status it got. */
async function healthWhile(done: Promise<unknown>): Promise<number[]> {
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  const statuses: number[] = [];
  while (!finished) {
    statuses.push((await api.call('GET', '/healthz', { key: null })).status);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  statuses.push((await api.call('GET', '/healthz', { key: null })).status);
  return statuses;
}

describe('run data bounds through the API', () => {
  it('fails a sync run whose transform returns 60 MB, saying size, limit and setting, and the API keeps answering', async () => {
    const running = api.call<Run>('POST', '/v1/tools/huge/run', { body: {} });
    const health = await healthWhile(running);
    const res = await running;
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('failed');
    expect(res.body.error).toBe(TOO_LARGE);
    expect(res.text.length).toBeLessThan(10_000);
    expect(health.every((status) => status === 200)).toBe(true);
    const stored = await api.call<Run>('GET', `/v1/runs/${res.body.runId}`);
    expect(stored.body).toMatchObject({ status: 'failed', error: TOO_LARGE });
    expect(stored.text.length).toBeLessThan(10_000);
  }, 120_000);

  it('fails an async run (the worker pool) the same way', async () => {
    const started = await api.call<Run>('POST', '/v1/tools/huge/run', { body: { options: { async: true } } });
    expect(started.status).toBe(202);
    const run = await waitForRun<Run>(api, started.body.runId, 60_000);
    expect(run).toMatchObject({ status: 'failed', error: TOO_LARGE });
  }, 120_000);

  it('leaves a result under the bounds as it is', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/fits/run', { body: {} });
    expect(res.body.status).toBe('success');
    expect(res.body.data).toBe('y'.repeat(1024 * 1024));
    expect(res.body.stepResults?.[0]?.data).toBe('y'.repeat(1024 * 1024));
  }, 60_000);
});
