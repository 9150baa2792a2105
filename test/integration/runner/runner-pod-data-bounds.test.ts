/**
 * Issue 19, item 6, the runner Pod path: the runner puts its result to the internal API, and bounds it
 * like a pool worker does (KUBEGLUE_MAX_STEP_DATA_BYTES / KUBEGLUE_MAX_RESULT_BYTES from the operator).
 */
import { describe, expect, it } from 'vitest';
import { useTempDir } from '../../support/fixture.ts';
import { useInternalApi } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';

const { store, api } = useInternalApi('sqlite');
const temp = useTempDir('kubeglue-runner-bounds-');

const blob = (bytes: number) => ({
  id: 'blob-tool',
  steps: [{ id: 'blob', config: { type: 'transform', transformCode: `() => "x".repeat(${bytes - 2})` } }],
});

describe('runner pod data bounds', () => {
  it('fails a run whose step data is larger than KUBEGLUE_MAX_STEP_DATA_BYTES and stores no data', async () => {
    const token = await api.startRun('pod-too-large', blob(5000));
    const runner = startRunnerProcess({
      url: api.url,
      runId: 'pod-too-large',
      token,
      dir: temp.path,
      env: { KUBEGLUE_MAX_STEP_DATA_BYTES: '4096' },
    });
    const { code, summary } = await runner.exited;
    expect(code).toBe(1);
    expect(summary).toMatchObject({ status: 'failed', resultStored: true });
    const message =
      "Step blob failed: the step's data is 5000 bytes of JSON, more than the limit of 4096 bytes " +
      '(KUBEGLUE_MAX_STEP_DATA_BYTES); return less data, or raise KUBEGLUE_MAX_STEP_DATA_BYTES';
    expect(await store.getRun('pod-too-large')).toMatchObject({ status: 'failed', error: message });
    expect(await store.getRunResult('pod-too-large')).toMatchObject({ data: null });
  }, 60_000);

  it('stores a result within the bounds as it is', async () => {
    const token = await api.startRun('pod-fits', blob(4096));
    const { code } = await startRunnerProcess({
      url: api.url,
      runId: 'pod-fits',
      token,
      dir: temp.path,
      env: { KUBEGLUE_MAX_STEP_DATA_BYTES: '4096' },
    }).exited;
    expect(code).toBe(0);
    expect(await store.getRunResult('pod-fits')).toMatchObject({ data: 'x'.repeat(4094) });
  }, 60_000);
});
