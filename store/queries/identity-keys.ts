import type { Db } from '../driver.ts';
import { toBytes, toNumber } from './values.ts';

/**
 * The signing keys of outbound identity tokens (migration 27). The private key is opaque sealed bytes: the
 * caller seals and opens (runs/identity/). Times are epoch milliseconds passed in by the caller.
 */
export interface IdentityKeyRow {
  kid: string;
  generation: number;
  /** The public JWK as JSON text. */
  publicJwk: string;
  sealed: Uint8Array;
  createdAt: number;
  signsFrom: number;
}

interface KeyRecord {
  kid: string;
  generation: number | string;
  public_jwk: string;
  sealed: Uint8Array;
  created_at: number | string;
  signs_from: number | string;
}

function keyRow(r: KeyRecord): IdentityKeyRow {
  return {
    kid: r.kid,
    generation: toNumber(r.generation),
    publicJwk: r.public_jwk,
    sealed: toBytes(r.sealed),
    createdAt: toNumber(r.created_at),
    signsFrom: toNumber(r.signs_from),
  };
}

export interface IdentityKeyQueries {
  /** Every key, oldest generation first. */
  list(): Promise<IdentityKeyRow[]>;
  /** Adds a key unless its generation exists already (another replica rotated first); whether it was added. */
  add(key: IdentityKeyRow): Promise<boolean>;
  /** Deletes the keys of generations below `generation` (no longer published). */
  pruneBelow(generation: number): Promise<number>;
}

export function bindIdentityKeyQueries(db: Db): IdentityKeyQueries {
  return {
    async list() {
      const { rows } = await db.query<KeyRecord>('SELECT * FROM identity_keys ORDER BY generation');
      return rows.map(keyRow);
    },
    async add(key) {
      const { rows } = await db.query(
        `INSERT INTO identity_keys (kid, generation, public_jwk, sealed, created_at, signs_from)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (generation) DO NOTHING RETURNING kid`,
        [key.kid, key.generation, key.publicJwk, key.sealed, key.createdAt, key.signsFrom],
      );
      return rows.length > 0;
    },
    async pruneBelow(generation) {
      const { rows } = await db.query('DELETE FROM identity_keys WHERE generation < $1 RETURNING kid', [
        generation,
      ]);
      return rows.length;
    },
  };
}
