import { beforeEach, expect, it } from 'vitest';
import { describeStore } from '../../support/store.ts';

const HOUR_MS = 3_600_000;

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

describeStore('outbox', (store, driver) => {
  // Every test starts with nothing due: rows earlier tests left due are finished off. (Rows they left leased
  // or scheduled for later stay in the backlog, so tests compare the backlog with its value at their start.)
  let backlogAtStart = 0;
  beforeEach(async () => {
    for (;;) {
      const left = await store.claimOutbox({ limit: 100, leaseMs: HOUR_MS });
      if (left.length === 0) break;
      for (const row of left) await store.completeOutbox(row.id);
    }
    backlogAtStart = await store.outboxBacklog();
  });
  const backlogAdded = async () => (await store.outboxBacklog()) - backlogAtStart;

  it('hands out enqueued rows once, in order, with their attempt counted', async () => {
    const ids = await store.enqueueOutbox([
      { kind: 'start', runId: 'run-1', payload: {} },
      { kind: 'notify', runId: 'run-1', payload: { url: 'https://example.test/hook' } },
      { kind: 'chain', payload: { toolId: 'next' } },
    ]);
    expect(ids).toHaveLength(3);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(await backlogAdded()).toBe(3);

    const claimed = await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS });
    expect(claimed.map((row) => row.id)).toEqual(ids);
    expect(claimed[1]).toEqual({
      id: ids[1],
      kind: 'notify',
      runId: 'run-1',
      payload: { url: 'https://example.test/hook' },
      attempts: 1,
      failures: 1,
      createdAt: expect.any(String),
      lastError: null,
    });
    expect(claimed[2]?.runId).toBeNull();
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toEqual([]);
    expect(await backlogAdded()).toBe(3);
  });

  it('prunes finished rows older than the cut-off and keeps unfinished ones', async () => {
    const [delivered, abandoned] = await store.enqueueOutbox([
      { kind: 'notify', payload: { n: 1 } },
      { kind: 'notify', payload: { n: 2 } },
      { kind: 'notify', payload: { n: 3 } },
    ]);
    await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS });
    await store.completeOutbox(delivered as number);
    await store.abandonOutbox(abandoned as number, 'gave up');
    const backlog = await store.outboxBacklog();
    expect(await store.pruneOutbox(isoIn(-HOUR_MS))).toBe(0);
    expect(await store.pruneOutbox(isoIn(HOUR_MS))).toBeGreaterThanOrEqual(2);
    expect(await store.pruneOutbox(isoIn(HOUR_MS))).toBe(0);
    expect(await store.outboxBacklog()).toBe(backlog);
  });

  it('claims at most limit rows', async () => {
    await store.enqueueOutbox(Array.from({ length: 5 }, (_, i) => ({ kind: 'notify', payload: { i } })));
    expect(await store.claimOutbox({ limit: 2, leaseMs: HOUR_MS })).toHaveLength(2);
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toHaveLength(3);
  });

  it('does not hand out a row before its notBefore time', async () => {
    await store.enqueueOutbox([{ kind: 'notify', payload: {}, notBefore: isoIn(HOUR_MS) }]);
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toEqual([]);
    expect(await backlogAdded()).toBe(1);
  });

  it('claims a row again once its lease has run out, counting the attempt', async () => {
    const [id] = await store.enqueueOutbox([{ kind: 'notify', payload: {} }]);
    // A lease of 0 ms ends at the claim itself, so the row is due again at once.
    expect((await store.claimOutbox({ limit: 10, leaseMs: 0 })).map((row) => [row.id, row.attempts])).toEqual(
      [[id, 1]],
    );
    expect((await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).map((row) => row.attempts)).toEqual([
      2,
    ]);
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toEqual([]);
  });

  it('makes a retried row due at the time given, with the error kept', async () => {
    const [id] = await store.enqueueOutbox([{ kind: 'notify', payload: {} }]);
    await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS });
    await store.retryOutbox(id!, { nextAttemptAt: isoIn(HOUR_MS), error: 'HTTP 503' });
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toEqual([]);
    await store.retryOutbox(id!, { nextAttemptAt: isoIn(-1_000), error: 'HTTP 502' });
    const [again] = await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS });
    expect(again).toMatchObject({ id, attempts: 2, lastError: 'HTTP 502' });
  });

  it('counts claims that ended in a failure in a row, and starts over after a retry the handler asked for', async () => {
    const [id] = await store.enqueueOutbox([{ kind: 'notify', payload: {} }]);
    const claim = async () => (await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS }))[0];
    expect(await claim()).toMatchObject({ attempts: 1, failures: 1 });
    await store.retryOutbox(id!, { nextAttemptAt: isoIn(-1_000), error: 'handler threw', failed: true });
    expect(await claim()).toMatchObject({ attempts: 2, failures: 2, lastError: 'handler threw' });
    // The handler answered "retry later" (a receiver's 503): its own policy, not a failure of the job.
    await store.retryOutbox(id!, { nextAttemptAt: isoIn(-1_000), error: 'HTTP 503' });
    expect(await claim()).toMatchObject({ attempts: 3, failures: 1, lastError: 'HTTP 503' });
  });

  it('never hands out a completed or abandoned row again', async () => {
    const [done, given] = await store.enqueueOutbox([
      { kind: 'notify', payload: {} },
      { kind: 'chain', payload: {} },
    ]);
    await store.claimOutbox({ limit: 10, leaseMs: 0 });
    await store.completeOutbox(done!);
    await store.abandonOutbox(given!, 'tool:next does not exist');
    // Retrying a finished row does not bring it back.
    await store.retryOutbox(done!, { nextAttemptAt: isoIn(-1_000), error: 'late' });
    expect(await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).toEqual([]);
    expect(await backlogAdded()).toBe(0);
  });

  it('never gives one row to two concurrent claimers', async () => {
    const ids = await store.enqueueOutbox(
      Array.from({ length: 12 }, (_, i) => ({ kind: 'notify', payload: { i } })),
    );
    const claims = await Promise.all(
      Array.from({ length: 6 }, () => store.claimOutbox({ limit: 3, leaseMs: HOUR_MS })),
    );
    const claimed = claims.flat().map((row) => row.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.every((id) => ids.includes(id))).toBe(true);
    expect(claims.flat().every((row) => row.attempts === 1)).toBe(true);
  });

  // A Postgres-only behaviour: defined for that driver alone, so the SQLite run reports no skipped test.

  if (driver === 'pg')
    it('skips rows an open transaction has claimed instead of waiting, and gets them back after its rollback', async () => {
      const ids = await store.enqueueOutbox(
        Array.from({ length: 4 }, (_, i) => ({ kind: 'notify', payload: { i } })),
      );
      let outside: number[] = [];
      await expect(
        store.transaction(async (tx) => {
          const inside = await tx.claimOutbox({ limit: 2, leaseMs: HOUR_MS });
          expect(inside.map((row) => row.id)).toEqual(ids.slice(0, 2));
          outside = (await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS })).map((row) => row.id);
          throw new Error('claimer crashed');
        }),
      ).rejects.toThrow('claimer crashed');
      expect(outside).toEqual(ids.slice(2));
      const back = await store.claimOutbox({ limit: 10, leaseMs: HOUR_MS });
      expect(back.map((row) => [row.id, row.attempts])).toEqual([
        [ids[0], 1],
        [ids[1], 1],
      ]);
    });

  it('writes nothing when the enqueuing transaction rolls back', async () => {
    await expect(
      store.transaction(async (tx) => {
        expect(await tx.enqueueOutbox([{ kind: 'notify', payload: {} }])).toHaveLength(1);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await backlogAdded()).toBe(0);
  });

  it('answers an empty enqueue with no ids', async () => {
    expect(await store.enqueueOutbox([])).toEqual([]);
  });

  it('wakes onOutbox listeners when rows are enqueued, and not after they unsubscribe', async () => {
    let wakes = 0;
    let woken: () => void = () => {};
    const unsubscribe = await store.onOutbox(() => {
      wakes++;
      woken();
    });
    try {
      const next = () =>
        new Promise<void>((resolve) => {
          woken = resolve;
        });
      let wake = next();
      await store.enqueueOutbox([{ kind: 'notify', payload: {} }]);
      await wake;
      wake = next();
      await store.transaction((tx) => tx.enqueueOutbox([{ kind: 'notify', payload: {} }]));
      await wake;
      expect(wakes).toBeGreaterThanOrEqual(2);
    } finally {
      await unsubscribe();
    }
  });
});
