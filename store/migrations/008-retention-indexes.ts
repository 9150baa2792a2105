import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const retentionIndexes: Migration = {
  id: 8,
  name: 'retention indexes of run results and files',
  pg: `
      -- Run retention deletes results and files by age in small batches (store/queries/retention.ts).
      CREATE INDEX run_results_stored_idx ON run_results (stored_at);
      CREATE INDEX run_files_created_idx ON run_files (created_at);
    `,
  sqlite: `
      CREATE INDEX run_results_stored_idx ON run_results (stored_at);
      CREATE INDEX run_files_created_idx ON run_files (created_at);
    `,
};
