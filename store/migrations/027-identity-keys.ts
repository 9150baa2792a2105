import type { Migration } from './migration.ts';

export const identityKeys: Migration = {
  id: 27,
  name: 'identity signing keys',
  pg: `
      -- The keys that sign outbound identity tokens (runs/identity/, docs/operations.md#outbound-identity): one
      -- row per key, generation 1, 2, … (UNIQUE: two replicas rotating at once insert one key, the other's
      -- insert does nothing). sealed is the private JWK sealed by the caller (AES-256-GCM under a key derived
      -- from the master key, bound to kid); public_jwk is what /.well-known/jwks.json serves. A key signs from
      -- signs_from until the next generation's signs_from. Times are epoch milliseconds.
      CREATE TABLE identity_keys (
        kid         text PRIMARY KEY,
        generation  integer NOT NULL UNIQUE,
        public_jwk  text NOT NULL,
        sealed      bytea NOT NULL,
        created_at  bigint NOT NULL,
        signs_from  bigint NOT NULL
      );
    `,
  sqlite: `
      CREATE TABLE identity_keys (
        kid         TEXT PRIMARY KEY,
        generation  INTEGER NOT NULL UNIQUE,
        public_jwk  TEXT NOT NULL,
        sealed      BLOB NOT NULL,
        created_at  INTEGER NOT NULL,
        signs_from  INTEGER NOT NULL
      );
    `,
};
