/**
 * The same ToolRun controller in the embedded deployment: the PoolLauncher executes runs in the worker
 * pool; admission, spec.cancel, the finalizer and the status mirror behave as with runner Pods.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOperatorSettings } from '../../../config/config.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { RunReason, ToolRunConditionType } from '../../../contract/reasons.ts';
import type { ToolRunResource } from '../../../contract/resources/kinds.ts';
import { RECORDED_FINALIZER } from '../../../contract/resources/labels.ts';
import { createEmbeddedKubeglueResources, type KubeglueResources } from '../../../kube/resources/index.ts';
import { NO_EVENTS } from '../../../operator/events.ts';
import { PoolLauncher } from '../../../operator/launchers/pool.ts';
import { ToolRunController } from '../../../operator/toolrun/controller.ts';
import { toolRunFor, toolRunName } from '../../../runs/toolrun.ts';
import { useWorkerPool } from '../../support/engine.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { runningRun, useTestStore } from '../../support/store.ts';

const target = useHttpTarget();
const { store } = useTestStore('sqlite');
const pool = useWorkerPool({ workers: 1 });
let resources: KubeglueResources;
let controller: ToolRunController;
let held: ServerResponse[] = [];

beforeAll(async () => {
  held = target.hold('/hold');
  resources = createEmbeddedKubeglueResources(store.resources, 'default');
  const launcher = new PoolLauncher({
    store,
    pool,
    executor: 'test-executor',
    resolveSystems: async () => [],
    takeCredentials: async () => undefined,
    dropCredentials: async () => {},
    track: () => () => {},
  });
  controller = new ToolRunController({
    toolRuns: resources.toolRuns,
    store,
    launcher,
    events: NO_EVENTS,
    settings: defaultOperatorSettings({ maxAsyncRuns: 1 }),
  });
  await controller.start();
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await controller?.stop();
});

async function startRun(runId: string, step: JsonObject): Promise<void> {
  const tool = { id: 't', steps: [{ id: 'a', config: step }] };
  const run = runningRun(runId, { toolId: 't', tool, options: { async: true } });
  await store.insertRun(run);
  await resources.toolRuns.create(toolRunFor(run, 'default'));
}

const get = (runId: string) => resources.toolRuns.get(toolRunName(runId));
const condition = (toolRun: ToolRunResource | undefined, type: string) =>
  toolRun?.status?.conditions?.find((c) => c.type === type);

describe('the ToolRun controller with the PoolLauncher', () => {
  it('executes a run in the pool, mirrors the outcome and releases the finalizer', async () => {
    await startRun('pool-ok', { type: 'transform', transformCode: '(s) => ({ n: 42 })' });
    await expect
      .poll(async () => (await get('pool-ok'))?.status?.status, { timeout: 15_000 })
      .toBe('success');
    const toolRun = await get('pool-ok');
    expect(toolRun?.metadata.finalizers ?? []).not.toContain(RECORDED_FINALIZER);
    expect(toolRun?.status).toMatchObject({
      reason: RunReason.Succeeded,
      attempt: 1,
      steps: [{ id: 'a', success: true }],
    });
    expect(toolRun?.status?.podName).toBeUndefined();
    expect((await store.getRunResult('pool-ok'))?.data).toEqual({ n: 42 });
  });

  it('queues a second run behind the limit, and cancels through spec.cancel at once', async () => {
    await startRun('pool-hold', { url: `${target.url}/hold` });
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(1);
    await startRun('pool-queued', { type: 'transform', transformCode: '(s) => 1' });
    await expect
      .poll(async () => condition(await get('pool-queued'), ToolRunConditionType.Admitted)?.reason, {
        timeout: 10_000,
      })
      .toBe('AdmissionLimit');
    const holding = (await get('pool-hold')) as ToolRunResource;
    await resources.toolRuns.update({ ...holding, spec: { ...holding.spec, cancel: true } });
    await expect
      .poll(async () => (await get('pool-hold'))?.status?.status, { timeout: 10_000 })
      .toBe('aborted');
    expect(await store.getRun('pool-hold')).toMatchObject({ status: 'aborted', error: 'Run was cancelled' });
    // The slot freed: the queued run is admitted and runs.
    await expect
      .poll(async () => (await get('pool-queued'))?.status?.status, { timeout: 15_000 })
      .toBe('success');
  });
});
