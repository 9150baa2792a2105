import type { Db } from '../driver.ts';
import { toNumber } from './values.ts';

/**
 * The directory of connected gateway tunnels across API replicas (migrations 11 and 19): which replica
 * holds a tunnel, where its relay listens, and the tunnel's counters as the holder last refreshed them (so
 * every replica's GET /v1/gateways shows them). Plain SQL for Postgres and SQLite; times are epoch ms
 * passed in by the caller.
 */
export interface GatewayTunnelRow extends TunnelCounters {
  tunnelId: string;
  holderId: string;
  /** The holder's name for people (its Pod name), shown as the gateway's replica. */
  replica: string;
  /** host:port of the holder's gateway relay, as the other replicas dial it. */
  relayAddress: string;
  /** The agent's advertised targets, JSON. */
  targets: string;
  connectedAt: number;
  expiresAt: number;
}

/** A tunnel's traffic since its agent connected, as its holder counted it at `countersAt`. */
export interface TunnelCounters {
  bytesIn: number;
  bytesOut: number;
  streamsOpen: number;
  streamsOpened: number;
  countersAt: number;
}

/** What a holder claims: counters start at zero when the agent connects. */
export type GatewayTunnelClaim = Omit<GatewayTunnelRow, keyof TunnelCounters>;

interface Record {
  tunnel_id: string;
  holder_id: string;
  replica: string;
  relay_address: string;
  targets: string;
  connected_at: number | string;
  expires_at: number | string;
  bytes_in: number | string;
  bytes_out: number | string;
  streams_open: number | string;
  streams_opened: number | string;
  counters_at: number | string;
}

const row = (r: Record): GatewayTunnelRow => ({
  tunnelId: r.tunnel_id,
  holderId: r.holder_id,
  replica: r.replica,
  relayAddress: r.relay_address,
  targets: r.targets,
  connectedAt: toNumber(r.connected_at),
  expiresAt: toNumber(r.expires_at),
  bytesIn: toNumber(r.bytes_in),
  bytesOut: toNumber(r.bytes_out),
  streamsOpen: toNumber(r.streams_open),
  streamsOpened: toNumber(r.streams_opened),
  countersAt: toNumber(r.counters_at),
});

export interface GatewayTunnelQueries {
  /** This replica now holds the tunnel (a newer registration wins over any other holder). */
  claim(tunnel: GatewayTunnelClaim): Promise<void>;
  /**
   * Extends the holder's lease and records its counters; false when another replica took the tunnel over
   * (or it expired away).
   */
  refresh(tunnelId: string, holderId: string, expiresAt: number, counters: TunnelCounters): Promise<boolean>;
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
        `INSERT INTO gateway_tunnels (tunnel_id, holder_id, replica, relay_address, targets, connected_at,
           expires_at, bytes_in, bytes_out, streams_open, streams_opened, counters_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 0, 0, 0, 0, $6)
         ON CONFLICT (tunnel_id) DO UPDATE SET holder_id = excluded.holder_id, replica = excluded.replica,
           relay_address = excluded.relay_address, targets = excluded.targets,
           connected_at = excluded.connected_at, expires_at = excluded.expires_at,
           bytes_in = 0, bytes_out = 0, streams_open = 0, streams_opened = 0,
           counters_at = excluded.connected_at`,
        [t.tunnelId, t.holderId, t.replica, t.relayAddress, t.targets, t.connectedAt, t.expiresAt],
      );
    },
    async refresh(tunnelId, holderId, expiresAt, c) {
      const { rows } = await db.query<{ tunnel_id: string }>(
        `UPDATE gateway_tunnels SET expires_at = $3, bytes_in = $4, bytes_out = $5, streams_open = $6,
           streams_opened = $7, counters_at = $8
         WHERE tunnel_id = $1 AND holder_id = $2 RETURNING tunnel_id`,
        [tunnelId, holderId, expiresAt, c.bytesIn, c.bytesOut, c.streamsOpen, c.streamsOpened, c.countersAt],
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
