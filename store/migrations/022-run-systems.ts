import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runSystems: Migration = {
  id: 22,
  name: 'the runs of each system, in list order',
  pg: `
      -- GET /v1/runs?systemId=: one row per system of a run, keyed in the list's order, so a page of one system's
      -- runs walks this key from its newest run (or from the cursor) and stops after the page. The GIN index on
      -- runs.system_ids only answered "which runs", in no order: a page sorted every run of the system (7-8 s
      -- with 10 M runs), and nothing else reads it. Written in the statement that inserts the run
      -- (store/queries/run-writes.ts), deleted with it (ON DELETE CASCADE, through run_systems_run_idx).
      -- A run's systems and start time never change, so the rows never do either.
      CREATE TABLE run_systems (
        system_id  text COLLATE "C" NOT NULL,
        started_at timestamptz NOT NULL,
        run_id     text COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        PRIMARY KEY (system_id, started_at, run_id)
      );
      CREATE INDEX run_systems_run_idx ON run_systems (run_id);
      INSERT INTO run_systems (system_id, started_at, run_id)
        SELECT s.value, r.started_at, r.run_id FROM runs r, unnest(r.system_ids) AS s(value)
        ON CONFLICT DO NOTHING;
      DROP INDEX runs_system_ids_idx;
    `,
  sqlite: `
      CREATE TABLE run_systems (
        system_id  TEXT NOT NULL,
        started_at TEXT NOT NULL,
        run_id     TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        PRIMARY KEY (system_id, started_at DESC, run_id DESC)
      ) WITHOUT ROWID;
      CREATE INDEX run_systems_run_idx ON run_systems (run_id);
      INSERT INTO run_systems (system_id, started_at, run_id)
        SELECT s.value, r.started_at, r.run_id FROM runs r, json_each(r.system_ids) AS s WHERE true
        ON CONFLICT DO NOTHING;
    `,
};
