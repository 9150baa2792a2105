import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../../config/config.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { INTERNAL_PATHS } from '../../../contract/wire/runner.ts';
import type { Store } from '../../../store/index.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { freeLoopbackPort } from '../../support/os.ts';
import { type RunnerProcess, startRunnerProcess } from '../../support/runner-process.ts';
import { openTestStore } from '../../support/store.ts';

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;
let target: HttpTarget;
let dir: string;
/** PUT …/result requests the API answered, by run id. */
const resultPuts = new Map<string, number>();
/** For each run, the step results the store held when the target got the request of its step 'second'. */
const storedBeforeSecond = new Map<string, string[]>();
const children = new Set<ChildProcess>();

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-pod-'));
  target = await startHttpTarget();
  target.route('GET', '/first', { body: { n: 1, note: 'response-marker' } });
  target.route('GET', '/second', async (req) => {
    const runId = req.query.find(([name]) => name === 'run')?.[1] ?? '';
    // Held until the first step's result is stored (or 5 s), which shows it was stored while the run went on.
    for (let waited = 0; waited < 5_000; waited += 50) {
      if ((await store.getStepResults(runId)).length > 0) break;
      await sleep(50);
    }
    storedBeforeSecond.set(
      runId,
      (await store.getStepResults(runId)).map((step) => step.stepId),
    );
    return { body: { n: 2 } };
  });
  // Never answers: the run stays in this step until it is aborted.
  target.route('GET', '/hang', () => undefined);
  api = createInternalApi(store);
  api.app.addHook('onResponse', async (request) => {
    const { runId } = request.params as { runId?: string };
    if (request.method === 'PUT' && runId && request.url === INTERNAL_PATHS.result(runId)) {
      resultPuts.set(runId, (resultPuts.get(runId) ?? 0) + 1);
    }
  });
  await api.listen();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await api?.close();
  await target?.stop();
  await closeStore?.();
  await rm(dir, { recursive: true, force: true });
});

function tool(...paths: string[]): JsonObject {
  return {
    id: 'pod-tool',
    steps: paths.map((path, index) => ({
      id: ['first', 'second', 'third'][index] ?? `step${index}`,
      config: { url: `${target.url}${path}`, queryParams: { run: '<<runId>>', marker: '<<marker>>' } },
    })),
  };
}

/** A runner process against this file's API; killed at the end if still running. */
function startRunner(
  runId: string,
  token: string,
  env: Record<string, string> = {},
  url = api.url,
): RunnerProcess {
  const runner = startRunnerProcess({ url, runId, token, dir, env });
  children.add(runner.child);
  void runner.exited.then(() => children.delete(runner.child));
  return runner;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await sleep(50)) if (await check()) return;
  throw new Error(`timed out waiting until ${what}`);
}

describe('runner pod', () => {
  it('executes a run end to end: step results as they come, the result once, a summary, exit 0', async () => {
    const token = await api.startRun('pod-ok', tool('/first', '/second'), {
      inputs: { runId: 'pod-ok', marker: 'payload-marker' },
      credentials: { secret: 'runtime-credential-value' },
    });
    const { code, output, summary } = await startRunner('pod-ok', token).exited;
    expect(code).toBe(0);
    expect(summary).toMatchObject({
      v: 1,
      runId: 'pod-ok',
      status: 'success',
      resultStored: true,
      steps: [
        { id: 'first', success: true },
        { id: 'second', success: true },
      ],
    });
    expect(summary?.durationMs).toBeGreaterThan(0);
    expect(storedBeforeSecond.get('pod-ok')).toEqual(['first']);
    expect(resultPuts.get('pod-ok')).toBe(1);
    expect(await store.getRun('pod-ok')).toMatchObject({ status: 'success' });
    expect(await store.getRunResult('pod-ok')).toMatchObject({ success: true, data: { n: 2 } });
    expect((await store.getStepResults('pod-ok')).map((step) => step.data)).toEqual([
      { n: 1, note: 'response-marker' },
      { n: 2 },
    ]);
    expect(api.dropped).toContain('pod-ok');
    // Step ids, timings and statuses only: no token, no credential, no payload.
    expect(output).toMatch(/step first succeeded in \d+ ms/);
    for (const secret of [token, 'runtime-credential-value', 'payload-marker', 'response-marker']) {
      expect(output).not.toContain(secret);
    }
  });

  it('exits 1 with the failure stored when a step fails', async () => {
    const token = await api.startRun('pod-fail', tool('/first', '/missing'), {
      inputs: { runId: 'pod-fail', marker: 'm' },
    });
    const { code, summary } = await startRunner('pod-fail', token).exited;
    expect(code).toBe(1);
    expect(summary).toMatchObject({ status: 'failed', resultStored: true });
    expect(summary?.error).toMatch(/Step second failed/);
    expect(await store.getRun('pod-fail')).toMatchObject({ status: 'failed' });
  });

  it('stops when a heartbeat answers cancel, leaving the run aborted with its partial step results', async () => {
    const token = await api.startRun('pod-cancel', tool('/first', '/hang'), {
      inputs: { runId: 'pod-cancel', marker: 'm' },
    });
    const runner = startRunner('pod-cancel', token);
    await until('the first step is stored and the second hangs', async () => {
      const steps = await store.getStepResults('pod-cancel');
      return (
        steps.length === 1 &&
        target.requests.some((r) => r.path === '/hang' && r.query.some(([, v]) => v === 'pod-cancel'))
      );
    });
    await store.abortRun('pod-cancel', { error: 'Run was cancelled', completedAt: new Date().toISOString() });
    const { code, output, summary } = await runner.exited;
    expect(code).toBe(1);
    expect(output).toContain('stopping: the run was cancelled');
    expect(summary).toMatchObject({ status: 'aborted', resultStored: true });
    expect(await store.getRun('pod-cancel')).toMatchObject({ status: 'aborted', error: 'Run was cancelled' });
    expect(await store.getStepResults('pod-cancel')).toEqual([
      { stepId: 'first', success: true, data: { n: 1, note: 'response-marker' } },
    ]);
  });

  it('on SIGTERM (its Pod deleted or evicted) stops, stores no result and leaves the outcome to the operator', async () => {
    const token = await api.startRun('pod-term', tool('/first', '/hang'), {
      inputs: { runId: 'pod-term', marker: 'm' },
    });
    const runner = startRunner('pod-term', token);
    await until('the second step hangs', async () =>
      target.requests.some((r) => r.path === '/hang' && r.query.some(([, v]) => v === 'pod-term')),
    );
    runner.child.kill('SIGTERM');
    const { code, output, summary } = await runner.exited;
    expect(code).toBe(1);
    // Nobody cancelled it: not "aborted" in the store; the operator starts a read-only run over, or fails it.
    expect(summary).toMatchObject({
      status: 'aborted',
      resultStored: false,
      interrupted: true,
      error: 'The runner was stopped by SIGTERM before the run finished',
    });
    expect(output).toContain('stopped from outside: no result stored');
    expect(resultPuts.get('pod-term')).toBeUndefined();
    expect(await store.getRun('pod-term')).toMatchObject({ status: 'running' });
  });

  it('retries while the internal API is down at start', async () => {
    const token = await api.startRun('pod-late-api', tool('/first'), {
      inputs: { runId: 'pod-late-api', marker: 'm' },
    });
    const port = await freeLoopbackPort();
    const late = createInternalApi(store);
    const runner = startRunner('pod-late-api', token, {}, `http://127.0.0.1:${port}`);
    try {
      // Listening only once the runner found nobody there and said so: on a loaded machine its first
      // attempt can come seconds after it was started.
      await until(
        'the runner retried the order',
        async () => /order: .*retrying in \d+ ms/.test(runner.output()),
        30_000,
      );
      await late.listen(port);
      const { code, output, summary } = await runner.exited;
      expect(output).toMatch(/order: .*retrying in \d+ ms/);
      expect(code).toBe(0);
      expect(summary).toMatchObject({ status: 'success', resultStored: true });
      expect((await store.getRun('pod-late-api'))?.status).toBe('success');
    } finally {
      await late.close();
    }
  });

  it('says resultStored: false and exits 1 when the result cannot be put', async () => {
    const token = await api.startRun('pod-no-put', tool('/first'), {
      inputs: { runId: 'pod-no-put', marker: 'm' },
    });
    const broken = createInternalApi(store);
    broken.app.addHook('onRequest', async (request, reply) => {
      if (request.method === 'PUT') return reply.status(503).send({ error: { message: 'Unavailable' } });
    });
    await broken.listen();
    try {
      const { code, output, summary } = await startRunner(
        'pod-no-put',
        token,
        { KUBEGLUE_RUNNER_RESULT_RETRY_MS: '1500' },
        broken.url,
      ).exited;
      expect(code).toBe(1);
      expect(summary).toMatchObject({ runId: 'pod-no-put', status: 'success', resultStored: false });
      expect(output).toMatch(/result not stored: PUT \S+ 503 Unavailable/);
      expect((await store.getRun('pod-no-put'))?.status).toBe('running');
      expect(await store.getStepResults('pod-no-put')).toHaveLength(1);
    } finally {
      await broken.close();
    }
  });

  it('exits 1 without running anything when its token is refused', async () => {
    await api.startRun('pod-bad-token', tool('/first'), { inputs: { runId: 'pod-bad-token', marker: 'm' } });
    const { code, output, summary } = await startRunner('pod-bad-token', 'not-the-token').exited;
    expect(code).toBe(1);
    expect(output).toMatch(/no run order: GET \S+ 401/);
    expect(summary).toMatchObject({ status: 'failed', resultStored: false });
    expect(target.requests.some((r) => r.query.some(([, v]) => v === 'pod-bad-token'))).toBe(false);
    expect((await store.getRun('pod-bad-token'))?.status).toBe('running');
  });

  it('refuses private addresses by default, as a Pod in the cluster must', async () => {
    const token = await api.startRun('pod-egress', tool('/first'), {
      inputs: { runId: 'pod-egress', marker: 'm' },
    });
    const { code, summary } = await startRunner('pod-egress', token, { KUBEGLUE_EGRESS_ALLOW: '' }).exited;
    expect(code).toBe(1);
    expect(summary).toMatchObject({
      status: 'failed',
      resultStored: true,
      steps: [{ id: 'first', success: false }],
    });
    expect(target.requests.some((r) => r.query.some(([, v]) => v === 'pod-egress'))).toBe(false);
  });

  it('exits 1 at once when its environment is incomplete', async () => {
    const { code, output } = await startRunner('pod-no-env', 'token', {
      [SETTINGS.tree.internalUrl.name]: 'not a url',
    }).exited;
    expect(code).toBe(1);
    expect(output).toMatch(/invalid runner environment: KUBEGLUE_INTERNAL_URL/);
  });
});
