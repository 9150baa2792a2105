import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const gatewayHostingKeys: Migration = {
  id: 12,
  name: 'api keys that may host gateways',
  pg: `
      -- A key that is not an admin key but may connect gateway agents (register tunnels).
      ALTER TABLE api_keys ADD COLUMN host_gateways boolean NOT NULL DEFAULT false;
    `,
  sqlite: `
      ALTER TABLE api_keys ADD COLUMN host_gateways BOOLEAN NOT NULL DEFAULT 0;
    `,
};
