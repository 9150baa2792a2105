import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run, StepResult } from '../../../contract/api/run.ts';
import { callOk, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

type Results = { data: { stepResults: StepResult[] } };

const target = useHttpTarget();
const api = useTestApi();

/** What the sink answers: 400 fails the step that posts to it (no retry), anything else echoes. */
let sinkStatus = 400;

/**
 * fetch (GET /source) → send (POST /sink with fetch's items and the input `tag`) → shape (a transform).
 * `send` fails while the sink answers 400; `sinkPath` lets a test break the tool instead.
 */
function pipeline(id: string, opts: { sinkPath?: string; sourceQuery?: Record<string, string> } = {}) {
  return {
    id,
    steps: [
      {
        id: 'fetch',
        config: {
          systemId: 'target',
          url: '/source',
          ...(opts.sourceQuery ? { queryParams: opts.sourceQuery } : {}),
        },
      },
      {
        id: 'send',
        config: {
          systemId: 'target',
          url: opts.sinkPath ?? '/sink',
          method: 'POST',
          body: { items: '<<(s) => s.fetch.data.items>>', tag: '<<tag>>' },
        },
      },
      {
        id: 'shape',
        config: {
          type: 'transform',
          transformCode: '(s) => ({ stored: s.send.data.stored, tag: s.send.data.tag })',
        },
      },
    ],
  };
}

async function createTool(
  definition: ReturnType<typeof pipeline> & { outputTransform?: string },
): Promise<void> {
  await callOk(api, 'POST', '/v1/tools', definition);
}

/** A run of the tool that fails at `send` (the sink answers 400). */
async function failedRun(toolId: string, inputs: Record<string, string> = { tag: 'a' }): Promise<Run> {
  sinkStatus = 400;
  const run = await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: { inputs } });
  expect(run.body).toMatchObject({ status: 'failed' });
  expect(run.body.stepResults?.map((s) => [s.stepId, s.success])).toEqual([
    ['fetch', true],
    ['send', false],
  ]);
  return run.body;
}

/** Polls until the condition holds (10 s at most). */
async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('the condition did not hold within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function resume<T = Run>(runId: string, body?: unknown, key?: string) {
  return api.call<T>('POST', `/v1/runs/${runId}/resume`, {
    ...(body !== undefined ? { body } : {}),
    ...(key !== undefined ? { key } : {}),
  });
}

beforeAll(async () => {
  target.route('GET', '/source', { body: { items: [1, 2, 3] } });
  target.route('POST', '/sink', (req) => {
    const body = req.json as { items: number[]; tag: string };
    return sinkStatus === 400
      ? { status: 400, body: { message: 'sink refused' } }
      : { body: { stored: body.items.length, tag: body.tag } };
  });
  await callOk(api, 'POST', '/v1/systems', { id: 'target', name: 'Target', url: target.url });
});

describe('POST /v1/runs/{runId}/resume', () => {
  it('starts at the failed step with the current definition: step 1 is not called again and its data reaches step 2', async () => {
    await createTool(pipeline('broken-sink', { sinkPath: '/missing' }));
    sinkStatus = 200;
    const failed = await api.call<Run>('POST', '/v1/tools/broken-sink/run', {
      body: { inputs: { tag: 'a' } },
    });
    expect(failed.body.status).toBe('failed');
    const sourceCalls = target.count('/source');
    const sinkCalls = target.count('/sink');

    // The fix: send posts where it should. fetch is defined as it was when it ran.
    await callOk(api, 'PUT', '/v1/tools/broken-sink', { steps: pipeline('broken-sink').steps });
    const resumed = await resume(failed.body.runId);

    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({
      status: 'success',
      resumedFrom: failed.body.runId,
      data: { stored: 3, tag: 'a' },
      toolPayload: { tag: 'a' },
    });
    expect(resumed.body.runId).not.toBe(failed.body.runId);
    expect(target.count('/source')).toBe(sourceCalls);
    expect(target.count('/sink')).toBe(sinkCalls + 1);
    expect(target.requests.at(-1)?.json).toEqual({ items: [1, 2, 3], tag: 'a' });
    const steps = resumed.body.stepResults ?? [];
    expect(steps.map((s) => [s.stepId, s.success, s.reusedFrom])).toEqual([
      ['fetch', true, failed.body.runId],
      ['send', true, undefined],
      ['shape', true, undefined],
    ]);
    expect(steps[0]?.data).toEqual({ items: [1, 2, 3] });

    // The run record and its stored results say the same.
    const view = await callOk<Run>(api, 'GET', `/v1/runs/${resumed.body.runId}`);
    expect(view.resumedFrom).toBe(failed.body.runId);
    const results = await callOk<Results>(api, 'GET', `/v1/runs/${resumed.body.runId}/results`);
    expect(results.data.stepResults[0]).toMatchObject({ stepId: 'fetch', reusedFrom: failed.body.runId });
    // The original stays as it was.
    expect((await callOk<Run>(api, 'GET', `/v1/runs/${failed.body.runId}`)).status).toBe('failed');
  });

  it('runs a changed earlier step again, and every step after it', async () => {
    await createTool(pipeline('changed-fetch'));
    const failed = await failedRun('changed-fetch');
    const sourceCalls = target.count('/source');
    sinkStatus = 200;
    // Reordered keys alone change nothing: the step hash is stable over key order.
    const [fetch, ...rest] = pipeline('changed-fetch').steps;
    const reordered = { config: fetch?.config, id: fetch?.id };
    await callOk(api, 'PUT', '/v1/tools/changed-fetch', { steps: [reordered, ...rest] });
    const same = await resume(failed.runId);
    expect(same.body.stepResults?.[0]?.reusedFrom).toBe(failed.runId);
    expect(target.count('/source')).toBe(sourceCalls);

    await callOk(api, 'PUT', '/v1/tools/changed-fetch', {
      steps: pipeline('changed-fetch', { sourceQuery: { fresh: 'yes' } }).steps,
    });
    const resumed = await resume(failed.runId);
    expect(resumed.body.status).toBe('success');
    expect(target.count('/source')).toBe(sourceCalls + 1);
    expect(resumed.body.stepResults?.map((s) => s.reusedFrom)).toEqual([undefined, undefined, undefined]);
  });

  it("keeps the original run's inputs unless the body gives new ones", async () => {
    await createTool(pipeline('inputs'));
    const failed = await failedRun('inputs', { tag: 'first' });
    sinkStatus = 200;

    const kept = await resume(failed.runId);
    expect(kept.body).toMatchObject({ status: 'success', toolPayload: { tag: 'first' } });
    expect(kept.body.data).toEqual({ stored: 3, tag: 'first' });

    const replaced = await resume(failed.runId, { payload: { tag: 'second' } });
    expect(replaced.body).toMatchObject({ status: 'success', toolPayload: { tag: 'second' } });
    expect(replaced.body.data).toEqual({ stored: 3, tag: 'second' });
    const asInputs = await resume(failed.runId, { inputs: { tag: 'third' } });
    expect(asInputs.body.data).toEqual({ stored: 3, tag: 'third' });

    const both = await resume<ErrorBody>(failed.runId, { payload: {}, inputs: {} });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toContain('payload or as inputs, not both');
  });

  it("runs in the original run's mode (dev or prod) unless options.mode says otherwise", async () => {
    await createTool(pipeline('in-dev'));
    sinkStatus = 400;
    const failed = await callOk<Run>(api, 'POST', '/v1/tools/in-dev/run', {
      inputs: { tag: 'd' },
      options: { mode: 'dev' },
    });
    expect(failed).toMatchObject({ status: 'failed', executionMode: 'dev' });
    sinkStatus = 200;
    expect((await resume(failed.runId)).body).toMatchObject({ status: 'success', executionMode: 'dev' });
    const inProd = await resume(failed.runId, { options: { mode: 'prod' } });
    expect(inProd.body).toMatchObject({ status: 'success', executionMode: 'prod' });
  });

  it('resumes a resumed run, still reusing what the first run fetched', async () => {
    await createTool(pipeline('twice'));
    const first = await failedRun('twice');
    const sourceCalls = target.count('/source');
    const second = await resume(first.runId);
    expect(second.body).toMatchObject({ status: 'failed', resumedFrom: first.runId });
    expect(second.body.stepResults?.[0]?.reusedFrom).toBe(first.runId);

    sinkStatus = 200;
    const third = await resume(second.body.runId);
    expect(third.body).toMatchObject({ status: 'success', resumedFrom: second.body.runId });
    // Named after the run where the step executed.
    expect(third.body.stepResults?.[0]?.reusedFrom).toBe(first.runId);
    expect(target.count('/source')).toBe(sourceCalls);
  });

  it('resumes asynchronously (options.async), reusing the stored results in the background run', async () => {
    await createTool(pipeline('in-background'));
    const failed = await failedRun('in-background');
    const sourceCalls = target.count('/source');
    sinkStatus = 200;
    const accepted = await resume(failed.runId, { options: { async: true } });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'running', resumedFrom: failed.runId });
    const done = await waitForRun<Run>(api, accepted.body.runId);
    expect(done).toMatchObject({ status: 'success', resumedFrom: failed.runId });
    const results = await callOk<Results>(api, 'GET', `/v1/runs/${accepted.body.runId}/results`);
    expect(results.data.stepResults.map((s) => [s.stepId, s.reusedFrom])).toEqual([
      ['fetch', failed.runId],
      ['send', undefined],
      ['shape', undefined],
    ]);
    expect(target.count('/source')).toBe(sourceCalls);
  });

  it('reuses every step when only the output transform failed, and runs the fixed one', async () => {
    await createTool({ ...pipeline('bad-output'), outputTransform: '(s) => s.shape.missing.field' });
    sinkStatus = 200;
    const failed = await api.call<Run>('POST', '/v1/tools/bad-output/run', {
      body: { inputs: { tag: 'o' } },
    });
    expect(failed.body).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('outputTransform'),
    });
    const [sourceCalls, sinkCalls] = [target.count('/source'), target.count('/sink')];
    await callOk(api, 'PUT', '/v1/tools/bad-output', { outputTransform: '(s) => s.shape.data.tag' });
    const resumed = await resume(failed.body.runId);
    expect(resumed.body).toMatchObject({ status: 'success', data: 'o' });
    expect(resumed.body.stepResults?.map((s) => s.reusedFrom)).toEqual([
      failed.body.runId,
      failed.body.runId,
      failed.body.runId,
    ]);
    expect([target.count('/source'), target.count('/sink')]).toEqual([sourceCalls, sinkCalls]);
  });

  it('resumes a run cancelled while it executed, from the step the cancel stopped', async () => {
    const held = target.hold('/wait');
    await callOk(api, 'POST', '/v1/tools', {
      id: 'cancelled',
      steps: [
        { id: 'fetch', config: { systemId: 'target', url: '/source' } },
        { id: 'wait', config: { systemId: 'target', url: '/wait' } },
      ],
      outputTransform: '(s) => ({ items: s.fetch.data.items, waited: s.wait.data })',
    });
    const started = await callOk<Run>(api, 'POST', '/v1/tools/cancelled/run', { options: { async: true } });
    await until(() => held.length === 1);
    expect(await callOk<Run>(api, 'POST', `/v1/runs/${started.runId}/cancel`)).toMatchObject({
      status: 'aborted',
    });
    // The execution stops and keeps the steps it finished (its terminal write lost to the cancel).
    await until(async () => (await api.embedded.store.getStepResults(started.runId)).length === 2);
    const sourceCalls = target.count('/source');

    const resuming = resume(started.runId);
    await until(() => held.length === 2);
    held[1]?.writeHead(200, { 'content-type': 'application/json' }).end('{"done": true}');
    const resumed = await resuming;
    expect(resumed.body).toMatchObject({
      status: 'success',
      resumedFrom: started.runId,
      data: { items: [1, 2, 3], waited: { done: true } },
    });
    expect(resumed.body.stepResults?.map((s) => [s.stepId, s.reusedFrom])).toEqual([
      ['fetch', started.runId],
      ['wait', undefined],
    ]);
    expect(target.count('/source')).toBe(sourceCalls);
  });

  it('answers a repeated resume with the same runId with the same run (idempotency)', async () => {
    await createTool(pipeline('once'));
    const failed = await failedRun('once');
    sinkStatus = 200;
    const sinkCalls = target.count('/sink');
    const first = await resume(failed.runId, { runId: 'resume-once' });
    const again = await resume(failed.runId, { runId: 'resume-once' });
    expect(first.body).toMatchObject({ runId: 'resume-once', status: 'success' });
    expect(again.body).toMatchObject({ runId: 'resume-once', status: 'success', resumedFrom: failed.runId });
    expect(target.count('/sink')).toBe(sinkCalls + 1);
    const other = await resume<ErrorBody>(failed.runId, { runId: 'resume-once', inputs: { tag: 'z' } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('KG_ERR_RUN_ID_CONFLICT');
  });
});

describe('what cannot be resumed', () => {
  it('refuses a run that succeeded', async () => {
    await createTool(pipeline('fine'));
    sinkStatus = 200;
    const run = await callOk<Run>(api, 'POST', '/v1/tools/fine/run', { inputs: { tag: 'a' } });
    const answer = await resume<ErrorBody>(run.runId);
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('KG_ERR_RUN_NOT_RESUMABLE');
    expect(answer.body.error.message).toContain('succeeded');
  });

  it('refuses a run whose tool was deleted', async () => {
    await createTool(pipeline('doomed'));
    const failed = await failedRun('doomed');
    await callOk(api, 'DELETE', '/v1/tools/doomed');
    const answer = await resume<ErrorBody>(failed.runId);
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({ code: 'KG_ERR_RESUME_TOOL_GONE' });
    expect(answer.body.error.message).toContain("tool 'doomed' no longer exists or was never saved");
  });

  it('holds the caller to the rules of running the tool: its tools and the runs:execute scope', async () => {
    await createTool(pipeline('guarded'));
    await createTool(pipeline('elsewhere'));
    const failed = await failedRun('guarded');
    const otherTool = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'elsewhere only',
      toolIds: ['elsewhere'],
    });
    const hidden = await resume<ErrorBody>(failed.runId, {}, otherTool.key);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('KG_ERR_RUN_NOT_FOUND');
    const readOnly = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'reader',
      scopes: ['runs:read'],
    });
    expect((await resume(failed.runId, {}, readOnly.key)).status).toBe(403);
    const allowed = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'guarded runner',
      toolIds: ['guarded'],
    });
    expect((await resume(failed.runId, {}, allowed.key)).status).toBe(200);
  });

  // Last in this file: the retention sweep removes the results of every run stored before now.
  it('refuses a run whose step results retention removed', async () => {
    await createTool(pipeline('expired'));
    const failed = await failedRun('expired');
    await api.embedded.store.pruneRunOutputs({
      before: new Date(Date.now() + 60_000).toISOString(),
      limit: 1000,
    });
    const answer = await resume<ErrorBody>(failed.runId);
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('KG_ERR_RUN_RESULTS_NOT_STORED');
    expect(answer.body.error.message).toContain('KUBEGLUE_RESULT_RETENTION');
  });
});

describe('a run whose results were stored without their data', () => {
  const small = useTestApi({ KUBEGLUE_MAX_RESULT_BYTES: '3000', KUBEGLUE_MAX_STEP_DATA_BYTES: '2500' });

  it('is refused: the steps to reuse have no stored data', async () => {
    const big = (letter: string) => ({
      config: { type: 'transform', transformCode: `() => '${letter}'.repeat(2000)` },
    });
    await callOk(small, 'POST', '/v1/tools', {
      id: 'bulky',
      steps: [
        { id: 'one', ...big('x') },
        { id: 'two', ...big('y') },
      ],
    });
    const run = await small.call<Run>('POST', '/v1/tools/bulky/run', { body: {} });
    expect(run.body.status).toBe('failed');
    expect(run.body.error).toContain('KUBEGLUE_MAX_RESULT_BYTES');
    const answer = await small.call<ErrorBody>('POST', `/v1/runs/${run.body.runId}/resume`, { body: {} });
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('KG_ERR_RUN_RESULTS_NOT_STORED');
    expect(answer.body.error.message).toContain('step one was stored without its data');
  });
});
