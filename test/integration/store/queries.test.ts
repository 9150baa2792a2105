import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { embeddedStorePath, MIGRATIONS, openStore } from '../../../store/index.ts';
import { createTestDatabase } from '../../support/postgres.ts';
import { describeStore, runningRun } from '../../support/store.ts';

const run = runningRun;

const finished = { completedAt: '2026-03-01T10:00:01.500Z', durationMs: 1500 };

describeStore('store', (store, driver, config) => {
  it('applies every migration on an empty database and reports each one', async () => {
    const lines: string[] = [];
    const fresh =
      driver === 'pg'
        ? await createTestDatabase(inject('databaseUrl'))
        : { url: ':memory:', drop: async () => {} };
    const opened = await openStore(driver === 'pg' ? { driver, url: fresh.url } : config(), {
      onProgress: (line) => lines.push(line),
    });
    try {
      expect(opened.migrations.applied).toEqual(MIGRATIONS.map((migration) => migration.id));
      expect(lines).toHaveLength(MIGRATIONS.length);
      expect(lines[0]).toContain(`migration ${MIGRATIONS[0]?.id} (${MIGRATIONS[0]?.name})`);
    } finally {
      await opened.close();
      await fresh.drop();
    }
  });

  it('applies nothing when the database is already migrated', async () => {
    if (driver === 'pg') {
      const again = await openStore(config());
      expect(again.migrations).toEqual({ applied: [], unknown: [] });
      await again.close();
      return;
    }
    // One process holds the file at a time, so reopen a file-backed database after closing it.
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-sqlite-'));
    try {
      const first = await openStore({ driver: 'sqlite', path: embeddedStorePath(dir) });
      expect(first.migrations.applied).toHaveLength(MIGRATIONS.length);
      await first.close();
      const second = await openStore({ driver: 'sqlite', path: embeddedStorePath(dir) });
      expect(second.migrations).toEqual({ applied: [], unknown: [] });
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // A Postgres-only behaviour: defined for that driver alone, so the SQLite run reports no skipped test.

  if (driver === 'pg')
    it('migrates once when two servers open an empty database at the same time', async () => {
      const fresh = await createTestDatabase(inject('databaseUrl'));
      try {
        const opened = await Promise.all([1, 2, 3].map(() => openStore({ driver: 'pg', url: fresh.url })));
        const applied = opened.map((one) => one.migrations.applied.length).sort();
        expect(applied).toEqual([0, 0, MIGRATIONS.length]);
        await Promise.all(opened.map((one) => one.close()));
        const client = new pg.Client({ connectionString: fresh.url });
        await client.connect();
        const { rows } = await client.query('SELECT id FROM kubeglue_migrations ORDER BY id');
        await client.end();
        expect(rows.map((row) => row.id)).toEqual(MIGRATIONS.map((migration) => migration.id));
      } finally {
        await fresh.drop();
      }
    });

  it('lists the runs stored before migration 22 under their systems once it ran', async () => {
    const earlier = MIGRATIONS.filter((migration) => migration.id < 22);
    const since = MIGRATIONS.filter((migration) => migration.id >= 22).map((migration) => migration.id);
    // Three runs written by a version before migration 22: in runs.system_ids only.
    const rows = [
      ['old-1', ['crm', 'erp'], '2026-01-01T00:00:01.000Z'],
      ['old-2', [], '2026-01-01T00:00:02.000Z'],
      ['old-3', ['crm'], '2026-01-01T00:00:03.000Z'],
    ] as const;
    const insert = 'INSERT INTO runs (run_id, tool_id, status, system_ids, started_at) VALUES';
    let reopen: () => Promise<Awaited<ReturnType<typeof openStore>>>;
    let cleanup: () => Promise<void>;
    if (driver === 'pg') {
      const fresh = await createTestDatabase(inject('databaseUrl'));
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        await client.query(
          'CREATE TABLE kubeglue_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        );
        for (const migration of earlier) {
          await client.query(migration.pg);
          await client.query('INSERT INTO kubeglue_migrations (id, name) VALUES ($1, $2)', [
            migration.id,
            migration.name,
          ]);
        }
        for (const [runId, systems, startedAt] of rows) {
          await client.query(`${insert} ($1, 'tool', 'running', $2, $3)`, [runId, systems, startedAt]);
        }
      } finally {
        await client.end();
      }
      reopen = () => openStore({ driver: 'pg', url: fresh.url });
      cleanup = fresh.drop;
    } else {
      const dir = await mkdtemp(join(tmpdir(), 'kubeglue-migration-22-'));
      const db = new DatabaseSync(embeddedStorePath(dir));
      db.exec(
        "CREATE TABLE kubeglue_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at TEXT NOT NULL DEFAULT '')",
      );
      for (const migration of earlier) {
        db.exec(migration.sqlite);
        db.prepare('INSERT INTO kubeglue_migrations (id, name) VALUES (?, ?)').run(
          migration.id,
          migration.name,
        );
      }
      for (const [runId, systems, startedAt] of rows) {
        db.prepare(`${insert} (?, 'tool', 'running', ?, ?)`).run(runId, JSON.stringify(systems), startedAt);
      }
      db.close();
      reopen = () => openStore({ driver: 'sqlite', path: embeddedStorePath(dir) });
      cleanup = () => rm(dir, { recursive: true, force: true });
    }
    try {
      const migrated = await reopen();
      try {
        expect(migrated.migrations.applied).toEqual(since);
        const crm = await migrated.listRuns({ systemId: 'crm', page: 1, limit: 10 });
        expect(crm.runs.map((listed) => listed.runId)).toEqual(['old-3', 'old-1']);
        expect(crm).toMatchObject({ total: 2, totalExact: true, hasMore: false });
        const erp = await migrated.listRuns({ systemId: 'erp', page: 1, limit: 10 });
        expect(erp.runs.map((listed) => listed.runId)).toEqual(['old-1']);
        // And the runs' own record is as it was.
        expect((await migrated.getRun('old-1'))?.systemIds).toEqual(['crm', 'erp']);
      } finally {
        await migrated.close();
      }
    } finally {
      await cleanup();
    }
  });

  it('returns a run as it was inserted, every field included', async () => {
    const full = run('run-full', {
      toolId: 'tool-full',
      requestSource: 'webhook',
      userId: 'user-1',
      systemIds: ['crm', 'billing'],
      executionMode: 'dev',
      traceId: 'trace-1',
      parentRunId: 'run-parent',
      tool: {
        id: 'tool-full',
        steps: [{ id: 's1', config: { url: 'https://example.test', method: 'GET' } }],
      },
      toolPayload: { customer: 'ACME', tags: ['a', 'b'], nested: { n: 1, x: null } },
      options: { async: true, timeout: 5000 },
      executor: 'worker-1',
    });
    const result = await store.insertRun(full, { inputHash: 'hash-1' });
    expect(result).toEqual({ status: 'inserted', run: full });
    expect(await store.getRun('run-full')).toEqual(full);
  });

  it('answers undefined for an unknown run', async () => {
    expect(await store.getRun('run-missing')).toBeUndefined();
  });

  it('returns the existing run for a repeated runId with the same tool and input hash', async () => {
    const first = run('run-idem', { toolPayload: { a: 1 } });
    await store.insertRun(first, { inputHash: 'h' });
    const again = await store.insertRun(
      { ...first, metadata: { startedAt: '2026-03-02T00:00:00.000Z' } },
      {
        inputHash: 'h',
      },
    );
    expect(again).toEqual({ status: 'existing', run: first });
  });

  it('refuses a repeated runId with another tool or other inputs', async () => {
    await store.insertRun(run('run-taken'), { inputHash: 'h' });
    expect(await store.insertRun(run('run-taken', { toolId: 'tool-b' }), { inputHash: 'h' })).toEqual({
      status: 'conflict',
    });
    expect(await store.insertRun(run('run-taken'), { inputHash: 'other' })).toEqual({ status: 'conflict' });
    expect(await store.insertRun(run('run-taken'))).toEqual({ status: 'conflict' });
    expect((await store.getRun('run-taken'))?.toolId).toBe('tool-a');
  });

  it('inserts a runId exactly once when the same request arrives concurrently', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () => store.insertRun(run('run-race'), { inputHash: 'same' })),
    );
    const statuses = results.map((result) => result.status).sort();
    expect(statuses).toEqual([
      'existing',
      'existing',
      'existing',
      'existing',
      'existing',
      'existing',
      'existing',
      'inserted',
    ]);
  });

  it('writes the terminal state only once; a later writer loses', async () => {
    await store.insertRun(run('run-finish'));
    const first = await store.finishRun('run-finish', { status: 'success', ...finished });
    const second = await store.finishRun('run-finish', {
      status: 'failed',
      error: 'too late',
      completedAt: '2026-03-01T10:00:09.000Z',
      durationMs: 9000,
      result: { success: false, error: 'too late' },
    });
    expect([first, second]).toEqual([true, false]);
    const stored = await store.getRun('run-finish');
    expect(stored?.status).toBe('success');
    expect(stored?.error).toBeUndefined();
    expect(stored?.metadata).toEqual({ startedAt: '2026-03-01T10:00:00.000Z', ...finished });
    expect(await store.getRunResult('run-finish')).toBeUndefined();
  });

  it('lets exactly one of several concurrent terminal writes win', async () => {
    await store.insertRun(run('run-finish-race'));
    const outcomes = await Promise.all(
      (['success', 'failed', 'aborted'] as const).map((status) =>
        store.finishRun('run-finish-race', { status, ...finished }),
      ),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(1);
  });

  it('answers false when finishing an unknown run', async () => {
    expect(await store.finishRun('run-nobody', { status: 'aborted', ...finished })).toBe(false);
  });

  it('stores step results, result data and files together with the terminal state', async () => {
    await store.insertRun(run('run-result', { toolPayload: { q: 'x' } }));
    await store.saveStepResult('run-result', 0, { stepId: 'fetch', success: false, error: 'partial' });
    const content = new TextEncoder().encode('id,name\n1,ACME\n');
    const ok = await store.finishRun('run-result', {
      status: 'success',
      ...finished,
      stepResults: [
        { stepId: 'fetch', success: true, data: [{ id: 1 }] },
        { stepId: 'shape', success: true, data: { count: 1 } },
      ],
      result: { success: true, data: { rows: 1 } },
      files: [{ fileKey: 'report.csv', filename: 'report.csv', contentType: 'text/csv', content }],
    });
    expect(ok).toBe(true);
    expect(await store.getStepResults('run-result')).toEqual([
      { stepId: 'fetch', success: true, data: [{ id: 1 }] },
      { stepId: 'shape', success: true, data: { count: 1 } },
    ]);
    expect(await store.getRunResult('run-result')).toEqual({
      runId: 'run-result',
      success: true,
      data: { rows: 1 },
      stepResults: [
        { stepId: 'fetch', success: true, data: [{ id: 1 }] },
        { stepId: 'shape', success: true, data: { count: 1 } },
      ],
      toolPayload: { q: 'x' },
      error: null,
      storedAt: expect.any(String),
    });
    const file = await store.getRunFile('run-result', 'report.csv');
    expect(file && Buffer.from(file.content).toString()).toBe('id,name\n1,ACME\n');
    expect(file?.size).toBe(content.byteLength);
    expect((await store.getRun('run-result'))?.fileArtifacts).toEqual([
      { fileKey: 'report.csv', filename: 'report.csv', contentType: 'text/csv', size: content.byteLength },
    ]);
  });

  it('keeps step results saved while running when the run is cancelled', async () => {
    await store.insertRun(run('run-cancel'));
    await store.saveStepResult('run-cancel', 0, { stepId: 'first', success: true, data: 'done' });
    expect(await store.finishRun('run-cancel', { status: 'aborted', error: 'cancelled', ...finished })).toBe(
      true,
    );
    expect(await store.getStepResults('run-cancel')).toEqual([
      { stepId: 'first', success: true, data: 'done' },
    ]);
    expect((await store.getRun('run-cancel'))?.error).toBe('cancelled');
  });

  it('rolls back everything done in a transaction that throws', async () => {
    await expect(
      store.transaction(async (tx) => {
        await tx.insertRun(run('run-rollback'));
        expect(await tx.finishRun('run-rollback', { status: 'success', ...finished })).toBe(true);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await store.getRun('run-rollback')).toBeUndefined();

    await store.transaction(async (tx) => {
      await tx.insertRun(run('run-commit'));
      await tx.finishRun('run-commit', { status: 'failed', error: 'Step x failed: nope', ...finished });
    });
    expect((await store.getRun('run-commit'))?.status).toBe('failed');
  });

  it('refuses a terminal run without a completion time', async () => {
    await expect(store.insertRuns([run('run-bad', { status: 'success' })])).rejects.toThrow();
  });
});
