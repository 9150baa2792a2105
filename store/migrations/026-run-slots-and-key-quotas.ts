import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runSlotsAndKeyQuotas: Migration = {
  id: 26,
  name: 'run slots of tools and keys, and API key quotas',
  pg: `
      -- Quotas of an API key (docs/operations.md#quotas-per-api-key); NULL: none.
      ALTER TABLE api_keys ADD COLUMN quota_runs_per_minute integer CHECK (quota_runs_per_minute >= 1);
      ALTER TABLE api_keys ADD COLUMN quota_concurrent_runs integer CHECK (quota_concurrent_runs >= 1);
      -- The runs counted against a tool's maxConcurrentRuns or a key's concurrent runs, whichever API replica,
      -- operator or runner Pod executes them (store/queries/run-slots.ts). A row counts while its run is
      -- running in runs, or, before the run has a row there (a sync run's record is written while it runs;
      -- an unrecorded run has none), until expires_at. tool_state: held (executing), waiting (in the tool's
      -- queue, in tool_seq order), or NULL (counted for its key only).
      CREATE TABLE run_slots (
        run_id     text COLLATE "C" PRIMARY KEY,
        tool_id    text,
        tool_state text CHECK (tool_state IN ('held', 'waiting')),
        tool_seq   bigint,
        key_id     text,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT run_slots_tool_state CHECK ((tool_id IS NULL) = (tool_state IS NULL))
      );
      CREATE INDEX run_slots_tool_idx ON run_slots (tool_id, tool_seq) WHERE tool_id IS NOT NULL;
      CREATE INDEX run_slots_key_idx ON run_slots (key_id) WHERE key_id IS NOT NULL;
      -- Runs a key started per minute (fixed windows starting on the minute): the quota runs_per_minute.
      CREATE TABLE api_key_run_counts (
        key_id       text NOT NULL,
        window_start timestamptz NOT NULL,
        runs         integer NOT NULL,
        PRIMARY KEY (key_id, window_start)
      );
    `,
  sqlite: `
      ALTER TABLE api_keys ADD COLUMN quota_runs_per_minute INTEGER CHECK (quota_runs_per_minute >= 1);
      ALTER TABLE api_keys ADD COLUMN quota_concurrent_runs INTEGER CHECK (quota_concurrent_runs >= 1);
      CREATE TABLE run_slots (
        run_id     TEXT PRIMARY KEY,
        tool_id    TEXT,
        tool_state TEXT CHECK (tool_state IN ('held', 'waiting')),
        tool_seq   INTEGER,
        key_id     TEXT,
        expires_at TEXT NOT NULL ${iso('expires_at')},
        created_at TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')},
        CONSTRAINT run_slots_tool_state CHECK ((tool_id IS NULL) = (tool_state IS NULL))
      );
      CREATE INDEX run_slots_tool_idx ON run_slots (tool_id, tool_seq) WHERE tool_id IS NOT NULL;
      CREATE INDEX run_slots_key_idx ON run_slots (key_id) WHERE key_id IS NOT NULL;
      CREATE TABLE api_key_run_counts (
        key_id       TEXT NOT NULL,
        window_start TEXT NOT NULL ${iso('window_start')},
        runs         INTEGER NOT NULL,
        PRIMARY KEY (key_id, window_start)
      );
    `,
};
