import type { Db } from '../driver.ts';

/**
 * Which API key owns each gateway tunnel id (migration 14): the key that first registered it. Only that
 * key may register the id again, on any replica and after any restart. A revoked owner owns nothing: the
 * next key to register the id claims it.
 */
export interface GatewayTunnelOwnerQueries {
  /**
   * Claims the tunnel id for the key unless another key that is not revoked owns it; answers the owner's
   * key id afterwards (the caller's own id when the claim held or it owned the id already).
   */
  claim(tunnelId: string, keyId: string): Promise<string>;
  /** Forgets the owner of the tunnel id; false when no key owned it. */
  release(tunnelId: string): Promise<boolean>;
}

export function bindGatewayTunnelOwnerQueries(db: Db): GatewayTunnelOwnerQueries {
  return {
    async claim(tunnelId, keyId) {
      // One statement: of two keys registering a free id at once, exactly one becomes the owner.
      await db.query(
        `INSERT INTO gateway_tunnel_owners (tunnel_id, key_id) VALUES ($1, $2)
         ON CONFLICT (tunnel_id) DO UPDATE SET key_id = excluded.key_id, claimed_at = excluded.claimed_at
          WHERE NOT EXISTS (SELECT 1 FROM api_keys k
                             WHERE k.id = gateway_tunnel_owners.key_id AND k.revoked_at IS NULL)`,
        [tunnelId, keyId],
      );
      const { rows } = await db.query<{ key_id: string }>(
        'SELECT key_id FROM gateway_tunnel_owners WHERE tunnel_id = $1',
        [tunnelId],
      );
      const owner = rows[0]?.key_id;
      if (owner === undefined) throw new Error(`tunnel id ${tunnelId} was released while being claimed`);
      return owner;
    },
    async release(tunnelId) {
      const { rowCount } = await db.query('DELETE FROM gateway_tunnel_owners WHERE tunnel_id = $1', [
        tunnelId,
      ]);
      return rowCount > 0;
    },
  };
}
