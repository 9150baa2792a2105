import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../config/config.ts';
import { sweepRunRetention } from '../../../operator/retention.ts';
import type { FinishRun } from '../../../store/index.ts';
import { describeStore, postgresUrl, runningRun } from '../../support/store.ts';

const DAY_MS = 86_400_000;

function daysAgo(days: number): string {
  return new Date(Date.now() - days * DAY_MS).toISOString();
}

function finished(startedAt: string): FinishRun {
  return {
    status: 'success',
    completedAt: new Date(Date.parse(startedAt) + 1000).toISOString(),
    durationMs: 1000,
    stepResults: [{ stepId: 'get', success: true, data: { ok: true } }],
    result: { success: true, data: { ok: true } },
    files: [
      { fileKey: 'out', filename: 'out.txt', contentType: 'text/plain', content: new Uint8Array([1, 2]) },
    ],
  };
}

describeStore('run retention', (store, driver, config) => {
  async function seedEnded(runId: string, startedAt: string): Promise<void> {
    await store.insertRun(runningRun(runId, { metadata: { startedAt } }));
    expect(await store.finishRun(runId, finished(startedAt))).toBe(true);
  }

  it('deletes ended runs past the run retention with everything of theirs, in batches, and nothing else', async () => {
    for (let i = 0; i < 7; i++) await seedEnded(`old-${i}`, daysAgo(40 + i));
    await seedEnded('recent', daysAgo(1));
    await store.insertRun(runningRun('old-but-running', { metadata: { startedAt: daysAgo(45) } }));
    const batches: number[] = [];
    const sweep = await sweepRunRetention({
      store: {
        pruneRuns: async (opts) => {
          const deleted = await store.pruneRuns(opts);
          batches.push(deleted);
          return deleted;
        },
        pruneRunOutputs: (opts) => store.pruneRunOutputs(opts),
      },
      runRetentionMs: 30 * DAY_MS,
      resultRetentionMs: 7 * DAY_MS,
      batchSize: 3,
      pauseMs: 0,
    });
    expect(sweep.runs).toBe(7);
    expect(batches).toEqual([3, 3, 1]);
    for (let i = 0; i < 7; i++) {
      expect(await store.getRun(`old-${i}`)).toBeUndefined();
      expect(await store.getRunResult(`old-${i}`)).toBeUndefined();
      expect(await store.getStepResults(`old-${i}`)).toEqual([]);
      expect(await store.getRunFiles(`old-${i}`)).toEqual([]);
    }
    expect((await store.getRun('old-but-running'))?.status).toBe('running');
    expect((await store.getRun('recent'))?.status).toBe('success');
    expect(await store.getRunResult('recent')).toBeDefined();
    const listed = await store.listRuns({ page: 1, limit: 10 });
    expect(listed.runs.map((run) => run.runId).sort()).toEqual(['old-but-running', 'recent']);
    expect(listed.total).toBe(2);
  });

  it('deletes a run with its systems: the systemId filter no longer lists it', async () => {
    await store.insertRun(
      runningRun('old-with-systems', { systemIds: ['crm', 'erp'], metadata: { startedAt: daysAgo(50) } }),
    );
    expect(await store.finishRun('old-with-systems', finished(daysAgo(50)))).toBe(true);
    await store.insertRun(
      runningRun('new-with-systems', { systemIds: ['crm'], metadata: { startedAt: daysAgo(1) } }),
    );
    expect((await store.listRuns({ systemId: 'erp', page: 1, limit: 10 })).total).toBe(1);
    await store.pruneRuns({ before: daysAgo(30), limit: 100 });
    expect(await store.getRun('old-with-systems')).toBeUndefined();
    expect(await store.listRuns({ systemId: 'erp', page: 1, limit: 10 })).toMatchObject({
      runs: [],
      total: 0,
    });
    const crm = await store.listRuns({ systemId: 'crm', page: 1, limit: 10 });
    expect(crm.runs.map((run) => run.runId)).toEqual(['new-with-systems']);
    if (driver === 'pg') {
      // No row of the deleted run is left behind in run_systems.
      const client = new pg.Client({ connectionString: postgresUrl(config()) });
      await client.connect();
      try {
        const { rows } = await client.query(
          "SELECT run_id FROM run_systems WHERE run_id = 'old-with-systems'",
        );
        expect(rows).toEqual([]);
      } finally {
        await client.end();
      }
    }
  });

  it('deletes results, step results and files past the result retention and keeps the run records', async () => {
    await seedEnded('kept-record', daysAgo(2));
    // Eight days on, by the sweep's clock: the result is past 7 days, the run not past 30.
    const sweep = await sweepRunRetention({
      store,
      runRetentionMs: 30 * DAY_MS,
      resultRetentionMs: 7 * DAY_MS,
      now: () => Date.now() + 8 * DAY_MS,
      batchSize: 1,
      pauseMs: 0,
    });
    expect(sweep.runs).toBe(0);
    expect(sweep.outputs).toBeGreaterThanOrEqual(2);
    expect((await store.getRun('kept-record'))?.status).toBe('success');
    expect(await store.getRunResult('kept-record')).toBeUndefined();
    expect(await store.getStepResults('kept-record')).toEqual([]);
    expect(await store.getRunFile('kept-record', 'out')).toBeUndefined();
  });

  it('keeps everything when the run retention is 0', async () => {
    await seedEnded('forever', daysAgo(400));
    const sweep = await sweepRunRetention({ store, runRetentionMs: 0, resultRetentionMs: 0, pauseMs: 0 });
    expect(sweep).toEqual({ runs: 0, outputs: 0 });
    expect(await store.getRunResult('forever')).toBeDefined();
  });

  it('stops a sweep between batches once it is aborted', async () => {
    for (let i = 0; i < 4; i++) await seedEnded(`abort-${i}`, daysAgo(50 + i));
    const abort = new AbortController();
    const sweep = await sweepRunRetention({
      store: {
        pruneRuns: async (opts) => {
          const deleted = await store.pruneRuns(opts);
          abort.abort();
          return deleted;
        },
        pruneRunOutputs: (opts) => store.pruneRunOutputs(opts),
      },
      runRetentionMs: 30 * DAY_MS,
      resultRetentionMs: 0,
      batchSize: 2,
      pauseMs: 0,
      signal: abort.signal,
    });
    expect(sweep.runs).toBe(2);
    await store.pruneRuns({ before: daysAgo(30), limit: 100 });
  });
});

describe('retention settings', () => {
  it('reads durations with units, defaults to 30 days for runs and to the run retention for results', () => {
    expect(loadSettings('embedded', {})).toMatchObject({ runRetentionMs: 30 * DAY_MS, resultRetentionMs: 0 });
    expect(
      loadSettings('embedded', { KUBEGLUE_RUN_RETENTION: '12h', KUBEGLUE_RESULT_RETENTION: '90m' }),
    ).toMatchObject({
      runRetentionMs: 12 * 3_600_000,
      resultRetentionMs: 90 * 60_000,
    });
    expect(loadSettings('embedded', { KUBEGLUE_RUN_RETENTION: '0' }).runRetentionMs).toBe(0);
    expect(() => loadSettings('embedded', { KUBEGLUE_RUN_RETENTION: '30 days' })).toThrow(
      /KUBEGLUE_RUN_RETENTION/,
    );
  });
});
