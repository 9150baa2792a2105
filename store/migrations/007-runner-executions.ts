import { iso, type Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runnerExecutions: Migration = {
  id: 7,
  name: 'runner executions',
  pg: `
      -- The attempt of a run a runner Pod executes, and how it authenticates: only the SHA-256 hash of the
      -- attempt's token is kept. The internal API finds the execution by that hash (hence UNIQUE), and
      -- deduplicates resent event batches by last_seq, which a new attempt resets.
      CREATE TABLE run_executions (
        run_id       text COLLATE "C" PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        attempt      integer NOT NULL CHECK (attempt >= 1),
        token_hash   text NOT NULL UNIQUE,
        issued_at    timestamptz NOT NULL,
        heartbeat_at timestamptz,
        last_seq     bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
      );
      COMMENT ON COLUMN run_executions.token_hash IS 'SHA-256 (hex) of the per-run token; the token itself is never stored';
      COMMENT ON COLUMN run_executions.last_seq IS 'highest event sequence number accepted from the current attempt';
    `,
  sqlite: `
      CREATE TABLE run_executions (
        run_id       TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        attempt      INTEGER NOT NULL CHECK (attempt >= 1),
        token_hash   TEXT NOT NULL UNIQUE, -- SHA-256 (hex) of the per-run token; the token itself is never stored
        issued_at    TEXT NOT NULL ${iso('issued_at')},
        heartbeat_at TEXT ${iso('heartbeat_at')},
        last_seq     INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
      );
    `,
};
