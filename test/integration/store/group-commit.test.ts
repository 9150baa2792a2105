import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { Db, Driver } from '../../../store/driver.ts';
import { createPgDriver } from '../../../store/drivers/pg.ts';
import { createSqliteDriver } from '../../../store/drivers/sqlite.ts';
import { type FinishRun, type InsertRunResult, MIGRATIONS } from '../../../store/index.ts';
import { applyMigrations } from '../../../store/migrate.ts';
import { createRunWriteBatcher } from '../../../store/run-batcher.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { describeStore, openTestStore, runningRun } from '../../support/store.ts';

const HOUR_MS = 3_600_000;

const run = runningRun;

function success(data: number): FinishRun {
  return {
    status: 'success',
    completedAt: '2026-03-01T10:00:01.000Z',
    durationMs: 1000,
    stepResults: [{ stepId: 'fetch', success: true, data: { n: data } }],
    result: { success: true, data: { n: data } },
  };
}

function statuses(results: readonly InsertRunResult[]): string[] {
  return results.map((result) => result.status);
}

interface WriteCounts {
  statements: string[];
  transactions: number;
  /** Transactions plus statements run outside one (each commits alone). */
  commits: number;
}

/**
 * The driver as the batcher sees it, recording every statement and every transaction it opens (a transaction
 * asked for inside one joins it, so it is not counted).
 */
function counting(db: Db, counts: WriteCounts): Db {
  const wrap = (inner: Db, inTransaction: boolean): Db => {
    const wrapped: Db = {
      dialect: inner.dialect,
      query: <Row extends object>(sql: string, params?: readonly unknown[]) => {
        counts.statements.push(sql);
        // A statement outside a transaction commits on its own.
        if (!inTransaction) counts.commits++;
        return inner.query<Row>(sql, params);
      },
      exec: (sql) => inner.exec(sql),
      transaction: (fn) => {
        if (inTransaction) return fn(wrapped);
        counts.transactions++;
        counts.commits++;
        return inner.transaction((tx) => fn(wrap(tx, true)));
      },
      notify: (channel, payload) => inner.notify(channel, payload),
    };
    return wrapped;
  };
  return wrap(db, false);
}

describeStore('group commit', (store, driver) => {
  // Outbox rows left by an earlier test are claimed away, so each test sees only its own.
  beforeEach(async () => {
    await store.claimOutbox({ limit: 10_000, leaseMs: HOUR_MS });
  });

  it('gives each of many concurrent calls its own result', async () => {
    await store.insertRun(run('gc-taken', { toolId: 'tool-other' }), { inputHash: 'h' });
    await store.insertRun(run('gc-retry'), { inputHash: 'h' });
    const inserts = await Promise.all([
      ...Array.from({ length: 150 }, (_, i) =>
        store.batch.insertRun(run(`gc-${i}`, { toolPayload: { i } }), { inputHash: 'h' }),
      ),
      store.batch.insertRun(run('gc-taken'), { inputHash: 'h' }),
      store.batch.insertRun(run('gc-retry'), { inputHash: 'h' }),
    ]);
    expect(statuses(inserts.slice(0, 150)).every((status) => status === 'inserted')).toBe(true);
    expect(inserts[7]).toEqual({ status: 'inserted', run: run('gc-7', { toolPayload: { i: 7 } }) });
    expect(statuses(inserts.slice(150))).toEqual(['conflict', 'existing']);

    await store.finishRun('gc-3', {
      status: 'failed',
      error: 'first',
      completedAt: '2026-03-01T10:00:00.500Z',
      durationMs: 500,
    });
    const finishes = await Promise.all([
      ...Array.from({ length: 150 }, (_, i) =>
        store.batch.finishRun(`gc-${i}`, {
          ...success(i),
          outbox: [{ kind: 'notify', runId: `gc-${i}`, payload: { i } }],
        }),
      ),
      store.batch.finishRun('gc-unknown', success(0)),
    ]);
    expect(finishes.filter((won) => !won)).toHaveLength(2);
    expect(finishes[3]).toBe(false);
    expect(finishes[150]).toBe(false);

    // Settled means committed: another connection (pg pool) reads what each call wrote.
    expect(await store.getRun('gc-42')).toMatchObject({ status: 'success', metadata: { durationMs: 1000 } });
    expect(await store.getRunResult('gc-42')).toMatchObject({ data: { n: 42 }, toolPayload: { i: 42 } });
    expect(await store.getStepResults('gc-42')).toEqual([
      { stepId: 'fetch', success: true, data: { n: 42 } },
    ]);
    expect(await store.getRun('gc-3')).toMatchObject({ status: 'failed', error: 'first' });
    expect(await store.getRunResult('gc-3')).toBeUndefined();
    const outbox = await store.claimOutbox({ limit: 1000, leaseMs: HOUR_MS });
    expect(outbox).toHaveLength(149);
    expect(outbox.some((row) => row.runId === 'gc-3')).toBe(false);
  });

  it('applies calls for one run id within a batch in the order they were made', async () => {
    const [first, retry, other, again] = await Promise.all([
      store.batch.insertRun(run('dup-1'), {
        inputHash: 'h',
        outbox: [{ kind: 'start', runId: 'dup-1', payload: {} }],
      }),
      store.batch.insertRun(run('dup-1'), {
        inputHash: 'h',
        outbox: [{ kind: 'start', runId: 'dup-1', payload: {} }],
      }),
      store.batch.insertRun(run('dup-1', { toolId: 'tool-b' }), { inputHash: 'h' }),
      store.batch.insertRun(run('dup-1'), { inputHash: 'h' }),
    ]);
    expect(first).toEqual({ status: 'inserted', run: run('dup-1') });
    expect(retry).toEqual({ status: 'existing', run: run('dup-1') });
    expect(other).toEqual({ status: 'conflict' });
    expect(again).toEqual({ status: 'existing', run: run('dup-1') });
    expect((await store.claimOutbox({ limit: 100, leaseMs: HOUR_MS })).map((row) => row.runId)).toEqual([
      'dup-1',
    ]);

    const [won, lost] = await Promise.all([
      store.batch.finishRun('dup-1', {
        ...success(1),
        outbox: [{ kind: 'notify', runId: 'dup-1', payload: {} }],
      }),
      store.batch.finishRun('dup-1', {
        ...success(2),
        status: 'failed',
        error: 'second',
        outbox: [{ kind: 'notify', runId: 'dup-1', payload: {} }],
      }),
    ]);
    expect([won, lost]).toEqual([true, false]);
    expect(await store.getRunResult('dup-1')).toMatchObject({ data: { n: 1 } });
    expect(await store.claimOutbox({ limit: 100, leaseMs: HOUR_MS })).toHaveLength(1);

    const [inserted, finished] = await Promise.all([
      store.batch.insertRun(run('dup-2')),
      store.batch.finishRun('dup-2', success(3)),
    ]);
    expect([inserted.status, finished]).toEqual(['inserted', true]);

    // A terminal write made before the insert of its run loses, as it would one after the other.
    const [early, late] = await Promise.all([
      store.batch.finishRun('dup-3', success(4)),
      store.batch.insertRun(run('dup-3')),
    ]);
    expect([early, late.status]).toEqual([false, 'inserted']);
    expect((await store.getRun('dup-3'))?.status).toBe('running');
  });

  it('fails only the failing call of a batch and gives every other call its own result', async () => {
    await store.insertRun(run('mixed-finish'));
    await store.insertRun(run('mixed-done'));
    await store.finishRun('mixed-done', success(0));
    const settled = await Promise.allSettled<unknown>([
      store.batch.insertRun(run('mixed-a'), { outbox: [{ kind: 'start', runId: 'mixed-a', payload: {} }] }),
      // A terminal status without a completion time breaks the runs table's CHECK constraint.
      store.batch.insertRun(run('mixed-bad', { status: 'success' })),
      store.batch.insertRun(run('mixed-b')),
      store.batch.insertRun(run('mixed-a')),
      store.batch.finishRun('mixed-finish', success(5)),
      store.batch.finishRun('mixed-done', success(6)),
      store.batch.finishRun('mixed-a', { ...success(7), completedAt: 'not a time' }),
    ]);
    const outcome = settled.map((one) =>
      one.status === 'rejected'
        ? 'rejected'
        : typeof one.value === 'boolean'
          ? one.value
          : (one.value as InsertRunResult).status,
    );
    expect(outcome).toEqual(['inserted', 'rejected', 'inserted', 'existing', true, false, 'rejected']);
    expect(await store.getRun('mixed-bad')).toBeUndefined();
    expect((await store.getRun('mixed-a'))?.status).toBe('running');
    expect(await store.getRunResult('mixed-finish')).toMatchObject({ data: { n: 5 } });
    expect(await store.getRunResult('mixed-done')).toMatchObject({ data: { n: 0 } });
    expect((await store.claimOutbox({ limit: 100, leaseMs: HOUR_MS })).map((row) => row.runId)).toEqual([
      'mixed-a',
    ]);
  });

  it('rejects calls made after the store is closed', async () => {
    const own = await openTestStore(driver);
    await own.close();
    await expect(own.store.batch.insertRun(run('after-close'))).rejects.toThrow('store is closed');
  });

  it('settles every queued call before close completes', async () => {
    const own = await openTestStore(driver);
    const pending = Array.from({ length: 20 }, (_, i) => own.store.batch.insertRun(run(`closing-${i}`)));
    await own.close();
    expect(statuses(await Promise.all(pending)).every((status) => status === 'inserted')).toBe(true);
  });

  describe('statements per batch', () => {
    let raw: Driver;
    let rawDatabase: TestDatabase | undefined;

    beforeAll(async () => {
      if (driver === 'pg') {
        rawDatabase = await createTestDatabase(inject('databaseUrl'));
        raw = createPgDriver({ url: rawDatabase.url });
      } else {
        raw = createSqliteDriver({ path: ':memory:' });
      }
      await applyMigrations(raw, MIGRATIONS);
    });

    afterAll(async () => {
      await raw?.close();
      await rawDatabase?.drop();
    });

    it('writes calls made together in one transaction (on Postgres one statement per kind of write)', async () => {
      const counts: WriteCounts = { statements: [], transactions: 0, commits: 0 };
      const batcher = createRunWriteBatcher(counting(raw, counts));
      await raw.query(`INSERT INTO runs (run_id, tool_id, status, started_at) VALUES
        ('sb-running-0', 'tool-a', 'running', ${raw.dialect.now}), ('sb-running-1', 'tool-a', 'running', ${raw.dialect.now})`);
      const results = await Promise.all<unknown>([
        ...Array.from({ length: 100 }, (_, i) => batcher.insertRun(run(`sb-${i}`))),
        batcher.finishRun('sb-running-0', success(0)),
        batcher.finishRun('sb-running-1', success(1)),
      ]);
      expect(results.slice(100)).toEqual([true, true]);
      expect(counts.transactions).toBe(1);
      // Postgres: the insert and the terminal write, each one statement with data-modifying CTEs (one round
      // trip each). SQLite's statements run in this process at microseconds each, one per row written: what
      // the batch shares there is the transaction (its commit).
      if (raw.dialect.dataModifyingCtes) expect(counts.statements).toHaveLength(2);
      await batcher.close();
    });

    it('gathers calls queued from separate timer callbacks into one batch', async () => {
      const counts: WriteCounts = { statements: [], transactions: 0, commits: 0 };
      const batcher = createRunWriteBatcher(counting(raw, counts));
      const results = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) =>
            new Promise<InsertRunResult>((resolve, reject) => {
              setTimeout(() => batcher.insertRun(run(`cb-${i}`)).then(resolve, reject), 0);
            }),
        ),
      );
      expect(results.every((r) => r.status === 'inserted')).toBe(true);
      // SQLite runs a query synchronously: a flush started at once would write each call alone.
      expect(counts.commits).toBeLessThanOrEqual(2);
      await batcher.close();
    });

    it('gathers calls made while a batch is being written into the next batch', async () => {
      const counts: WriteCounts = { statements: [], transactions: 0, commits: 0 };
      const batcher = createRunWriteBatcher(counting(raw, counts));
      const workers = 32;
      const runsPerWorker = 10;
      await Promise.all(
        Array.from({ length: workers }, async (_, worker) => {
          for (let i = 0; i < runsPerWorker; i++) {
            const runId = `load-${worker}-${i}`;
            expect((await batcher.insertRun(run(runId))).status).toBe('inserted');
            expect(await batcher.finishRun(runId, success(i))).toBe(true);
          }
        }),
      );
      await batcher.close();
      const calls = workers * runsPerWorker * 2;
      // One call per commit would be 640 commits; calls that arrive together share them.
      expect(counts.commits).toBeLessThan(calls / 8);
      const { rows } = await raw.query<{ n: number }>(
        `SELECT count(*) AS n FROM runs WHERE run_id LIKE 'load-%' AND status = 'success'`,
      );
      expect(rows[0]?.n).toBe(workers * runsPerWorker);
    });

    it('writes a call made after a batch behind what its own turn queued first', async () => {
      const happened: string[] = [];
      const db = counting(raw, { statements: [], transactions: 0, commits: 0 });
      const batcher = createRunWriteBatcher({
        ...db,
        query: (sql, params) => {
          happened.push('write');
          return db.query(sql, params);
        },
      });
      await batcher.insertRun(run('turn-first'));
      // Every microtask the batch's end set off has run: a flush that waited a turn more would be queued now.
      await new Promise((resolve) => process.nextTick(resolve));
      happened.length = 0;
      // As a sync run: its order to a worker is queued for the end of the turn, then its start record.
      setImmediate(() => happened.push('queued first'));
      expect((await batcher.insertRun(run('turn-second'))).status).toBe('inserted');
      expect(happened[0]).toBe('queued first');
      await batcher.close();
    });

    it('caps the number of calls in one batch', async () => {
      const counts: WriteCounts = { statements: [], transactions: 0, commits: 0 };
      const batcher = createRunWriteBatcher(counting(raw, counts), { maxBatchCalls: 10 });
      const results = await Promise.all(
        Array.from({ length: 35 }, (_, i) => batcher.insertRun(run(`cap-${i}`))),
      );
      expect(statuses(results).every((status) => status === 'inserted')).toBe(true);
      expect(counts.transactions).toBe(4);
      await batcher.close();
    });
  });
});
