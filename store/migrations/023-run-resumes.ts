import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runResumes: Migration = {
  id: 23,
  name: 'a resumed run names the run it resumes and how many of its steps it reuses',
  pg: `
      -- POST /v1/runs/{runId}/resume: every executor builds the run's order from the row (runs/execution/order.ts),
      -- which reads the reused step results from the resumed run's stored results.
      ALTER TABLE runs ADD COLUMN resumed_from text;
      ALTER TABLE runs ADD COLUMN reused_steps integer;
    `,
  sqlite: `
      ALTER TABLE runs ADD COLUMN resumed_from TEXT;
      ALTER TABLE runs ADD COLUMN reused_steps INTEGER;
    `,
};
