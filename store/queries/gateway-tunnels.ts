import type { Db } from '../driver.ts';
import { toNumber } from './values.ts';

/**
 * The directory of connected gateway tunnels across API replicas (migration 11): which replica holds a
 * tunnel and where its relay listens. Plain SQL for Postgres and SQLite; times are epoch ms passed in by
 * the caller.
 */
export interface GatewayTunnelRow {
  tunnelId: string;
  holderId: string;
  /** host:port of the holder's gateway relay, as the other replicas dial it. */
  relayAddress: string;
  /** The agent's advertised targets, JSON. */
  targets: string;
  connectedAt: number;
  expiresAt: number;
}

interface Record {
  tunnel_id: string;
  holder_id: string;
  relay_address: string;
  targets: string;
  connected_at: number | string;
  expires_at: number | string;
}

const row = (r: Record): GatewayTunnelRow => ({
  tunnelId: r.tunnel_id,
  holderId: r.holder_id,
  relayAddress: r.relay_address,
  targets: r.targets,
  connectedAt: toNumber(r.connected_at),
  expiresAt: toNumber(r.expires_at),
});

export interface GatewayTunnelQueries {
  /** This replica now holds the tunnel (a newer registration wins over any other holder). */
  claim(tunnel: GatewayTunnelRow): Promise<void>;
  /** Extends the holder's lease; false when another replica took the tunnel over (or it expired away). */
  refresh(tunnelId: string, holderId: string, expiresAt: number): Promise<boolean>;
  /** The agent left this replica: the row goes, unless another replica holds it by now. */
  release(tunnelId: string, holderId: string): Promise<void>;
  /** The live row of a tunnel, if any replica holds it. */
  find(tunnelId: string, now: number): Promise<GatewayTunnelRow | undefined>;
  list(now: number): Promise<GatewayTunnelRow[]>;
}

export function bindGatewayTunnelQueries(db: Db): GatewayTunnelQueries {
  return {
    async claim(t) {
      await db.query(
        `INSERT INTO gateway_tunnels (tunnel_id, holder_id, relay_address, targets, connected_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tunnel_id) DO UPDATE SET holder_id = excluded.holder_id,
           relay_address = excluded.relay_address, targets = excluded.targets,
           connected_at = excluded.connected_at, expires_at = excluded.expires_at`,
        [t.tunnelId, t.holderId, t.relayAddress, t.targets, t.connectedAt, t.expiresAt],
      );
    },
    async refresh(tunnelId, holderId, expiresAt) {
      const { rows } = await db.query<{ tunnel_id: string }>(
        'UPDATE gateway_tunnels SET expires_at = $3 WHERE tunnel_id = $1 AND holder_id = $2 RETURNING tunnel_id',
        [tunnelId, holderId, expiresAt],
      );
      return rows.length > 0;
    },
    async release(tunnelId, holderId) {
      await db.query('DELETE FROM gateway_tunnels WHERE tunnel_id = $1 AND holder_id = $2', [
        tunnelId,
        holderId,
      ]);
    },
    async find(tunnelId, now) {
      const { rows } = await db.query<Record>(
        'SELECT * FROM gateway_tunnels WHERE tunnel_id = $1 AND expires_at > $2',
        [tunnelId, now],
      );
      return rows[0] ? row(rows[0]) : undefined;
    },
    async list(now) {
      const { rows } = await db.query<Record>(
        'SELECT * FROM gateway_tunnels WHERE expires_at > $1 ORDER BY tunnel_id',
        [now],
      );
      return rows.map(row);
    },
  };
}
