import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const apiKeysAndOutbox: Migration = {
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
};
