import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openStore, type Store, type StoredRun } from '../../../store/index.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { runningRun, useTestStore } from '../../support/store.ts';

/**
 * Executors a and b hold their locks (on the holders' connections) and have a running run each, beside a
 * queued run and `others`: a sweep by a's holder (of the executors under a's first path segment) fails
 * nothing; once b's lock is released (its connection ends, as when its process dies) it fails b's run only.
 */
async function sweepFailsOnlyTheReleased(
  holders: [Store, Store],
  executors: [string, string],
  error: string,
  others: StoredRun[] = [],
): Promise<void> {
  const sweeper = holders[0];
  const prefix = `${executors[0].split('/')[0]}/`;
  const live = await holders[0].holdExecutorLock(executors[0]);
  const gone = await holders[1].holdExecutorLock(executors[1]);
  await sweeper.insertRuns([
    runningRun('sync-a', { executor: executors[0] }),
    runningRun('sync-b', { executor: executors[1] }),
    runningRun('queued', {}),
    ...others,
  ]);
  const completedAt = new Date().toISOString();
  const sweep = () => sweeper.failRunsOfDeadExecutors({ prefix, error, completedAt });
  expect(await sweep()).toEqual([]);
  await gone.release();
  expect(await sweep()).toEqual(['sync-b']);
  expect((await sweeper.getRun('sync-b'))?.error).toBe(error);
  for (const id of ['sync-a', 'queued', ...others.map((run) => run.runId)]) {
    expect((await sweeper.getRun(id))?.status).toBe('running');
  }
  await live.release();
}

/** Two processes' views of one Postgres, as two API replicas have. */
describe('executors across API replicas (Postgres)', () => {
  let database: TestDatabase;
  let replicaA: Store;
  let replicaB: Store;

  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'));
    replicaA = await openStore({ driver: 'pg', url: database.url });
    replicaB = await openStore({ driver: 'pg', url: database.url });
  });
  afterAll(async () => {
    await replicaA.close();
    await replicaB.close();
    await database.drop();
  });

  it('fails the runs of a replica that is gone and leaves a live replica alone', async () => {
    const runner = runningRun('runner', { executor: 'runner/x' });
    await sweepFailsOnlyTheReleased(
      [replicaA, replicaB],
      ['api/pod-a/1/1', 'api/pod-b/1/1'],
      'replica gone',
      [runner],
    );
  });

  it('tells every replica about a cancel', async () => {
    const heard: string[] = [];
    const stop = await replicaB.onCancel((runId) => heard.push(runId));
    await replicaA.publishCancel('run-42');
    await expect.poll(() => heard, { timeout: 5000 }).toEqual(['run-42']);
    await stop();
  });
});

/** The embedded store has one process: executor locks live in it, and a released one means a gone executor. */
describe('executors on the embedded store (SQLite)', () => {
  const { store } = useTestStore('sqlite');

  it('fails the runs of an executor whose lock was released and leaves a held one alone', async () => {
    await sweepFailsOnlyTheReleased([store, store], ['embedded/a/1/1', 'embedded/b/1/1'], 'executor gone');
  });
});
