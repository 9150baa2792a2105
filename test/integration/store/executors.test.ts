import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openStore, type Store } from '../../../store/index.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { runningRun, useTestStore } from '../../support/store.ts';

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
    const live = await replicaA.holdExecutorLock('api/pod-a/1/1');
    const gone = await replicaB.holdExecutorLock('api/pod-b/1/1');
    await replicaA.insertRuns([
      runningRun('sync-a', { executor: 'api/pod-a/1/1' }),
      runningRun('sync-b', { executor: 'api/pod-b/1/1' }),
      runningRun('queued', {}),
      runningRun('runner', { executor: 'runner/x' }),
    ]);
    const completedAt = new Date().toISOString();
    const sweep = () =>
      replicaA.failRunsOfDeadExecutors({ prefix: 'api/', error: 'replica gone', completedAt });
    expect(await sweep()).toEqual([]);

    await gone.release(); // the connection holding B's lock ends, as when its process dies
    expect(await sweep()).toEqual(['sync-b']);
    expect((await replicaA.getRun('sync-b'))?.error).toBe('replica gone');
    for (const id of ['sync-a', 'queued', 'runner'])
      expect((await replicaA.getRun(id))?.status).toBe('running');
    await live.release();
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
    const live = await store.holdExecutorLock('embedded/a/1/1');
    const gone = await store.holdExecutorLock('embedded/b/1/1');
    await store.insertRuns([
      runningRun('sync-a', { executor: 'embedded/a/1/1' }),
      runningRun('sync-b', { executor: 'embedded/b/1/1' }),
      runningRun('queued', {}),
    ]);
    const completedAt = new Date().toISOString();
    const sweep = () =>
      store.failRunsOfDeadExecutors({ prefix: 'embedded/', error: 'executor gone', completedAt });
    expect(await sweep()).toEqual([]);
    await gone.release();
    expect(await sweep()).toEqual(['sync-b']);
    expect((await store.getRun('sync-b'))?.error).toBe('executor gone');
    for (const id of ['sync-a', 'queued']) expect((await store.getRun(id))?.status).toBe('running');
    await live.release();
  });
});
