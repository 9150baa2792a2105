import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runAttempts: Migration = {
  id: 15,
  name: 'attempts of runs',
  pg: `
      -- Which execution of the run this is: a read-only async run whose execution was lost (a shutdown, a
      -- crash, a runner Pod gone) is handed back with attempt + 1 and executed again from the start.
      ALTER TABLE runs ADD COLUMN attempt integer NOT NULL DEFAULT 1 CHECK (attempt >= 1);
    `,
  sqlite: `
      ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1);
    `,
};
