import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const oauthTokens: Migration = {
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
};
