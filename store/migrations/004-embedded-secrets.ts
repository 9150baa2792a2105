import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const embeddedSecrets: Migration = {
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
};
