import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runStatsIndex: Migration = {
  id: 21,
  name: 'the start-time index of runs carries what the run statistics read',
  pg: `
      -- GET /v1/stats/runs reads every run of its window (a day: as many as the runs of a day) for its counts by
      -- bucket, status and tool and its duration percentiles. With those columns in the list's index on the start
      -- time, that is an index-only scan of the window, where it was a heap fetch per run. One index serves both:
      -- a second one on started_at drew the keyset pages of GET /v1/runs away from this one (the planner took
      -- the narrower index and sorted). Rebuilt here, under the migration's lock.
      DROP INDEX runs_started_idx;
      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC) INCLUDE (status, tool_id, duration_ms);
    `,
  sqlite: `
      -- SQLite has no INCLUDE: the columns are keys after the list's two, which a covering scan reads the same.
      DROP INDEX runs_started_idx;
      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC, status, tool_id, duration_ms);
    `,
};
