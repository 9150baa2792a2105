import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runtimeCredentials: Migration = {
  id: 6,
  name: 'runtime credentials of queued runs',
  pg: `
      -- Runtime credentials of an accepted async run, until it ran: keyed by the exact run id (no name derived
      -- from it could meet a system's Secret or another run's), written in the run's insert statement (only
      -- the request that stored the run stores them) and gone with the run at the latest. Ciphertext only:
      -- AES-256-GCM sealed by the caller, bound to the run id.
      CREATE TABLE run_credentials (
        run_id     text COLLATE "C" PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        sealed     bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  sqlite: `
      CREATE TABLE run_credentials (
        run_id     TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        sealed     BLOB NOT NULL,
        created_at TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')}
      );
    `,
};
