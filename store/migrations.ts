/**
 * One migration, in both dialects. Why two texts and not one description that generates both: DDL differs on
 * nearly every line (types, collations, gin and partial indexes, comments, defaults), so a generator would be
 * a small schema language of its own that hides the real schema behind it. Two plain texts, side by side in one
 * entry with one id and one name, keep each schema readable as its database sees it, make it impossible to add
 * a migration for one backend only (both fields are required), and every store test runs against both.
 */
export interface Migration {
  id: number;
  name: string;
  /** PostgreSQL. */
  pg: string;
  /** SQLite, with the representations store/dialect.ts describes. */
  sqlite: string;
}

/**
 * SQLite's CHECK for a timestamp column: exactly the format dialect.ts writes, so that comparing the text
 * orders by time (a shipped migration's text must never change, so neither may this).
 */
function iso(column: string): string {
  return `CHECK (${column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')`;
}

/** SQLite's DEFAULT now(), in that format. */
const NOW = `(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/**
 * Append-only: never edit or reorder an entry that has shipped; add a new one with the next id, in both
 * dialects. Each entry runs inside the migration transaction, so it must not use statements that refuse to
 * run in one (CREATE INDEX CONCURRENTLY, VACUUM).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
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
  },
  {
    id: 2,
    name: 'api keys and outbox',
    pg: `
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
    sqlite: `
      CREATE TABLE api_keys (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL,
        key_hash     TEXT NOT NULL UNIQUE, -- hash of the key; the key itself is never stored
        tool_ids     TEXT_ARRAY,           -- NULL = every tool
        is_admin     BOOLEAN NOT NULL DEFAULT 0,
        created_at   TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')},
        revoked_at   TEXT ${iso('revoked_at')},
        last_used_at TEXT ${iso('last_used_at')}
      );

      -- AUTOINCREMENT: ids are never reused after pruning, as a Postgres sequence's are not.
      CREATE TABLE outbox (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        kind            TEXT NOT NULL,
        run_id          TEXT,
        payload         JSON_TEXT NOT NULL DEFAULT '{}',
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TEXT NOT NULL DEFAULT ${NOW} ${iso('next_attempt_at')},
        created_at      TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')},
        done_at         TEXT ${iso('done_at')},
        last_error      TEXT
      );
      CREATE INDEX outbox_due_idx ON outbox (next_attempt_at, id) WHERE done_at IS NULL;
      CREATE INDEX outbox_run_idx ON outbox (run_id) WHERE run_id IS NOT NULL;
    `,
  },
  {
    id: 3,
    name: 'embedded resources and their change feed',
    pg: `
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
    sqlite: `
      -- Writers serialise on the database's one write lock, so revisions commit in order and without gaps.
      CREATE TABLE resource_revision (
        singleton          INTEGER PRIMARY KEY DEFAULT 1 CHECK (singleton = 1),
        revision           INTEGER NOT NULL,
        compacted_revision INTEGER NOT NULL
      );
      INSERT INTO resource_revision (revision, compacted_revision) VALUES (0, 0);

      CREATE TABLE resources (
        kind             TEXT NOT NULL,
        namespace        TEXT NOT NULL,
        name             TEXT NOT NULL,
        uid              TEXT NOT NULL UNIQUE,
        resource_version INTEGER NOT NULL,
        generation       INTEGER NOT NULL,
        owner_uids       TEXT_ARRAY NOT NULL DEFAULT '[]',
        object           JSON_TEXT NOT NULL,
        PRIMARY KEY (kind, namespace, name)
      ) WITHOUT ROWID;

      CREATE TABLE resource_events (
        seq        INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,
        namespace  TEXT NOT NULL,
        name       TEXT NOT NULL,
        type       TEXT NOT NULL CHECK (type IN ('ADDED', 'MODIFIED', 'DELETED')),
        object     JSON_TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')}
      );
      CREATE INDEX resource_events_kind_seq_idx ON resource_events (kind, namespace, seq);
    `,
  },
  {
    id: 4,
    name: 'embedded secrets',
    pg: `
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
    sqlite: `
      CREATE TABLE embedded_secrets (
        namespace  TEXT NOT NULL,
        name       TEXT NOT NULL,
        data       BLOB NOT NULL,
        created_at TEXT NOT NULL DEFAULT ${NOW} ${iso('created_at')},
        updated_at TEXT NOT NULL DEFAULT ${NOW} ${iso('updated_at')},
        PRIMARY KEY (namespace, name)
      ) WITHOUT ROWID;
    `,
  },
  {
    id: 5,
    name: 'runs keep the tool restriction of the key that started them',
    pg: `
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
    sqlite: `
      -- tools the API key that started the run (or its chain) may use; NULL = every tool
      ALTER TABLE runs ADD COLUMN allowed_tool_ids TEXT_ARRAY;
      UPDATE runs SET allowed_tool_ids = k.tool_ids
        FROM api_keys k
       WHERE k.id = runs.user_id AND k.tool_ids IS NOT NULL
         AND (runs.status = 'running'
              OR runs.run_id IN (SELECT o.run_id FROM outbox o WHERE o.kind = 'chain' AND o.done_at IS NULL));
    `,
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
    id: 9,
    name: 'system documentation',
    pg: `
      -- The processed documentation of a system variant (id + environment), and the work of making it: a
      -- request (create/update with documentationUrl, an upload, a postgres:// system) sets status 'pending'
      -- and a new request_id; whoever claims it (lease_until) processes it and writes the result only if the
      -- request_id is still the same, so a newer request always wins. JSON as text, the upload as bytes.
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
    sqlite: `
      CREATE TABLE system_documentation (
        system_id         TEXT NOT NULL,
        environment       TEXT NOT NULL,
        request_id        TEXT NOT NULL,
        status            TEXT NOT NULL CHECK (status IN ('pending', 'ready', 'failed')),
        source            TEXT NOT NULL,
        keywords          TEXT,
        upload            BLOB,
        upload_type       TEXT,
        requested_at      TEXT NOT NULL ${iso('requested_at')},
        lease_until       TEXT ${iso('lease_until')},
        attempts          INTEGER NOT NULL DEFAULT 0,
        fetched_at        TEXT ${iso('fetched_at')},
        error             TEXT,
        summary           TEXT,
        api_key_placement TEXT,
        PRIMARY KEY (system_id, environment)
      );
    `,
  },
  {
    id: 10,
    name: 'oauth tokens and authorization states',
    pg: `
      -- The access (and refresh) token of each OAuth system variant, sealed by the caller (AES-256-GCM, bound
      -- to system_key), with what may be shown: expiry, scopes, status. lock_owner/lock_until is the lease
      -- that makes one process of all the replicas refresh a token while the others wait for its result.
      -- Times are epoch milliseconds.
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
    sqlite: `
      CREATE TABLE oauth_tokens (
        system_key  TEXT PRIMARY KEY,
        grant_type  TEXT,
        fingerprint TEXT,
        sealed      BLOB,
        token_hash  TEXT,
        expires_at  INTEGER,
        scopes      TEXT,
        status      TEXT NOT NULL DEFAULT 'none',
        lock_owner  TEXT,
        lock_until  INTEGER NOT NULL DEFAULT 0,
        updated_at  INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE oauth_states (
        state_hash  TEXT PRIMARY KEY,
        system_key  TEXT NOT NULL,
        system_id   TEXT NOT NULL,
        environment TEXT NOT NULL,
        api_key_id  TEXT NOT NULL,
        sealed      BLOB NOT NULL,
        expires_at  INTEGER NOT NULL
      );
      CREATE INDEX oauth_states_expires_idx ON oauth_states (expires_at);
    `,
  },
  {
    id: 11,
    name: 'gateway tunnels held by API replicas',
    pg: `
      -- Which API replica holds each connected gateway tunnel, and where its gateway relay listens for the
      -- other replicas. The holder refreshes expires_at while the agent stays connected; a replica that
      -- dies leaves a row that expires. A newer registration on another replica takes the row over, and
      -- the older holder sees that on its next refresh and lets its agent go. Times are epoch ms.
      CREATE TABLE gateway_tunnels (
        tunnel_id     text PRIMARY KEY,
        holder_id     text NOT NULL,
        relay_address text NOT NULL,
        targets       text NOT NULL,
        connected_at  bigint NOT NULL,
        expires_at    bigint NOT NULL
      );
    `,
    sqlite: `
      CREATE TABLE gateway_tunnels (
        tunnel_id     TEXT PRIMARY KEY,
        holder_id     TEXT NOT NULL,
        relay_address TEXT NOT NULL,
        targets       TEXT NOT NULL,
        connected_at  INTEGER NOT NULL,
        expires_at    INTEGER NOT NULL
      );
    `,
  },
  {
    id: 12,
    name: 'api keys that may host gateways',
    pg: `
      -- A key that is not an admin key but may connect gateway agents (register tunnels).
      ALTER TABLE api_keys ADD COLUMN host_gateways boolean NOT NULL DEFAULT false;
    `,
    sqlite: `
      ALTER TABLE api_keys ADD COLUMN host_gateways BOOLEAN NOT NULL DEFAULT 0;
    `,
  },
  {
    id: 13,
    name: 'api key scopes and the systems a key may use',
    pg: `
      -- What each key may do (api/scopes.ts). Existing keys get exactly what they could do before scopes:
      -- admin keys every scope; other keys every scope but keys:admin, and only tools:read, runs:read and
      -- runs:execute when limited to tools (they could not change tools, systems or run definitions);
      -- gateways:host where host_gateways was set. host_gateways stays (still written, for an older
      -- version reading the store) but is no longer read.
      ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{}';
      ALTER TABLE api_keys ADD COLUMN system_ids text[];
      COMMENT ON COLUMN api_keys.system_ids IS 'systems the key may use in tools and runs; NULL = every system';
      UPDATE api_keys SET scopes = CASE
        WHEN is_admin THEN ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write', 'keys:admin', 'gateways:host']
        WHEN tool_ids IS NOT NULL AND host_gateways THEN ARRAY['tools:read', 'runs:read', 'runs:execute', 'gateways:host']
        WHEN tool_ids IS NOT NULL THEN ARRAY['tools:read', 'runs:read', 'runs:execute']
        WHEN host_gateways THEN ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write', 'gateways:host']
        ELSE ARRAY['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write']
      END;
      -- Travels with every run like allowed_tool_ids: no key had system_ids before, so nothing to fill in.
      ALTER TABLE runs ADD COLUMN allowed_system_ids text[];
      COMMENT ON COLUMN runs.allowed_system_ids IS
        'systems the API key that started the run (or its chain) may use; NULL = every system';
    `,
    sqlite: `
      ALTER TABLE api_keys ADD COLUMN scopes TEXT_ARRAY NOT NULL DEFAULT '[]';
      -- systems the key may use in tools and runs; NULL = every system
      ALTER TABLE api_keys ADD COLUMN system_ids TEXT_ARRAY;
      UPDATE api_keys SET scopes = CASE
        WHEN is_admin THEN '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write","keys:admin","gateways:host"]'
        WHEN tool_ids IS NOT NULL AND host_gateways THEN '["tools:read","runs:read","runs:execute","gateways:host"]'
        WHEN tool_ids IS NOT NULL THEN '["tools:read","runs:read","runs:execute"]'
        WHEN host_gateways THEN '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write","gateways:host"]'
        ELSE '["tools:read","tools:write","runs:read","runs:execute","systems:read","systems:write"]'
      END;
      -- systems the API key that started the run (or its chain) may use; NULL = every system
      ALTER TABLE runs ADD COLUMN allowed_system_ids TEXT_ARRAY;
    `,
  },
  {
    id: 14,
    name: 'gateway tunnel ids owned by api keys',
    pg: `
      -- The API key that first registered a tunnel id owns it: only that key may register it again (an
      -- agent reconnecting or replaced). Durable and shared by every replica, unlike gateway_tunnels (who
      -- holds the live connection). An owner key that is revoked owns nothing any more (the claim query
      -- checks api_keys); an admin can also release an id (DELETE /v1/gateways/{tunnelId}/owner).
      CREATE TABLE gateway_tunnel_owners (
        tunnel_id  text PRIMARY KEY,
        key_id     text NOT NULL,
        claimed_at timestamptz NOT NULL DEFAULT now()
      );
    `,
    sqlite: `
      CREATE TABLE gateway_tunnel_owners (
        tunnel_id  TEXT PRIMARY KEY,
        key_id     TEXT NOT NULL,
        claimed_at TEXT NOT NULL DEFAULT ${NOW} ${iso('claimed_at')}
      );
    `,
  },
  {
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
  },
  {
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
  },
  {
    id: 17,
    name: 'schedule tick claims and the schedule of a run',
    pg: `
      -- The schedule whose tick started the run (GET /v1/runs/{id} shows it as scheduleId); the running runs
      -- of a schedule are what its concurrency policy looks at.
      ALTER TABLE runs ADD COLUMN schedule_id text;
      CREATE INDEX runs_schedule_running_idx ON runs (schedule_id)
        WHERE schedule_id IS NOT NULL AND status = 'running';
      -- One row per tick a schedule acted on, whichever process did: inserting it is the claim, so exactly
      -- one process starts (or skips) a tick across replicas and restarts. The newest row of a schedule is
      -- where its next evaluation starts; older rows are pruned as new ones are claimed.
      CREATE TABLE schedule_ticks (
        schedule_uid text NOT NULL,
        tick_at      timestamptz NOT NULL,
        namespace    text NOT NULL,
        schedule_id  text NOT NULL,
        outcome      text NOT NULL CHECK (outcome IN ('started', 'skipped', 'missed')),
        reason       text,
        run_id       text,
        attempt      integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        claimed_by   text NOT NULL,
        claimed_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (schedule_uid, tick_at),
        CONSTRAINT schedule_ticks_run_iff_started CHECK ((outcome = 'started') = (run_id IS NOT NULL))
      );
    `,
    sqlite: `
      ALTER TABLE runs ADD COLUMN schedule_id TEXT;
      CREATE INDEX runs_schedule_running_idx ON runs (schedule_id)
        WHERE schedule_id IS NOT NULL AND status = 'running';
      CREATE TABLE schedule_ticks (
        schedule_uid TEXT NOT NULL,
        tick_at      TEXT NOT NULL ${iso('tick_at')},
        namespace    TEXT NOT NULL,
        schedule_id  TEXT NOT NULL,
        outcome      TEXT NOT NULL CHECK (outcome IN ('started', 'skipped', 'missed')),
        reason       TEXT,
        run_id       TEXT,
        attempt      INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        claimed_by   TEXT NOT NULL,
        claimed_at   TEXT NOT NULL DEFAULT ${NOW} ${iso('claimed_at')},
        PRIMARY KEY (schedule_uid, tick_at),
        CONSTRAINT schedule_ticks_run_iff_started CHECK ((outcome = 'started') = (run_id IS NOT NULL))
      );
    `,
  },
  {
    id: 18,
    name: 'persistent tool state',
    pg: `
      -- Each tool's persistent state (docs/state.md): one JSON object, written by the runs that succeed
      -- (per-key compare-and-set, tools/state.ts) and by PUT/DELETE /v1/tools/{id}/state; version counts the
      -- writes. Only here, never in a resource. Deleting the tool deletes its row.
      CREATE TABLE tool_state (
        tool_id    text PRIMARY KEY,
        state      jsonb NOT NULL DEFAULT '{}',
        version    bigint NOT NULL DEFAULT 0,
        updated_at timestamptz
      );
      -- What a run read and wrote of its tool's state ({versionRead, versionWritten, fixture}), and what it did
      -- not do as written without failing (Run.metadata.state and .warnings).
      ALTER TABLE runs ADD COLUMN state jsonb;
      ALTER TABLE runs ADD COLUMN warnings jsonb;
    `,
    sqlite: `
      CREATE TABLE tool_state (
        tool_id    TEXT PRIMARY KEY,
        state      JSON_TEXT NOT NULL DEFAULT '{}',
        version    INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT ${iso('updated_at')}
      );
      ALTER TABLE runs ADD COLUMN state JSON_TEXT;
      ALTER TABLE runs ADD COLUMN warnings JSON_TEXT;
    `,
  },
  {
    id: 19,
    name: 'gateway tunnels: the replica holding each, and its counters',
    pg: `
      -- The holder's name for people (its Pod name) and the tunnel's counters as the holder last refreshed them
      -- (every KUBEGLUE_GATEWAY_HEARTBEAT_MS), so any replica lists every tunnel with its replica and traffic.
      -- counters_at: when they were counted (epoch ms).
      ALTER TABLE gateway_tunnels ADD COLUMN replica text NOT NULL DEFAULT '';
      ALTER TABLE gateway_tunnels ADD COLUMN bytes_in bigint NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN bytes_out bigint NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN streams_open bigint NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN streams_opened bigint NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN counters_at bigint NOT NULL DEFAULT 0;
    `,
    sqlite: `
      ALTER TABLE gateway_tunnels ADD COLUMN replica TEXT NOT NULL DEFAULT '';
      ALTER TABLE gateway_tunnels ADD COLUMN bytes_in INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN bytes_out INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN streams_open INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN streams_opened INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE gateway_tunnels ADD COLUMN counters_at INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    id: 20,
    name: 'system documentation: when a failed attempt is retried',
    pg: `
      -- Set while a pending request waits for its next attempt after a failed one (lease_until holds the same
      -- time, as the earliest claim); cleared by the claim. So the API can tell an attempt running now
      -- (lease_until ahead, retry_at null) from one waiting (GET /v1/systems shows processing and retryAt).
      ALTER TABLE system_documentation ADD COLUMN retry_at timestamptz;
    `,
    sqlite: `
      ALTER TABLE system_documentation ADD COLUMN retry_at TEXT ${iso('retry_at')};
    `,
  },
  {
    id: 21,
    name: 'the start-time index of runs carries what the run statistics read',
    pg: `
      -- GET /v1/stats/runs reads every run of its window (a day: as many as the runs of a day) for its counts by
      -- bucket, status and tool and its duration percentiles. With those columns in the list's index on the start
      -- time, that is an index-only scan of the window, where it was a heap fetch per run. One index serves both:
      -- a second one on started_at drew the keyset pages of GET /v1/runs away from this one (the planner took
      -- the narrower index and sorted). Rebuilt here, under the migration's lock.
      DROP INDEX runs_started_idx;
      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC) INCLUDE (status, tool_id, duration_ms);
    `,
    sqlite: `
      -- SQLite has no INCLUDE: the columns are keys after the list's two, which a covering scan reads the same.
      DROP INDEX runs_started_idx;
      CREATE INDEX runs_started_idx ON runs (started_at DESC, run_id DESC, status, tool_id, duration_ms);
    `,
  },
  {
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
  },
  {
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
  },
];
