import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const gatewayTunnels: Migration = {
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
};
