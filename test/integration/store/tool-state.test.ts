/**
 * How a finished run's state changes reach the store (runs/execution/ finishRun, tools/state.ts), on
 * SQLite and Postgres: in the transaction of the run's terminal write and only when it won and succeeded;
 * per key compare-and-set; concurrent commits queue on the tool's row and lose nothing.
 */
import { expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import type { StateWrite } from '../../../contract/wire/tool-state.ts';
import type { EngineResult } from '../../../engine/types.ts';
import { finishRun, type RecordedFinish, RunReport } from '../../../runs/execution/index.ts';
import type { Store, StoredRun } from '../../../store/index.ts';
import type { StateLimits } from '../../../tools/state.ts';
import { describeStore, runningRun } from '../../support/store.ts';

const LIMITS: StateLimits = { maxKeys: 100, maxValueBytes: 1_000 };

/** The run's terminal write from the engine's result, as every transport makes it. */
function recordFinish(
  store: Store,
  run: StoredRun,
  result: EngineResult,
  limits: StateLimits,
): Promise<RecordedFinish> {
  return finishRun(run, result, new RunReport(run, {}), { store, stateLimits: limits });
}

function result(
  status: EngineResult['status'],
  writes: StateWrite[],
  /** null: the run read a fixture, no stored version. */
  versionRead: number | null = 0,
): EngineResult {
  return {
    status,
    data: null,
    stepResults: [],
    files: [],
    ...(status === 'success' ? {} : { error: 'Step x failed: boom' }),
    state: { ...(versionRead !== null ? { versionRead } : {}), writes, warnings: [] },
  };
}

describeStore('tool state commits', (store) => {
  let serial = 0;
  async function started(toolId: string, overrides: Partial<StoredRun> = {}): Promise<StoredRun> {
    const run = runningRun(`state-run-${++serial}`, { toolId, ...overrides });
    await store.insertRun(run);
    return run;
  }
  const stateOf = async (toolId: string): Promise<JsonObject> => (await store.toolState.get(toolId)).state;

  it('a run that succeeds saves its changes with its terminal write; the run records the versions', async () => {
    const run = await started('commit-ok');
    const recorded = await recordFinish(
      store,
      run,
      result('success', [{ key: 'cursor', after: 'c1' }]),
      LIMITS,
    );
    expect(recorded).toMatchObject({ won: true, state: { versionRead: 0, versionWritten: 1 }, warnings: [] });
    expect(await store.toolState.get('commit-ok')).toMatchObject({ state: { cursor: 'c1' }, version: 1 });
    expect((await store.getRun(run.runId))?.state).toEqual({ versionRead: 0, versionWritten: 1 });
  });

  it('a failed run, and a run whose terminal write lost (cancelled meanwhile), save nothing', async () => {
    const failed = await started('commit-not');
    await recordFinish(store, failed, result('failed', [{ key: 'a', after: 1 }]), LIMITS);
    const cancelled = await started('commit-not');
    await store.abortRun(cancelled.runId, {
      error: 'Run was cancelled',
      completedAt: new Date().toISOString(),
    });
    const lost = await recordFinish(store, cancelled, result('success', [{ key: 'b', after: 2 }]), LIMITS);
    expect(lost.won).toBe(false);
    expect(await store.toolState.get('commit-not')).toMatchObject({ state: {}, version: 0 });
    expect((await store.getRun(failed.runId))?.state).toEqual({ versionRead: 0 });
    expect((await store.getRun(cancelled.runId))?.status).toBe('aborted');
  });

  it('a run of a fixture saves nothing and records that it read one', async () => {
    const run = await started('commit-fixture', { state: { fixture: { cursor: 'seed' } } });
    const recorded = await recordFinish(
      store,
      run,
      result('success', [{ key: 'cursor', before: 'seed', after: 'x' }], null),
      LIMITS,
    );
    expect(recorded.state).toEqual({ fixture: { cursor: 'seed' } });
    expect(await store.toolState.get('commit-fixture')).toMatchObject({ version: 0 });
  });

  it('per key: a changed key stays, an unchanged one is written, a value already there is no conflict', async () => {
    await store.toolState.update('commit-cas', () => ({ a: 'other', b: 1, c: 'same' }));
    const run = await started('commit-cas');
    const recorded = await recordFinish(
      store,
      run,
      result('success', [
        { key: 'a', before: 'mine', after: 'mine-2' },
        { key: 'b', before: 1 },
        { key: 'c', before: 'old', after: 'same' },
        { key: 'd', after: true },
      ]),
      LIMITS,
    );
    expect(recorded.warnings).toEqual([
      "persistedState key 'a' not saved: another run (or a change through /v1/tools/{id}/state) changed it after this run read the state",
    ]);
    expect(await stateOf('commit-cas')).toEqual({ a: 'other', c: 'same', d: true });
  });

  it('past a limit nothing of the run is written', async () => {
    const run = await started('commit-limit');
    const recorded = await recordFinish(
      store,
      run,
      result('success', [
        { key: 'small', after: 1 },
        { key: 'big', after: 'x'.repeat(2_000) },
      ]),
      LIMITS,
    );
    expect(recorded.warnings).toEqual([
      "persistedState was not saved: the value of 'big' is 2002 bytes of JSON, more than the limit of 1000 (KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES)",
    ]);
    expect(recorded.state).toEqual({ versionRead: 0 });
    expect(await store.toolState.get('commit-limit')).toMatchObject({ state: {}, version: 0 });
  });

  it('runs committing at once queue on the tool: every key is kept, every version used once', async () => {
    const runs = await Promise.all(Array.from({ length: 12 }, () => started('commit-race')));
    const recorded = await Promise.all(
      runs.map((run, i) => recordFinish(store, run, result('success', [{ key: `k${i}`, after: i }]), LIMITS)),
    );
    expect(recorded.every((r) => r.won && r.warnings.length === 0)).toBe(true);
    const versions = recorded.map((r) => r.state?.versionWritten).sort((a, b) => (a ?? 0) - (b ?? 0));
    expect(versions).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(Object.keys(await stateOf('commit-race')).sort()).toEqual(
      Array.from({ length: 12 }, (_, i) => `k${i}`).sort(),
    );
  });

  it('a tool dropped forgets its state and version; keys named __proto__ are ordinary keys', async () => {
    const run = await started('commit-drop');
    await recordFinish(
      store,
      run,
      result('success', [{ key: '__proto__', after: { polluted: true } }]),
      LIMITS,
    );
    const stored = await stateOf('commit-drop');
    expect(Object.hasOwn(stored, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(await store.toolState.drop('commit-drop')).toBe(true);
    expect(await store.toolState.get('commit-drop')).toEqual({
      toolId: 'commit-drop',
      state: {},
      version: 0,
    });
  });
});
