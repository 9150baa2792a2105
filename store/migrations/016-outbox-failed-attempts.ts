import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const outboxFailedAttempts: Migration = {
  id: 16,
  name: 'outbox rows count their failed attempts',
  pg: `
      -- Attempts in a row that ended without an outcome from the row's handler: it threw, or the process died
      -- during it. A claim counts one, an outcome (done, retry later, abandon) resets it. At
      -- KUBEGLUE_JOB_MAX_FAILURES the row is given up (platform/supervisor.ts). attempts counts every claim.
      ALTER TABLE outbox ADD COLUMN failures integer NOT NULL DEFAULT 0;
    `,
  sqlite: `
      ALTER TABLE outbox ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
    `,
};
