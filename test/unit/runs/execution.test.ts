/**
 * The execution layer's rules in one place (runs/execution/), on the embedded store (SQLite in memory) and
 * the in-process live-event hub: the order every transport gets, a runner's batches applied once, step
 * timings from the engine's clock, and the first terminal write winning with its effects.
 */
import { describe, expect, it } from 'vitest';
import { KG_ERR_INTERNAL, KG_ERR_RUN_SYSTEM_MISSING } from '../../../contract/api/errors.ts';
import type { RunLogEvent, StepResult } from '../../../contract/api/run.ts';
import { Tool } from '../../../contract/api/tool.ts';
import type { EngineEvent, EngineResult } from '../../../engine/types.ts';
import {
  buildOrder,
  failedFinish,
  failedResult,
  finishRun,
  finishUnrecorded,
  OrderRefusal,
  type OrderSources,
  RunnerReports,
  RunReport,
  storedOutcome,
} from '../../../runs/execution/index.ts';
import { RunEventHub } from '../../../runs/run-events.ts';
import { hashRunToken, newRunToken } from '../../../runs/run-token.ts';
import type { StoredRun } from '../../../store/index.ts';
import { runningRun, useTestStore } from '../../support/store.ts';

const { store } = useTestStore('sqlite');

const TOOL = {
  id: 'tool-a',
  steps: [{ id: 'first', config: { type: 'transform', transformCode: '() => 1' } }],
};
const T0 = Date.parse('2026-03-01T10:00:00.000Z');

let serial = 0;
async function started(overrides: Partial<StoredRun> = {}): Promise<StoredRun> {
  const run = runningRun(`exec-${++serial}`, {
    tool: TOOL,
    toolPayload: { q: 'x' },
    userId: 'key-1',
    traceId: `trace-${serial}`,
    ...overrides,
  });
  await store.insertRun(run);
  return run;
}

/** A hub as the process has one, and every event it delivers for the run. */
function streams(runId: string): { hub: RunEventHub; seen: RunLogEvent[] } {
  const hub = new RunEventHub();
  const seen: RunLogEvent[] = [];
  hub.subscribe({ runId }, (event) => seen.push(event));
  return { hub, seen };
}

function sources(overrides: Partial<OrderSources> = {}): OrderSources {
  return {
    systems: async () => [],
    runtimeCredentials: async () => ({ crm_token: 'runtime' }),
    store,
    timeoutFrom: 'accepted',
    ...overrides,
  };
}

const stepStarted = (stepId: string): EngineEvent => ({ type: 'step_started', stepId });
const stepFinished = (stepId: string, data: number): EngineEvent => ({
  type: 'step_finished',
  result: { stepId, success: true, data },
});

describe('the order', () => {
  it('is built from the stored run alike for every transport: ids, key, inputs, credentials, state', async () => {
    const run = await started({ state: { fixture: { cursor: 'c1' } } });
    const order = await buildOrder(run, sources(), T0);
    expect(order).toEqual({
      runId: run.runId,
      keyId: 'key-1',
      // The stored snapshot, checked: the schema's defaults filled in.
      tool: Tool.parse(TOOL),
      inputs: { q: 'x' },
      systems: [],
      runtimeCredentials: { crm_token: 'runtime' },
      traceId: run.traceId,
      persistedState: { cursor: 'c1' },
    });
  });

  it("reads the tool's stored state and its version for a tool that uses state", async () => {
    const tool = {
      id: 'stateful',
      steps: [{ id: 's', config: { type: 'transform', transformCode: '(s) => s.persistedState' } }],
    };
    await store.toolState.update('stateful', () => ({ seen: 3 }));
    const run = await started({ toolId: 'stateful', tool });
    expect(await buildOrder(run, sources(), T0)).toMatchObject({
      persistedState: { seen: 3 },
      stateVersion: 1,
    });
  });

  it("counts a runner's timeout from the run's acceptance, an in-process one from the order", async () => {
    const run = await started({ options: { timeout: 60_000 } });
    expect((await buildOrder(run, sources(), T0 + 10_000)).timeoutMs).toBe(50_000);
    const here = await buildOrder(run, sources({ timeoutFrom: 'order' }), T0 + 10_000);
    expect(here.timeoutMs).toBe(60_000);
  });

  it('is refused for good when the time ran out, the snapshot is not a tool, or a system is gone', async () => {
    const late = await started({ options: { timeout: 1_000 } });
    await expect(buildOrder(late, sources(), T0 + 5_000)).rejects.toThrow(
      new OrderRefusal('Run timed out after 1000 ms before it started'),
    );
    const broken = await started({ tool: { id: 'tool-a', steps: 'no' } });
    await expect(buildOrder(broken, sources(), T0)).rejects.toBeInstanceOf(OrderRefusal);
    const gone = sources({
      systems: async () => {
        throw KG_ERR_RUN_SYSTEM_MISSING('crm');
      },
    });
    await expect(buildOrder(await started(), gone, T0)).rejects.toThrow(
      new OrderRefusal("system 'crm' does not exist"),
    );
  });

  it("carries a resumed run's reused step results, read from the resumed run's stored results", async () => {
    const two = {
      id: 'tool-a',
      steps: [...TOOL.steps, { id: 'second', config: { type: 'transform', transformCode: '() => 2' } }],
    };
    const origin = await started({ tool: two });
    // As a run stores them (finish.ts): step results with their timing.
    const stepResults: StepResult[] = [
      { stepId: 'first', success: true, data: 1, startedAt: new Date(T0).toISOString(), durationMs: 2 },
      { stepId: 'second', success: false, data: null, error: 'boom' },
    ];
    await store.finishRun(origin.runId, {
      status: 'failed',
      completedAt: new Date(T0).toISOString(),
      durationMs: 5,
      stepResults,
      result: { success: false, error: 'boom' },
    });
    const resumed = await started({ tool: two, resumedFrom: origin.runId, reusedSteps: 1 });
    expect((await buildOrder(resumed, sources(), T0)).reusedSteps).toEqual([
      { stepId: 'first', success: true, data: 1, reusedFrom: origin.runId },
    ]);
    // Gone (retention) by the time the order is built: refused for good, the run fails saying so.
    await store.pruneRunOutputs({ before: new Date(Date.now() + 60_000).toISOString(), limit: 100 });
    await expect(buildOrder(resumed, sources(), T0)).rejects.toThrow(
      new OrderRefusal(
        `The stored step results of run ${origin.runId} this resumed run reuses are no longer stored in full`,
      ),
    );
  });

  it('is not refused when a source fails for now: the caller may ask again', async () => {
    const unavailable = sources({
      systems: async () => {
        throw KG_ERR_INTERNAL();
      },
    });
    const error = await buildOrder(await started(), unavailable, T0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(OrderRefusal);
  });
});

describe('the report', () => {
  it("times an in-process run's steps by the worker's clock, in the stored results and the live events", async () => {
    const run = await started();
    const { hub, seen } = streams(run.runId);
    const report = new RunReport(run, { events: hub });
    report.event(stepStarted('first'), T0 + 100);
    report.event(stepFinished('first', 1), T0 + 350);
    expect(report.timed([{ stepId: 'first', success: true, data: 1 }])).toEqual([
      { stepId: 'first', success: true, data: 1, startedAt: '2026-03-01T10:00:00.100Z', durationMs: 250 },
    ]);
    expect(seen.map((e) => [e.type, e.timestamp, e.durationMs])).toEqual([
      ['step_started', '2026-03-01T10:00:00.100Z', undefined],
      ['step_finished', '2026-03-01T10:00:00.350Z', 250],
    ]);
  });

  it("applies a runner's batch once: reported twice, it is one set of live events and step results", async () => {
    const run = await started();
    await store.issueRunToken(run.runId, 1, hashRunToken(newRunToken()));
    const { hub, seen } = streams(run.runId);
    const reports = new RunnerReports({ store, events: hub });
    const batch = { firstSeq: 1, events: [stepStarted('first'), stepFinished('first', 1)] };
    expect(await reports.batch(run.runId, 1, batch)).toEqual({ applied: true, fresh: 2 });
    expect(await reports.batch(run.runId, 1, batch)).toEqual({ applied: true, fresh: 0 });
    // Numbered by the runner, so another replica's report of the same numbers is the same events.
    const otherReplica = new RunnerReports({ store, events: hub });
    const overlapping = { firstSeq: 2, events: [stepFinished('first', 1), stepFinished('second', 2)] };
    expect(await otherReplica.batch(run.runId, 1, overlapping)).toEqual({ applied: true, fresh: 1 });
    expect(await store.getStepResults(run.runId)).toEqual([
      { stepId: 'first', success: true, data: 1 },
      { stepId: 'second', success: true, data: 2 },
    ]);
    expect(seen.map((e) => e.id)).toEqual([`${run.runId}:1`, `${run.runId}:2`, `${run.runId}:3`]);
    // Batches arrive after the fact: no duration is measured from their arrival.
    expect(seen.filter((e) => e.type === 'step_finished').map((e) => e.durationMs)).toEqual([
      undefined,
      undefined,
    ]);
  });

  it('tells a runner that skipped numbers where the store stands, and one whose run ended to stop', async () => {
    const run = await started();
    await store.issueRunToken(run.runId, 1, hashRunToken(newRunToken()));
    const reports = new RunnerReports({ store });
    await reports.batch(run.runId, 1, { firstSeq: 1, events: [stepStarted('first')] });
    const gap = { firstSeq: 5, events: [stepStarted('second')] };
    expect(await reports.batch(run.runId, 1, gap)).toEqual({ applied: false, stop: false, lastSeq: 1 });
    expect(await reports.batch(run.runId, 2, gap)).toEqual({ applied: false, stop: true });
    await finishRun(run, failedResult('boom'), reports.of(run), { store });
    expect(await reports.batch(run.runId, 1, { ...gap, firstSeq: 2 })).toEqual({
      applied: false,
      stop: true,
    });
  });
});

describe('the finish', () => {
  const success: EngineResult = {
    status: 'success',
    data: { n: 1 },
    stepResults: [{ stepId: 'first', success: true, data: 1 }],
    files: [],
  };

  it('records the first terminal write; a second loses and emits nothing; credentials go either way', async () => {
    const run = await started();
    const { hub, seen } = streams(run.runId);
    const counted: string[] = [];
    const dropped: string[] = [];
    const deps = {
      store,
      metrics: { runFinished: (status: string) => counted.push(status) },
      dropCredentials: async (runId: string) => {
        dropped.push(runId);
      },
    };
    const report = new RunReport(run, { events: hub });
    const first = await finishRun(run, success, report, deps);
    const second = await finishRun(run, failedResult('late'), report, deps);
    expect([first.won, second.won]).toEqual([true, false]);
    expect(await store.getRun(run.runId)).toMatchObject({ status: 'success' });
    expect((await store.getRunResult(run.runId))?.data).toEqual({ n: 1 });
    expect(seen.filter((e) => e.type === 'run_finished').map((e) => e.status)).toEqual(['success']);
    expect(counted).toEqual(['success']);
    expect(dropped).toEqual([run.runId, run.runId]);
    // A late writer with step results of its own changes none of the winner's.
    const late = { ...success, stepResults: [{ stepId: 'first', success: true, data: 99 }] };
    expect((await finishRun(run, late, report, deps)).won).toBe(false);
    expect(await store.getStepResults(run.runId)).toEqual([{ stepId: 'first', success: true, data: 1 }]);
  });

  it('stores the step results with the timings the report measured, over those a runner stored before', async () => {
    const run = await started();
    await store.issueRunToken(run.runId, 1, hashRunToken(newRunToken()));
    await new RunnerReports({ store }).batch(run.runId, 1, {
      firstSeq: 1,
      events: [stepFinished('first', 1)],
    });
    const report = new RunReport(run, {});
    report.event(stepStarted('first'), T0);
    report.event(stepFinished('first', 1), T0 + 40);
    await finishRun(run, success, report, { store });
    // The terminal write gave the result the seq the runner's report stored it under: one row, not two.
    expect(await store.getStepResults(run.runId)).toEqual([{ stepId: 'first', success: true, data: 1 }]);
    expect((await store.getRunResult(run.runId))?.stepResults).toEqual([
      { stepId: 'first', success: true, data: 1, startedAt: '2026-03-01T10:00:00.000Z', durationMs: 40 },
    ]);
  });

  it('answers the stored outcome to a writer that lost, and tells the streams', async () => {
    const run = await started();
    await store.abortRun(run.runId, {
      error: 'Run was cancelled',
      completedAt: new Date(T0 + 5).toISOString(),
    });
    const { hub, seen } = streams(run.runId);
    const report = new RunReport(run, { events: hub });
    expect((await finishRun(run, success, report, { store })).won).toBe(false);
    expect(seen).toEqual([]);
    expect(await storedOutcome(run.runId, report, store)).toMatchObject({ status: 'aborted' });
    expect(seen.map((e) => [e.type, e.status, e.error])).toEqual([
      ['run_finished', 'aborted', 'Run was cancelled'],
    ]);
  });

  it('keeps the step results of an execution that lost to a cancel, which stored none', async () => {
    const run = await started();
    await store.abortRun(run.runId, { error: 'Run was cancelled', completedAt: new Date(T0).toISOString() });
    const cancelled: EngineResult = {
      status: 'aborted',
      data: null,
      error: 'Run was cancelled',
      stepResults: [
        { stepId: 'first', success: true, data: 1 },
        { stepId: 'second', success: false, data: null, error: 'Run was cancelled' },
      ],
      files: [],
    };
    expect((await finishRun(run, cancelled, new RunReport(run, {}), { store })).won).toBe(false);
    expect(await store.getRun(run.runId)).toMatchObject({ status: 'aborted', error: 'Run was cancelled' });
    expect(await store.getStepResults(run.runId)).toEqual([
      { stepId: 'first', success: true, data: 1 },
      { stepId: 'second', success: false, error: 'Run was cancelled' },
    ]);
  });

  it("records a failure without an execution (recovery, the operator, a dead start) as an execution's failure", async () => {
    const run = await started({ options: { async: true, webhookUrl: 'https://hooks.example.com/done' } });
    const at = new Date(Date.parse(run.metadata.startedAt) + 1500);
    const viaExecution = await finishRun(run, failedResult('runner lost'), new RunReport(run, {}), {
      store,
      now: () => at.getTime(),
    });
    const { stepResults: _none, result: _result, files: _files, ...written } = viaExecution.finish;
    expect(failedFinish(run, 'runner lost', at)).toEqual(written);
    expect(written).toMatchObject({
      status: 'failed',
      durationMs: 1500,
      outbox: [{ kind: 'notify', payload: { url: 'https://hooks.example.com/done' } }],
    });
  });

  it('ends a run that is not stored without writing anything, counted and streamed', async () => {
    const run = runningRun('exec-unstored', { tool: TOOL });
    const { hub, seen } = streams(run.runId);
    const counted: string[] = [];
    const recorded = finishUnrecorded(run, success, new RunReport(run, { events: hub }), {
      metrics: { runFinished: (status) => counted.push(status) },
    });
    expect(recorded).toMatchObject({ won: true, finish: { status: 'success' }, warnings: [] });
    expect(await store.getRun(run.runId)).toBeUndefined();
    expect(counted).toEqual(['success']);
    expect(seen.map((e) => e.type)).toEqual(['run_finished']);
  });
});
