import { beforeEach, describe, expect, it } from 'vitest';
import type { FinishRun, Store } from '../../../store/index.ts';
import { describeStore, openTestStore, runningRun } from '../../support/store.ts';

const HOUR_MS = 3_600_000;

const run = runningRun;

const success: FinishRun = { status: 'success', completedAt: '2026-03-01T10:00:01.500Z', durationMs: 1500 };

describeStore('run writes', (store, driver) => {
  /** Outbox rows written since the test started (claimed with a long lease, so each is seen once). */
  async function newOutbox(): Promise<Array<{ kind: string; runId: string | null }>> {
    const rows = await store.claimOutbox({ limit: 1000, leaseMs: HOUR_MS });
    return rows.map((row) => ({ kind: row.kind, runId: row.runId }));
  }
  beforeEach(async () => {
    await newOutbox();
  });

  /** How a run that failed at completedAt, durationMs after its start, with the error, is stored. */
  const failedAt = (completedAt: string, durationMs: number, error: string) => ({
    status: 'failed',
    error,
    metadata: { completedAt, durationMs },
  });

  /** Runs fn on a store of its own, for writes that touch every running run. */
  async function onFreshStore(fn: (fresh: Store) => Promise<void>): Promise<void> {
    const fresh = await openTestStore(driver);
    try {
      await fn(fresh.store);
    } finally {
      await fresh.close();
    }
  }

  describe('abortRun', () => {
    it('aborts a running run, computing its duration from its start', async () => {
      await store.insertRun(run('abort-1', { toolPayload: { q: 1 } }));
      const aborted = await store.abortRun('abort-1', {
        error: 'Run was cancelled',
        completedAt: '2026-03-01T10:00:02.250Z',
      });
      const expected = run('abort-1', {
        toolPayload: { q: 1 },
        status: 'aborted',
        error: 'Run was cancelled',
        metadata: {
          startedAt: '2026-03-01T10:00:00.000Z',
          completedAt: '2026-03-01T10:00:02.250Z',
          durationMs: 2250,
        },
      });
      expect(aborted).toEqual(expected);
      expect(await store.getRun('abort-1')).toEqual(expected);
    });

    it('leaves a terminal run as it is and answers undefined', async () => {
      await store.insertRun(run('abort-done'));
      await store.finishRun('abort-done', success);
      expect(
        await store.abortRun('abort-done', { error: 'x', completedAt: '2026-03-01T10:00:09.000Z' }),
      ).toBeUndefined();
      expect((await store.getRun('abort-done'))?.status).toBe('success');
      expect(
        await store.abortRun('abort-unknown', { error: 'x', completedAt: success.completedAt }),
      ).toBeUndefined();
    });

    it('makes a later terminal write lose', async () => {
      await store.insertRun(run('abort-then-finish'));
      expect(
        await store.abortRun('abort-then-finish', { error: 'cancelled', completedAt: success.completedAt }),
      ).toBeDefined();
      expect(
        await store.finishRun('abort-then-finish', { ...success, result: { success: true, data: 1 } }),
      ).toBe(false);
      expect(
        await store.abortRun('abort-then-finish', { error: 'again', completedAt: success.completedAt }),
      ).toBeUndefined();
      expect((await store.getRun('abort-then-finish'))?.error).toBe('cancelled');
      expect(await store.getRunResult('abort-then-finish')).toBeUndefined();
    });

    it('never records a negative duration', async () => {
      await store.insertRun(run('abort-early'));
      const aborted = await store.abortRun('abort-early', {
        error: 'cancelled',
        completedAt: '2026-03-01T09:59:59.000Z',
      });
      expect(aborted?.metadata.durationMs).toBe(0);
    });
  });

  describe('failRunningRuns', () => {
    it('fails only the running runs of the executor given, then all running runs', async () => {
      await onFreshStore(async (fresh) => {
        await fresh.insertRuns([
          run('a-1', { executor: 'pod-a' }),
          run('a-2', { executor: 'pod-a' }),
          run('a-done', {
            executor: 'pod-a',
            status: 'success',
            metadata: { startedAt: success.completedAt, completedAt: success.completedAt, durationMs: 0 },
          }),
          run('b-1', { executor: 'pod-b' }),
          run('none-1'),
        ]);
        const completedAt = '2026-03-01T10:00:05.000Z';
        const failed = await fresh.failRunningRuns({
          executor: 'pod-a',
          error: 'The process running this run stopped',
          completedAt,
        });
        expect(failed).toEqual(['a-1', 'a-2']);
        expect(await fresh.getRun('a-1')).toMatchObject(
          failedAt(completedAt, 5000, 'The process running this run stopped'),
        );
        expect((await fresh.getRun('a-done'))?.status).toBe('success');
        expect((await fresh.getRun('b-1'))?.status).toBe('running');

        expect(await fresh.failRunningRuns({ executor: 'pod-gone', error: 'x', completedAt })).toEqual([]);
        expect(await fresh.failRunningRuns({ error: 'The server restarted', completedAt })).toEqual([
          'b-1',
          'none-1',
        ]);
        expect((await fresh.getRun('none-1'))?.error).toBe('The server restarted');
      });
    });
  });

  describe('failStartedRuns', () => {
    it('fails running runs started by other executors and leaves unstarted and own runs alone', async () => {
      await onFreshStore(async (fresh) => {
        await fresh.insertRuns([
          run('old-1', { executor: 'process-old' }),
          run('other-1', { executor: 'process-other' }),
          run('mine-1', { executor: 'process-new' }),
          run('accepted-1'),
        ]);
        const completedAt = '2026-03-01T10:00:03.000Z';
        expect(
          await fresh.failStartedRuns({
            exceptExecutor: 'process-new',
            error: 'restarted',
            completedAt,
          }),
        ).toEqual(['old-1', 'other-1']);
        expect(await fresh.getRun('old-1')).toMatchObject(failedAt(completedAt, 3000, 'restarted'));
        expect((await fresh.getRun('mine-1'))?.status).toBe('running');
        expect((await fresh.getRun('accepted-1'))?.status).toBe('running');
        expect(await fresh.failStartedRuns({ error: 'all', completedAt })).toEqual(['mine-1']);
        expect((await fresh.getRun('accepted-1'))?.status).toBe('running');
      });
    });
  });

  describe('listStartedRuns and retryRun', () => {
    it('lists the runs other executors started, oldest first, with their tool and attempt', async () => {
      await onFreshStore(async (fresh) => {
        await fresh.insertRuns([
          run('later', { executor: 'gone', metadata: { startedAt: '2026-03-01T10:00:05.000Z' } }),
          run('earlier', { executor: 'gone', tool: { id: 't', steps: [] }, attempt: 2 }),
          run('mine', { executor: 'me' }),
          run('queued'),
        ]);
        const started = await fresh.listStartedRuns({ exceptExecutor: 'me' });
        expect(started.map((r) => r.runId)).toEqual(['earlier', 'later']);
        expect(started[0]).toMatchObject({ attempt: 2, tool: { id: 't' }, executor: 'gone' });
        expect(started[1]?.attempt).toBeUndefined();
      });
    });

    it('hands a running run back: executor cleared, attempt + 1, step results dropped, credentials kept', async () => {
      await store.insertRun(run('retry-1'), { sealedCredentials: new Uint8Array([1, 2, 3]) });
      await store.claimRun('retry-1', 'pool-gone');
      await store.saveStepResult('retry-1', 0, { stepId: 'a', success: true, data: { partial: true } });
      const handed = await store.retryRun('retry-1', { fromAttempt: 1, fromExecutor: 'pool-gone' });
      expect(handed).toMatchObject({ runId: 'retry-1', status: 'running', attempt: 2 });
      expect(handed?.executor).toBeUndefined();
      expect(await store.getStepResults('retry-1')).toEqual([]);
      expect(await store.getRunCredentials('retry-1')).toEqual(new Uint8Array([1, 2, 3]));
      // The next launcher claims it as any run nobody started.
      expect(await store.claimRun('retry-1', 'pool-new')).toMatchObject({ attempt: 2 });
    });

    it('refuses a run held by another executor, at another attempt, or no longer running', async () => {
      await store.insertRun(run('retry-held'));
      await store.claimRun('retry-held', 'pool-live');
      expect(
        await store.retryRun('retry-held', { fromAttempt: 1, fromExecutor: 'pool-gone' }),
      ).toBeUndefined();
      expect(await store.retryRun('retry-held', { fromAttempt: 2 })).toBeUndefined();
      expect((await store.getRun('retry-held'))?.executor).toBe('pool-live');
      await store.insertRun(run('retry-ended'));
      await store.finishRun('retry-ended', success);
      expect(await store.retryRun('retry-ended', { fromAttempt: 1 })).toBeUndefined();
      expect((await store.getRun('retry-ended'))?.attempt).toBeUndefined();
    });

    it('never hands back a run whose notification or chain is in the outbox', async () => {
      await store.insertRun(run('retry-announced'));
      await store.enqueueOutbox([{ kind: 'notify', runId: 'retry-announced', payload: {} }]);
      expect(await store.retryRun('retry-announced', { fromAttempt: 1 })).toBeUndefined();
      // A start row is no completion effect.
      await store.insertRun(run('retry-started'), {
        outbox: [{ kind: 'start', runId: 'retry-started', payload: {} }],
      });
      expect(await store.retryRun('retry-started', { fromAttempt: 1 })).toMatchObject({ attempt: 2 });
    });
  });

  describe('claimRun', () => {
    it('lets exactly one executor claim a running run that nobody has started', async () => {
      await store.insertRun(run('claim-1'));
      const claims = await Promise.all(
        ['pool-a', 'pool-b', 'pool-c'].map((executor) => store.claimRun('claim-1', executor)),
      );
      const winners = claims.filter((claimed) => claimed !== undefined);
      expect(winners).toHaveLength(1);
      expect((await store.getRun('claim-1'))?.executor).toBe(winners[0]?.executor);
      expect(await store.claimRun('claim-1', winners[0]!.executor!)).toBeUndefined();
    });

    it('does not claim a terminal or unknown run', async () => {
      await store.insertRun(run('claim-done'));
      await store.abortRun('claim-done', { error: 'cancelled', completedAt: success.completedAt });
      expect(await store.claimRun('claim-done', 'pool-a')).toBeUndefined();
      expect(await store.claimRun('claim-unknown', 'pool-a')).toBeUndefined();
    });
  });

  describe('getRunFiles', () => {
    it('lists the metadata of the files a run produced', async () => {
      await store.insertRun(run('files-1'));
      const encoder = new TextEncoder();
      await store.finishRun('files-1', {
        ...success,
        files: [
          { fileKey: 'b.csv', filename: 'b.csv', contentType: 'text/csv', content: encoder.encode('x,y\n') },
          {
            fileKey: 'a.json',
            filename: 'a.json',
            contentType: 'application/json',
            content: encoder.encode('{}'),
          },
        ],
      });
      expect(await store.getRunFiles('files-1')).toEqual([
        { fileKey: 'a.json', filename: 'a.json', contentType: 'application/json', size: 2 },
        { fileKey: 'b.csv', filename: 'b.csv', contentType: 'text/csv', size: 4 },
      ]);
      expect(await store.getRunFiles('files-unknown')).toEqual([]);
    });

    it('keeps binary file content exactly', async () => {
      await store.insertRun(run('files-binary'));
      const content = new Uint8Array(256).map((_, i) => i);
      await store.finishRun('files-binary', {
        ...success,
        files: [
          { fileKey: 'all.bin', filename: 'all.bin', contentType: 'application/octet-stream', content },
        ],
      });
      expect((await store.getRunFile('files-binary', 'all.bin'))?.content).toEqual(content);
    });
  });

  describe('the systemId filter, written with the run', () => {
    const bySystem = async (systemId: string) =>
      (await store.listRuns({ systemId, page: 1, limit: 50 })).runs.map((listed) => listed.runId);

    it('lists a run under each of its systems as soon as it is inserted, alone or in a batch', async () => {
      await store.insertRun(run('sys-alone', { systemIds: ['crm', 'billing'] }));
      await Promise.all([
        store.batch.insertRun(run('sys-batch-1', { systemIds: ['crm'] })),
        store.batch.insertRun(run('sys-batch-2', { systemIds: [] })),
        store.batch.insertRun(run('sys-batch-3', { systemIds: ['billing', 'billing'] })),
      ]);
      await store.insertRuns([run('sys-bulk', { systemIds: ['crm'] })]);
      expect((await bySystem('crm')).sort()).toEqual(['sys-alone', 'sys-batch-1', 'sys-bulk']);
      expect((await bySystem('billing')).sort()).toEqual(['sys-alone', 'sys-batch-3']);
      // A repeated insert of the same run id (a retry) lists it once.
      expect((await store.insertRun(run('sys-alone', { systemIds: ['crm', 'billing'] }))).status).toBe(
        'existing',
      );
      expect((await bySystem('crm')).filter((id) => id === 'sys-alone')).toHaveLength(1);
    });

    it('rolls the run and its systems back together', async () => {
      await expect(
        store.transaction(async (tx) => {
          await tx.insertRun(run('sys-rollback', { systemIds: ['rolled-back'] }));
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await bySystem('rolled-back')).toEqual([]);
      // The run id is free again, with its systems.
      await store.insertRun(run('sys-rollback', { systemIds: ['rolled-back'] }));
      expect(await bySystem('rolled-back')).toEqual(['sys-rollback']);
    });
  });

  describe('outbox rows written with run writes', () => {
    it('writes the outbox rows of an insert only when the run is inserted', async () => {
      const start = [{ kind: 'start', runId: 'ob-insert', payload: {} }];
      const first = await store.insertRun(run('ob-insert'), { inputHash: 'h', outbox: start });
      expect(first.status).toBe('inserted');
      expect(await newOutbox()).toEqual([{ kind: 'start', runId: 'ob-insert' }]);

      expect((await store.insertRun(run('ob-insert'), { inputHash: 'h', outbox: start })).status).toBe(
        'existing',
      );
      expect((await store.insertRun(run('ob-insert'), { inputHash: 'other', outbox: start })).status).toBe(
        'conflict',
      );
      expect(await newOutbox()).toEqual([]);
    });

    it('writes the outbox rows of a terminal write only when it wins', async () => {
      await store.insertRun(run('ob-finish'));
      const notify = [{ kind: 'notify', runId: 'ob-finish', payload: { url: 'https://example.test/a' } }];
      expect(await store.finishRun('ob-finish', { ...success, outbox: notify })).toBe(true);
      expect(await newOutbox()).toEqual([{ kind: 'notify', runId: 'ob-finish' }]);
      expect(
        await store.finishRun('ob-finish', {
          ...success,
          status: 'failed',
          error: 'late',
          outbox: [...notify, { kind: 'chain', runId: 'ob-finish', payload: { toolId: 'next' } }],
        }),
      ).toBe(false);
      expect(await store.finishRun('ob-nobody', { ...success, outbox: notify })).toBe(false);
      expect(await newOutbox()).toEqual([]);
    });

    it('writes the outbox rows of an abort done in one transaction with it', async () => {
      await store.insertRun(run('ob-abort'));
      const abort = () =>
        store.transaction(async (tx) => {
          const aborted = await tx.abortRun('ob-abort', {
            error: 'cancelled',
            completedAt: success.completedAt,
          });
          if (aborted) await tx.enqueueOutbox([{ kind: 'notify', runId: aborted.runId, payload: {} }]);
          return aborted;
        });
      expect(await abort()).toBeDefined();
      expect(await abort()).toBeUndefined();
      expect(await newOutbox()).toEqual([{ kind: 'notify', runId: 'ob-abort' }]);
    });

    it('rolls the run and its outbox rows back together', async () => {
      await expect(
        store.transaction(async (tx) => {
          await tx.insertRun(run('ob-rollback'), {
            outbox: [{ kind: 'start', runId: 'ob-rollback', payload: {} }],
          });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await store.getRun('ob-rollback')).toBeUndefined();
      expect(await newOutbox()).toEqual([]);
    });

    it('wakes outbox listeners when a terminal write adds outbox rows', async () => {
      await store.insertRun(run('ob-wake'));
      let woken: () => void = () => {};
      const wake = new Promise<void>((resolve) => {
        woken = resolve;
      });
      const unsubscribe = await store.onOutbox(() => woken());
      try {
        await store.finishRun('ob-wake', {
          ...success,
          outbox: [{ kind: 'notify', runId: 'ob-wake', payload: {} }],
        });
        await wake;
      } finally {
        await unsubscribe();
      }
    });
  });
  describe('recordings', () => {
    const recording = (n: number) => ({
      exchanges: 1,
      bytes: 100 + n,
      truncated: false,
      entries: [
        {
          stepId: 'fetch',
          protocol: 'http' as const,
          request: { method: 'GET', url: `https://example.test/${n}`, query: [], headers: {} },
          response: { status: 200, headers: {}, data: { n } },
        },
      ],
    });

    it('writes a recording and its summary with a winning terminal write, in a batch beside runs without one', async () => {
      await store.insertRuns([run('rec-a'), run('rec-b'), run('rec-late')]);
      await store.finishRun('rec-late', success);
      const [a, b, late] = await Promise.all([
        store.batch.finishRun('rec-a', { ...success, recording: recording(1) }),
        store.batch.finishRun('rec-b', success),
        store.batch.finishRun('rec-late', { ...success, recording: recording(3) }),
      ]);
      expect([a, b, late]).toEqual([true, true, false]);
      expect((await store.getRun('rec-a'))?.recording).toEqual({
        exchanges: 1,
        bytes: 101,
        truncated: false,
      });
      expect(await store.getRunRecording('rec-a')).toEqual(recording(1));
      expect((await store.getRun('rec-b'))?.recording).toBeUndefined();
      expect(await store.getRunRecording('rec-b')).toBeUndefined();
      // The write that lost stores no recording.
      expect((await store.getRun('rec-late'))?.recording).toBeUndefined();
      expect(await store.getRunRecording('rec-late')).toBeUndefined();
    });
  });
});
