import { iso, type Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const systemDocumentation: Migration = {
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
};
