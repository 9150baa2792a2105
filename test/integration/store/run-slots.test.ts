/**
 * Run slots (store/queries/run-slots.ts), on SQLite and Postgres: a tool's maxConcurrentRuns held and
 * queued in arrival order or refused, a key's concurrent runs and runs per minute, a slot freed by its
 * run's terminal write, and on Postgres two stores (two processes) claiming the last slot at once.
 */
import { describe, expect, it } from 'vitest';
import { openStore, type SlotClaimRequest, type Store } from '../../../store/index.ts';
import { describeStore, runningRun, useTestStore } from '../../support/store.ts';

const NOW = new Date('2026-12-02T10:00:30.000Z');
const LATER = '2026-12-02T11:00:00.000Z';

function toolClaim(
  runId: string,
  whenAtCapacity: 'queue' | 'refuse',
  limit = 1,
  toolId = 'slow',
): SlotClaimRequest {
  return { runId, tool: { toolId, limit, whenAtCapacity }, expiresAt: LATER, now: NOW };
}

async function finish(store: Store, runId: string): Promise<void> {
  await store.finishRun(runId, { status: 'success', completedAt: NOW.toISOString(), durationMs: 1 });
}

describeStore('run slots', (store) => {
  it("hold a tool's slots up to its limit, then queue in arrival order; a run's end frees its slot", async () => {
    await store.insertRun(runningRun('q-1', { toolId: 'slow' }));
    await store.insertRun(runningRun('q-2', { toolId: 'slow' }));
    await store.insertRun(runningRun('q-3', { toolId: 'slow' }));
    expect(await store.runSlots.claim(toolClaim('q-1', 'queue'))).toEqual({ tool: { state: 'held' } });
    expect(await store.runSlots.claim(toolClaim('q-2', 'queue'))).toEqual({
      tool: { state: 'waiting', position: 1, inUse: 1, limit: 1 },
    });
    expect(await store.runSlots.claim(toolClaim('q-3', 'queue'))).toEqual({
      tool: { state: 'waiting', position: 2, inUse: 1, limit: 1 },
    });
    expect(await store.runSlots.waiting(['q-3', 'q-1'], NOW)).toMatchObject([
      { runId: 'q-3', toolId: 'slow', position: 2, inUse: 1 },
    ]);
    await finish(store, 'q-1');
    // The one waiting longer goes first, whoever asks first.
    expect((await store.runSlots.claim(toolClaim('q-3', 'queue'))).tool).toMatchObject({
      state: 'waiting',
      position: 2,
      inUse: 0,
    });
    expect((await store.runSlots.claim(toolClaim('q-2', 'queue'))).tool).toEqual({ state: 'held' });
    expect((await store.runSlots.claim(toolClaim('q-3', 'queue'))).tool).toMatchObject({ position: 1 });
    // Asked again, a holder keeps its slot.
    expect((await store.runSlots.claim(toolClaim('q-2', 'queue'))).tool).toEqual({ state: 'held' });
  });

  it('refuse a run beyond the limit and store nothing for it', async () => {
    expect((await store.runSlots.claim(toolClaim('r-1', 'refuse', 1, 'strict'))).tool).toEqual({
      state: 'held',
    });
    expect((await store.runSlots.claim(toolClaim('r-2', 'refuse', 1, 'strict'))).tool).toEqual({
      state: 'refused',
      inUse: 1,
      limit: 1,
    });
    // r-1 has no run row (an unrecorded sync run): released by hand, its slot is free.
    await store.runSlots.release('r-1');
    expect((await store.runSlots.claim(toolClaim('r-2', 'refuse', 1, 'strict'))).tool).toEqual({
      state: 'held',
    });
  });

  it('count a slot without a run row only until it expires', async () => {
    const expired = { ...toolClaim('e-1', 'refuse', 1, 'expiring'), expiresAt: '2026-12-02T10:00:29.000Z' };
    expect((await store.runSlots.claim(expired)).tool).toEqual({ state: 'held' });
    expect((await store.runSlots.claim(toolClaim('e-2', 'refuse', 1, 'expiring'))).tool).toEqual({
      state: 'held',
    });
  });

  it("count a key's concurrent runs and its runs per minute, and refuse past either", async () => {
    const key = (runId: string, now = NOW): SlotClaimRequest => ({
      runId,
      key: { keyId: 'k-1', concurrentRuns: 2, runsPerMinute: 3 },
      expiresAt: LATER,
      now,
    });
    await store.insertRun(runningRun('k-run-1'));
    expect(await store.runSlots.claim(key('k-run-1'))).toEqual({
      key: {
        concurrentRuns: { limit: 2, remaining: 1 },
        runsPerMinute: { limit: 3, remaining: 2, resetSeconds: 30 },
      },
    });
    expect((await store.runSlots.claim(key('k-run-2'))).key).toMatchObject({
      concurrentRuns: { remaining: 0 },
    });
    expect((await store.runSlots.claim(key('k-run-3'))).key).toEqual({
      refused: 'concurrentRuns',
      limit: 2,
    });
    await finish(store, 'k-run-1');
    expect((await store.runSlots.claim(key('k-run-3'))).key).toMatchObject({
      runsPerMinute: { remaining: 0 },
    });
    await store.runSlots.release('k-run-2');
    // Three this minute: the fourth waits for the next one, 30 s away.
    expect((await store.runSlots.claim(key('k-run-4'))).key).toEqual({
      refused: 'runsPerMinute',
      limit: 3,
      resetSeconds: 30,
    });
    const nextMinute = new Date('2026-12-02T10:01:05.000Z');
    expect((await store.runSlots.claim(key('k-run-4', nextMinute))).key).toMatchObject({
      runsPerMinute: { remaining: 2, resetSeconds: 55 },
    });
  });
});

describe('two processes on one Postgres store', () => {
  const pg = useTestStore('pg');

  it('give the last slots to exactly as many claims as there are, claimed from both at once', async () => {
    const other = await openStore(pg.config());
    try {
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? pg.store : other).runSlots.claim(toolClaim(`race-${i}`, 'refuse', 3, 'raced')),
        ),
      );
      expect(claims.filter((c) => c.tool?.state === 'held')).toHaveLength(3);
      const keyClaims = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? pg.store : other).runSlots.claim({
            runId: `race-key-${i}`,
            key: { keyId: 'raced-key', runsPerMinute: 4 },
            expiresAt: LATER,
            now: NOW,
          }),
        ),
      );
      expect(keyClaims.filter((c) => c.key && c.key.refused === undefined)).toHaveLength(4);
    } finally {
      await other.close();
    }
  });
});
