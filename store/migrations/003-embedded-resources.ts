import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const embeddedResources: Migration = {
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
};
