/**
 * A resumed run on the runner Pod path (POST /v1/runs/{runId}/resume, then an async run on Kubernetes): the
 * internal API's order carries the reused step results of the resumed run, the real runner process does not
 * execute those steps, gives their data to the next ones, and reports them first, marked reusedFrom, in its
 * events and its result, on SQLite and Postgres.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepResult } from '../../../contract/api/run.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { useInternalApi } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { DRIVERS, runningRun } from '../../support/store.ts';

let target: HttpTarget;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-resume-'));
  target = await startHttpTarget();
  target.route('GET', '/source', { body: { items: [1, 2, 3] } });
  target.route('POST', '/sink', (req) => ({ body: { got: req.json } }));
});

afterAll(async () => {
  await target?.stop();
  await rm(dir, { recursive: true, force: true });
});

function pipeline(id: string): JsonObject {
  return {
    id,
    steps: [
      { id: 'fetch', config: { url: `${target.url}/source` } },
      {
        id: 'send',
        config: {
          url: `${target.url}/sink`,
          method: 'POST',
          body: { items: '<<(s) => s.fetch.data.items>>' },
        },
      },
    ],
    outputTransform: '(s) => s.send.data.got',
  };
}

describe.each(DRIVERS)('a resumed run on a runner pod on %s', (driver) => {
  const { store, api } = useInternalApi(driver);

  it('does not execute the reused step, passes its data on and reports it first', async () => {
    const tool = pipeline(`resume-${driver}`);
    const origin = `origin-${driver}`;
    // The run that failed at send, as a run stores its results.
    await store.insertRun(runningRun(origin, { toolId: String(tool.id), tool }));
    const stored: StepResult[] = [
      { stepId: 'fetch', success: true, data: { items: [7, 8] } },
      { stepId: 'send', success: false, data: null, error: 'sink refused' },
    ];
    await store.finishRun(origin, {
      status: 'failed',
      error: 'Step send failed: sink refused',
      completedAt: new Date().toISOString(),
      durationMs: 1,
      stepResults: stored,
      result: { success: false, error: 'Step send failed: sink refused' },
    });

    const runId = `resumed-${driver}`;
    const sourceCalls = target.count('/source');
    const token = await api.startRun(runId, tool, { resume: { from: origin, reusedSteps: 1 } });
    const { code, output } = await startRunnerProcess({ url: api.url, runId, token, dir }).exited;
    expect(code, output).toBe(0);

    expect(target.count('/source')).toBe(sourceCalls);
    expect(await store.getRun(runId)).toMatchObject({ status: 'success', resumedFrom: origin });
    const result = await store.getRunResult(runId);
    expect(result?.data).toEqual({ items: [7, 8] });
    expect(result?.stepResults.map((s) => [s.stepId, s.success, (s as StepResult).reusedFrom])).toEqual([
      ['fetch', true, origin],
      ['send', true, undefined],
    ]);
  });
});
