import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const tunnelOwners: Migration = {
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
};
