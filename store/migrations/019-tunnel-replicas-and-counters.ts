import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const tunnelReplicasAndCounters: Migration = {
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
};
