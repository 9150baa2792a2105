import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runsAndRunResults: Migration = {
  id: 1,
  name: 'runs and run results',
  pg: `
      -- run_id sorts with the C collation so "ORDER BY started_at DESC, run_id DESC" is the same on every server.
      CREATE TABLE runs (
        run_id             text COLLATE "C" PRIMARY KEY,
        tool_id            text NOT NULL,
        status             text NOT NULL CHECK (status IN ('running', 'success', 'failed', 'aborted')),
        request_source     text NOT NULL DEFAULT 'api',
        user_id            text,
        system_ids         text[] NOT NULL DEFAULT '{}',
        execution_mode     text CHECK (execution_mode IN ('prod', 'dev')),
        trace_id           text,
        parent_run_id      text,
        started_at         timestamptz NOT NULL,
        completed_at       timestamptz,
        duration_ms        bigint,
        error              text,
        tool               jsonb,
        tool_payload       jsonb,
        options            jsonb,
        input_hash         text,
        file_artifacts     jsonb,
        result_storage_uri text,
        executor           text,
        CONSTRAINT runs_completed_iff_terminal CHECK ((status = 'running') = (completed_at IS NULL))
      );

      -- One index per GET /v1/runs filter, each ending in the list order (started_at DESC, run_id DESC), so a
      -- page is read in order from the index without sorting the matching rows.
      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC);
      CREATE INDEX runs_tool_started_idx ON runs (tool_id, started_at DESC, run_id DESC);
      CREATE INDEX runs_status_started_idx ON runs (status, started_at DESC, run_id DESC);
      CREATE INDEX runs_tool_status_started_idx ON runs (tool_id, status, started_at DESC, run_id DESC);
      CREATE INDEX runs_source_started_idx ON runs (request_source, started_at DESC, run_id DESC);
      CREATE INDEX runs_user_started_idx ON runs (user_id, started_at DESC, run_id DESC) WHERE user_id IS NOT NULL;
      CREATE INDEX runs_system_ids_idx ON runs USING gin (system_ids);
      -- Crash recovery looks for running runs of executors that are gone.
      CREATE INDEX runs_running_executor_idx ON runs (executor) WHERE status = 'running';
      CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

      CREATE TABLE run_step_results (
        run_id  text COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        seq     integer NOT NULL,
        step_id text NOT NULL,
        success boolean NOT NULL,
        data    jsonb,
        error   text,
        PRIMARY KEY (run_id, seq)
      );

      CREATE TABLE run_results (
        run_id       text COLLATE "C" PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        success      boolean NOT NULL,
        data         jsonb,
        step_results jsonb NOT NULL DEFAULT '[]',
        tool_payload jsonb,
        error        text,
        stored_at    timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE run_files (
        run_id       text COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        file_key     text NOT NULL,
        filename     text NOT NULL,
        content_type text NOT NULL,
        size         bigint NOT NULL,
        content      bytea NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, file_key)
      );
    `,
  sqlite: `
      -- Timestamps are ISO-8601 UTC text with milliseconds (store/dialect.ts), checked so text order is time order;
      -- JSON_TEXT holds JSON, TEXT_ARRAY a JSON array of texts; the driver decodes both by declared type.
      CREATE TABLE runs (
        run_id             TEXT PRIMARY KEY,
        tool_id            TEXT NOT NULL,
        status             TEXT NOT NULL CHECK (status IN ('running', 'success', 'failed', 'aborted')),
        request_source     TEXT NOT NULL DEFAULT 'api',
        user_id            TEXT,
        system_ids         TEXT_ARRAY NOT NULL DEFAULT '[]',
        execution_mode     TEXT CHECK (execution_mode IN ('prod', 'dev')),
        trace_id           TEXT,
        parent_run_id      TEXT,
        started_at         TEXT NOT NULL ${iso('started_at')},
        completed_at       TEXT ${iso('completed_at')},
        duration_ms        INTEGER,
        error              TEXT,
        tool               JSON_TEXT,
        tool_payload       JSON_TEXT,
        options            JSON_TEXT,
        input_hash         TEXT,
        file_artifacts     JSON_TEXT,
        result_storage_uri TEXT,
        executor           TEXT,
        CONSTRAINT runs_completed_iff_terminal CHECK ((status = 'running') = (completed_at IS NULL))
      );

      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC);
      CREATE INDEX runs_tool_started_idx ON runs (tool_id, started_at DESC, run_id DESC);
      CREATE INDEX runs_status_started_idx ON runs (status, started_at DESC, run_id DESC);
      CREATE INDEX runs_tool_status_started_idx ON runs (tool_id, status, started_at DESC, run_id DESC);
      CREATE INDEX runs_source_started_idx ON runs (request_source, started_at DESC, run_id DESC);
      CREATE INDEX runs_user_started_idx ON runs (user_id, started_at DESC, run_id DESC) WHERE user_id IS NOT NULL;
      -- No index on system_ids (SQLite has no GIN): the systemId filter walks runs_started_idx.
      CREATE INDEX runs_running_executor_idx ON runs (executor) WHERE status = 'running';
      CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

      CREATE TABLE run_step_results (
        run_id  TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        seq     INTEGER NOT NULL,
        step_id TEXT NOT NULL,
        success BOOLEAN NOT NULL,
        data    JSON_TEXT,
        error   TEXT,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;

      CREATE TABLE run_results (
        run_id       TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        success      BOOLEAN NOT NULL,
        data         JSON_TEXT,
        step_results JSON_TEXT NOT NULL DEFAULT '[]',
        tool_payload JSON_TEXT,
        error        TEXT,
        stored_at    TEXT NOT NULL DEFAULT ${NOW} ${iso('stored_at')}
      );

      CREATE TABLE run_files (
        run_id       TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
        file_key     TEXT NOT NULL,
        filename     TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size         INTEGER NOT NULL,
        content      BLOB NOT NULL,
        created_at   TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')},
        PRIMARY KEY (run_id, file_key)
      );
    `,
};
