/**
 * Recording on the runner Pod path: `kubeglue runner` fetches an order that asks to record (the run's
 * options.record), calls a real HTTP target, and puts the recording with its result; the internal API's
 * finish stores it as any other transport's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../store/index.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { openTestStore } from '../../support/store.ts';

const TOKEN = 'runner-rec-SECRET-5e6f7a';

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;
let dir: string;
const target = useHttpTarget();

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-recording-'));
  api = createInternalApi(store);
  await api.listen();
  target.route('GET', '/who', (req) => ({
    body: { sent: req.headers.authorization ?? null, big: 'y'.repeat(3000) },
  }));
  api.systems.set('crm/prod', {
    id: 'crm',
    url: target.url,
    authType: 'bearer',
    credentials: { bearerToken: TOKEN },
  });
});

afterAll(async () => {
  await api?.close();
  await closeStore?.();
  await rm(dir, { recursive: true, force: true });
});

const TOOL = {
  id: 'who',
  steps: [{ id: 'who', dataSelector: '() => [1, 2]', config: { systemId: 'crm', url: '/who' } }],
};

describe('runner pod recording', () => {
  it('puts the recording with the result, redacted, and the run stores it', async () => {
    const token = await api.startRun('pod-recorded', TOOL, { systemIds: ['crm'], options: { record: true } });
    const { code } = await startRunnerProcess({ url: api.url, runId: 'pod-recorded', token, dir }).exited;
    expect(code).toBe(0);
    expect((await store.getRun('pod-recorded'))?.recording).toMatchObject({ exchanges: 2, truncated: false });
    const recording = await store.getRunRecording('pod-recorded');
    expect(recording?.entries.map((e) => [e.stepId, e.item])).toEqual([
      ['who', 0],
      ['who', 1],
    ]);
    expect(recording?.entries[0]?.response?.data).toMatchObject({ sent: 'Bearer <<crm_bearerToken>>' });
    expect(JSON.stringify(recording)).not.toContain(TOKEN);
  }, 60_000);

  it('keeps within the cap the operator hands it, and the run succeeds', async () => {
    const token = await api.startRun('pod-capped', TOOL, { systemIds: ['crm'], options: { record: true } });
    const { code } = await startRunnerProcess({
      url: api.url,
      runId: 'pod-capped',
      token,
      dir,
      env: { KUBEGLUE_MAX_RECORDING_BYTES: '4000' },
    }).exited;
    expect(code).toBe(0);
    expect(await store.getRun('pod-capped')).toMatchObject({
      status: 'success',
      recording: { exchanges: 1, truncated: true },
    });
    expect((await store.getRunRecording('pod-capped'))?.leftOut).toMatchObject({
      exchanges: 1,
      steps: ['who'],
    });
  }, 60_000);

  it('records nothing for a run that does not ask', async () => {
    const token = await api.startRun('pod-plain', TOOL, { systemIds: ['crm'] });
    const { code } = await startRunnerProcess({ url: api.url, runId: 'pod-plain', token, dir }).exited;
    expect(code).toBe(0);
    expect((await store.getRun('pod-plain'))?.recording).toBeUndefined();
    expect(await store.getRunRecording('pod-plain')).toBeUndefined();
  }, 60_000);

  it('sends the result again without the exchanges when the recording makes it too large for the internal API', async () => {
    const small = createInternalApi(store, { bodyLimitBytes: 64 * 1024 });
    await small.listen();
    try {
      small.systems.set('crm/prod', api.systems.get('crm/prod')!);
      // Each item's answer is an error whose body (16 KiB read) is recorded; the step data keeps 1000 characters.
      target.route('GET', '/refused', { status: 400, body: 'z'.repeat(20_000) });
      const token = await small.startRun(
        'pod-too-large-to-send',
        {
          id: 'refused',
          steps: [
            {
              id: 'each',
              failureBehavior: 'continue',
              dataSelector: '() => [1, 2, 3, 4, 5, 6]',
              config: { systemId: 'crm', url: '/refused' },
            },
          ],
        },
        { systemIds: ['crm'], options: { record: true } },
      );
      const { code } = await startRunnerProcess({
        url: small.url,
        runId: 'pod-too-large-to-send',
        token,
        dir,
      }).exited;
      expect(code).toBe(0);
      expect(await store.getRun('pod-too-large-to-send')).toMatchObject({
        status: 'success',
        recording: { exchanges: 0, truncated: true },
      });
      expect((await store.getRunRecording('pod-too-large-to-send'))?.leftOut).toMatchObject({
        exchanges: 6,
        steps: ['each'],
      });
    } finally {
      await small.close();
    }
  }, 60_000);
});
