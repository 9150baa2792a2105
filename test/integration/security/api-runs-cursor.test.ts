/**
 * Issue 7, item 9 (run list paging), at the store: keyset pages (`after`) list exactly what offset pages
 * list, with every filter, and on Postgres they are read from the list indexes without sorting, however deep.
 */
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildListRunsQuery, type ListRunsFilter, type StoredRun } from '../../../store/index.ts';
import { describeStore, postgresUrl, useTestStore } from '../../support/store.ts';

const RUN_COUNT = 3_000;

function seedRuns(): StoredRun[] {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: RUN_COUNT }, (_, i) => ({
    // Ids out of time order, and start times shared by several runs, so the run id tie-break matters.
    runId: `run-${((i * 7919) % RUN_COUNT).toString().padStart(5, '0')}`,
    toolId: `tool-${i % 4}`,
    status: i % 5 === 0 ? ('failed' as const) : ('success' as const),
    requestSource: i % 3 === 0 ? 'webhook' : 'api',
    userId: `user-${i % 6}`,
    systemIds: [],
    metadata: {
      startedAt: new Date(start + Math.floor(i / 4) * 1000).toISOString(),
      completedAt: new Date(start + Math.floor(i / 4) * 1000 + 10).toISOString(),
      durationMs: 10,
    },
  }));
}

const FILTERS: Record<string, Omit<ListRunsFilter, 'page' | 'limit'>> = {
  all: {},
  toolId: { toolId: 'tool-2' },
  status: { status: 'failed' },
  'tool restriction': { toolIds: ['tool-1', 'tool-3'] },
  combination: { toolId: 'tool-1', status: 'success', requestSources: ['api'] },
};

describeStore('keyset paging of runs', (store) => {
  beforeAll(async () => {
    await store.insertRuns(seedRuns());
  });

  it('lists with a cursor exactly what offset pages list, with every filter', async () => {
    for (const [name, filter] of Object.entries(FILTERS)) {
      const byOffset: string[] = [];
      for (let page = 1; ; page++) {
        const listed = await store.listRuns({ ...filter, page, limit: 100 });
        byOffset.push(...listed.runs.map((run) => run.runId));
        if (!listed.hasMore) break;
      }
      const byCursor: string[] = [];
      let after: ListRunsFilter['after'];
      for (;;) {
        const listed = await store.listRuns({ ...filter, page: 1, limit: 100, ...(after ? { after } : {}) });
        byCursor.push(...listed.runs.map((run) => run.runId));
        expect(listed.total, name).toBe(byOffset.length);
        const last = listed.runs.at(-1);
        if (!listed.hasMore || !last) break;
        after = { startedAt: last.metadata.startedAt, runId: last.runId };
      }
      expect(byCursor, name).toEqual(byOffset);
    }
  });
});

describe('keyset page plans on Postgres', () => {
  const { store, config } = useTestStore('pg');

  beforeAll(async () => {
    await store.insertRuns(seedRuns());
  });

  it('reads a deep keyset page through the list index, starting at the cursor', async () => {
    const [deep] = (await store.listRuns({ page: 25, limit: 100 })).runs;
    const after = { startedAt: deep!.metadata.startedAt, runId: deep!.runId };
    const client = new pg.Client({ connectionString: postgresUrl(config()) });
    await client.connect();
    try {
      await client.query('ANALYZE runs');
      const expected: Array<[Omit<ListRunsFilter, 'page' | 'limit'>, string]> = [
        [{}, 'runs_started_idx'],
        [{ toolId: 'tool-2' }, 'runs_tool_started_idx'],
      ];
      for (const [filter, index] of expected) {
        const query = buildListRunsQuery({ ...filter, page: 1, limit: 100, after });
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${query.sql}`, query.params);
        const plan = JSON.stringify(rows[0]);
        expect(plan, plan).not.toContain('Seq Scan');
        expect(plan, plan).toContain(`"Index Name":"${index}"`);
        // The cursor bounds the index scan itself: rows before it are never read.
        expect(plan, plan).toMatch(/"Index Cond":"[^"]*ROW\(started_at, run_id\) < ROW\(/);
      }
    } finally {
      await client.end();
    }
  });
});
