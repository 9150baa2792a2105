export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/**
 * Append-only: never edit or reorder an entry that has shipped; add a new one with the next id.
 * Each entry runs inside the migration transaction, so it must not use statements that refuse to run in one
 * (CREATE INDEX CONCURRENTLY, VACUUM).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'runs and run results',
    sql: `
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
  },
  {
    id: 2,
    name: 'api keys and outbox',
    sql: `
      CREATE TABLE api_keys (
        id           text PRIMARY KEY,
        name         text NOT NULL,
        key_hash     text NOT NULL UNIQUE,
        tool_ids     text[],
        is_admin     boolean NOT NULL DEFAULT false,
        created_at   timestamptz NOT NULL DEFAULT now(),
        revoked_at   timestamptz,
        last_used_at timestamptz
      );
      COMMENT ON COLUMN api_keys.key_hash IS 'hash of the key; the key itself is never stored';
      COMMENT ON COLUMN api_keys.tool_ids IS 'NULL = every tool';

      CREATE TABLE outbox (
        id              bigserial PRIMARY KEY,
        kind            text NOT NULL,
        run_id          text COLLATE "C",
        payload         jsonb NOT NULL DEFAULT '{}',
        attempts        integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        created_at      timestamptz NOT NULL DEFAULT now(),
        done_at         timestamptz,
        last_error      text
      );
      -- The delivery loop takes due rows with FOR UPDATE SKIP LOCKED.
      CREATE INDEX outbox_due_idx ON outbox (next_attempt_at, id) WHERE done_at IS NULL;
      CREATE INDEX outbox_run_idx ON outbox (run_id) WHERE run_id IS NOT NULL;
    `,
  },
  {
    id: 3,
    name: 'embedded resources and their change feed',
    sql: `
      -- The revision counter is one row rather than a SEQUENCE: writers lock it for their whole transaction, so
      -- revisions commit in order and without gaps, and a watcher that has read up to revision N never later
      -- finds an event below N appear (etcd's guarantee).
      CREATE TABLE resource_revision (
        singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        revision           bigint NOT NULL,
        compacted_revision bigint NOT NULL
      );
      INSERT INTO resource_revision (revision, compacted_revision) VALUES (0, 0);

      CREATE TABLE resources (
        kind             text COLLATE "C" NOT NULL,
        namespace        text COLLATE "C" NOT NULL,
        name             text COLLATE "C" NOT NULL,
        uid              text NOT NULL UNIQUE,
        resource_version bigint NOT NULL,
        generation       bigint NOT NULL,
        owner_uids       text[] NOT NULL DEFAULT '{}',
        object           jsonb NOT NULL,
        PRIMARY KEY (kind, namespace, name)
      );
      CREATE INDEX resources_owner_uids_idx ON resources USING gin (owner_uids);

      CREATE TABLE resource_events (
        seq        bigint PRIMARY KEY,
        kind       text COLLATE "C" NOT NULL,
        namespace  text COLLATE "C" NOT NULL,
        name       text COLLATE "C" NOT NULL,
        type       text NOT NULL CHECK (type IN ('ADDED', 'MODIFIED', 'DELETED')),
        object     jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX resource_events_kind_seq_idx ON resource_events (kind, namespace, seq);
    `,
  },
  {
    id: 4,
    name: 'embedded secrets',
    sql: `
      -- Secrets of the embedded deployment (what a Kubernetes Secret holds in production). The store keeps
      -- ciphertext only: the caller encrypts before putSecret and decrypts after getSecret.
      CREATE TABLE embedded_secrets (
        namespace  text COLLATE "C" NOT NULL,
        name       text COLLATE "C" NOT NULL,
        data       bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, name)
      );
    `,
  },
  {
    id: 5,
    name: 'runs keep the tool restriction of the key that started them',
    sql: `
      -- Checked again when a completed run chains to another tool, and inherited by the chained run, so a key
      -- limited to some tools cannot reach others through chains.
      ALTER TABLE runs ADD COLUMN allowed_tool_ids text[];
      COMMENT ON COLUMN runs.allowed_tool_ids IS
        'tools the API key that started the run (or its chain) may use; NULL = every tool';
      -- Runs that may still chain (running, or a chain not delivered yet) take the restriction of their key:
      -- user_id is the id of the key that started the run, also for chained runs.
      UPDATE runs r SET allowed_tool_ids = k.tool_ids
        FROM api_keys k
       WHERE k.id = r.user_id AND k.tool_ids IS NOT NULL
         AND (r.status = 'running'
              OR r.run_id IN (SELECT o.run_id FROM outbox o WHERE o.kind = 'chain' AND o.done_at IS NULL));
    `,
  },
  {
    id: 6,
    name: 'runtime credentials of queued runs',
    sql: `
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
  },
  {
    id: 7,
    name: 'runner executions',
    sql: `
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
  },
  {
    id: 8,
    name: 'system documentation',
    sql: `
      -- The processed documentation of a system variant (id + environment), and the work of making it: a
      -- request (create/update with documentationUrl, an upload, a postgres:// system) sets status 'pending'
      -- and a new request_id; whoever claims it (lease_until) processes it and writes the result only if the
      -- request_id is still the same, so a newer request always wins. Plain types (JSON as text, the upload
      -- as bytes) so the statements port to SQLite unchanged.
      CREATE TABLE system_documentation (
        system_id         text NOT NULL,
        environment       text NOT NULL,
        request_id        text NOT NULL,
        status            text NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
        source            text NOT NULL,
        keywords          text,
        upload            bytea,
        upload_type       text,
        requested_at      timestamptz NOT NULL,
        lease_until       timestamptz,
        attempts          integer NOT NULL DEFAULT 0,
        fetched_at        timestamptz,
        error             text,
        summary           text,
        api_key_placement text,
        PRIMARY KEY (system_id, environment)
      );
    `,
  },
  {
    id: 9,
    name: 'oauth tokens and authorization states',
    sql: `
      -- The access (and refresh) token of each OAuth system variant, sealed by the caller (AES-256-GCM, bound
      -- to system_key), with what may be shown: expiry, scopes, status. lock_owner/lock_until is the lease
      -- that makes one process of all the replicas refresh a token while the others wait for its result.
      -- Times are epoch milliseconds (plain integers, the same on every database).
      CREATE TABLE oauth_tokens (
        system_key  text PRIMARY KEY,
        grant_type  text,
        fingerprint text,
        sealed      bytea,
        token_hash  text,
        expires_at  bigint,
        scopes      text,
        status      text NOT NULL DEFAULT 'none',
        lock_owner  text,
        lock_until  bigint NOT NULL DEFAULT 0,
        updated_at  bigint NOT NULL DEFAULT 0
      );
      -- Authorization requests in flight: the state (by its SHA-256 only) is the callback's credential,
      -- single use (taken by DELETE … RETURNING) and short-lived. sealed holds the PKCE verifier.
      CREATE TABLE oauth_states (
        state_hash  text PRIMARY KEY,
        system_key  text NOT NULL,
        system_id   text NOT NULL,
        environment text NOT NULL,
        api_key_id  text NOT NULL,
        sealed      bytea NOT NULL,
        expires_at  bigint NOT NULL
      );
      CREATE INDEX oauth_states_expires_idx ON oauth_states (expires_at);
    `,
  },
];
