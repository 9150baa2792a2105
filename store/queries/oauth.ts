import type { Db } from '../driver.ts';
import { toBytes, toNumber } from './values.ts';

/**
 * OAuth token cache and authorization states (migration 8). Tokens and PKCE verifiers are opaque sealed
 * bytes: the caller seals and opens (systems/oauth/). Plain SQL that also runs on SQLite (3.35+: RETURNING,
 * ON CONFLICT); times are epoch milliseconds passed in by the caller, never the database's clock.
 */

export type OAuthTokenStatus = 'none' | 'active' | 'needs_reauthorization';

export interface OAuthTokenRow {
  systemKey: string;
  grantType?: string;
  fingerprint?: string;
  sealed?: Uint8Array;
  /** SHA-256 (hex) of the access token: tells a rejected token from a newer one without opening it. */
  tokenHash?: string;
  /** Epoch ms; absent when the provider gave no lifetime. */
  expiresAt?: number;
  scopes?: string;
  status: OAuthTokenStatus;
  lockOwner?: string;
  lockUntil: number;
  updatedAt: number;
}

export interface OAuthTokenWrite {
  grantType: string;
  fingerprint: string;
  sealed: Uint8Array;
  tokenHash: string;
  expiresAt?: number | undefined;
  scopes?: string | undefined;
  status: OAuthTokenStatus;
  updatedAt: number;
}

export interface OAuthStateRow {
  stateHash: string;
  systemKey: string;
  systemId: string;
  environment: string;
  apiKeyId: string;
  sealed: Uint8Array;
  expiresAt: number;
}

interface TokenRecord {
  system_key: string;
  grant_type: string | null;
  fingerprint: string | null;
  sealed: Uint8Array | null;
  token_hash: string | null;
  expires_at: number | string | null;
  scopes: string | null;
  status: string;
  lock_owner: string | null;
  lock_until: number | string;
  updated_at: number | string;
}

function tokenRow(r: TokenRecord): OAuthTokenRow {
  return {
    systemKey: r.system_key,
    ...(r.grant_type !== null ? { grantType: r.grant_type } : {}),
    ...(r.fingerprint !== null ? { fingerprint: r.fingerprint } : {}),
    ...(r.sealed !== null ? { sealed: toBytes(r.sealed) } : {}),
    ...(r.token_hash !== null ? { tokenHash: r.token_hash } : {}),
    ...(r.expires_at !== null ? { expiresAt: toNumber(r.expires_at) } : {}),
    ...(r.scopes !== null ? { scopes: r.scopes } : {}),
    status: r.status as OAuthTokenStatus,
    ...(r.lock_owner !== null ? { lockOwner: r.lock_owner } : {}),
    lockUntil: toNumber(r.lock_until),
    updatedAt: toNumber(r.updated_at),
  };
}

export async function getOAuthToken(db: Db, systemKey: string): Promise<OAuthTokenRow | undefined> {
  const { rows } = await db.query<TokenRecord>('SELECT * FROM oauth_tokens WHERE system_key = $1', [
    systemKey,
  ]);
  return rows[0] ? tokenRow(rows[0]) : undefined;
}

/**
 * Takes the refresh lease of a system's token until `until` unless another owner holds an unexpired one;
 * whether this owner got it. The row is created first if it does not exist.
 */
export async function lockOAuthToken(
  db: Db,
  systemKey: string,
  owner: string,
  now: number,
  until: number,
): Promise<boolean> {
  await db.query('INSERT INTO oauth_tokens (system_key) VALUES ($1) ON CONFLICT (system_key) DO NOTHING', [
    systemKey,
  ]);
  const { rows } = await db.query(
    `UPDATE oauth_tokens SET lock_owner = $2, lock_until = $4
      WHERE system_key = $1 AND (lock_owner IS NULL OR lock_until < $3 OR lock_owner = $2)
      RETURNING system_key`,
    [systemKey, owner, now, until],
  );
  return rows.length > 0;
}

/** The written token as the columns grant_type … updated_at take it, in that order. */
function tokenValues(write: OAuthTokenWrite): unknown[] {
  return [
    write.grantType,
    write.fingerprint,
    write.sealed,
    write.tokenHash,
    write.expiresAt ?? null,
    write.scopes ?? null,
    write.status,
    write.updatedAt,
  ];
}

/** Stores a refreshed token and releases the lease, only while `owner` still holds it; whether it did. */
export async function saveLockedOAuthToken(
  db: Db,
  systemKey: string,
  owner: string,
  write: OAuthTokenWrite,
): Promise<boolean> {
  const { rows } = await db.query(
    `UPDATE oauth_tokens
        SET grant_type = $3, fingerprint = $4, sealed = $5, token_hash = $6, expires_at = $7, scopes = $8,
            status = $9, updated_at = $10, lock_owner = NULL, lock_until = 0
      WHERE system_key = $1 AND lock_owner = $2
      RETURNING system_key`,
    [systemKey, owner, ...tokenValues(write)],
  );
  return rows.length > 0;
}

/**
 * Stores the tokens of a completed authorization, whatever lease is held: a refresh still running with the
 * old grant then fails to save (saveLockedOAuthToken) and reads this one instead.
 */
export async function putOAuthToken(db: Db, systemKey: string, write: OAuthTokenWrite): Promise<void> {
  await db.query(
    `INSERT INTO oauth_tokens
            (system_key, grant_type, fingerprint, sealed, token_hash, expires_at, scopes, status, updated_at,
             lock_owner, lock_until)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, 0)
     ON CONFLICT (system_key) DO UPDATE
        SET grant_type = EXCLUDED.grant_type, fingerprint = EXCLUDED.fingerprint, sealed = EXCLUDED.sealed,
            token_hash = EXCLUDED.token_hash, expires_at = EXCLUDED.expires_at, scopes = EXCLUDED.scopes,
            status = EXCLUDED.status, updated_at = EXCLUDED.updated_at, lock_owner = NULL, lock_until = 0`,
    [systemKey, ...tokenValues(write)],
  );
}

/** Sets the status (and drops the tokens when `clear`), releasing the owner's lease; whether it held it. */
export async function setLockedOAuthStatus(
  db: Db,
  systemKey: string,
  owner: string,
  status: OAuthTokenStatus,
  now: number,
): Promise<boolean> {
  const { rows } = await db.query(
    `UPDATE oauth_tokens
        SET status = $3, sealed = NULL, token_hash = NULL, expires_at = NULL, updated_at = $4,
            lock_owner = NULL, lock_until = 0
      WHERE system_key = $1 AND lock_owner = $2
      RETURNING system_key`,
    [systemKey, owner, status, now],
  );
  return rows.length > 0;
}

export async function releaseOAuthLock(db: Db, systemKey: string, owner: string): Promise<void> {
  await db.query(
    'UPDATE oauth_tokens SET lock_owner = NULL, lock_until = 0 WHERE system_key = $1 AND lock_owner = $2',
    [systemKey, owner],
  );
}

export async function deleteOAuthToken(db: Db, systemKey: string): Promise<void> {
  await db.query('DELETE FROM oauth_tokens WHERE system_key = $1', [systemKey]);
}

/** Removes the authorization flows under way for a system variant (the variant was deleted). */
export async function deleteOAuthStates(db: Db, systemKey: string): Promise<void> {
  await db.query('DELETE FROM oauth_states WHERE system_key = $1', [systemKey]);
}

export async function insertOAuthState(db: Db, row: OAuthStateRow, now: number): Promise<void> {
  // Expired states go as new ones come: no sweeper needed.
  await db.query('DELETE FROM oauth_states WHERE expires_at < $1', [now]);
  await db.query(
    `INSERT INTO oauth_states (state_hash, system_key, system_id, environment, api_key_id, sealed, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [row.stateHash, row.systemKey, row.systemId, row.environment, row.apiKeyId, row.sealed, row.expiresAt],
  );
}

/** Removes and returns the state: it can be used once, whether or not it has expired. */
export async function takeOAuthState(db: Db, stateHash: string): Promise<OAuthStateRow | undefined> {
  const { rows } = await db.query<{
    state_hash: string;
    system_key: string;
    system_id: string;
    environment: string;
    api_key_id: string;
    sealed: Uint8Array;
    expires_at: number | string;
  }>('DELETE FROM oauth_states WHERE state_hash = $1 RETURNING *', [stateHash]);
  const r = rows[0];
  if (!r) return undefined;
  return {
    stateHash: r.state_hash,
    systemKey: r.system_key,
    systemId: r.system_id,
    environment: r.environment,
    apiKeyId: r.api_key_id,
    sealed: toBytes(r.sealed),
    expiresAt: toNumber(r.expires_at),
  };
}

/** The queries as one object, for StoreQueries.oauth. */
export interface OAuthQueries {
  getToken(systemKey: string): Promise<OAuthTokenRow | undefined>;
  lockToken(systemKey: string, owner: string, now: number, until: number): Promise<boolean>;
  saveLockedToken(systemKey: string, owner: string, write: OAuthTokenWrite): Promise<boolean>;
  putToken(systemKey: string, write: OAuthTokenWrite): Promise<void>;
  setLockedStatus(systemKey: string, owner: string, status: OAuthTokenStatus, now: number): Promise<boolean>;
  releaseLock(systemKey: string, owner: string): Promise<void>;
  deleteToken(systemKey: string): Promise<void>;
  deleteStates(systemKey: string): Promise<void>;
  insertState(row: OAuthStateRow, now: number): Promise<void>;
  takeState(stateHash: string): Promise<OAuthStateRow | undefined>;
}

export function bindOAuthQueries(db: Db): OAuthQueries {
  return {
    getToken: (key) => getOAuthToken(db, key),
    lockToken: (key, owner, now, until) => lockOAuthToken(db, key, owner, now, until),
    saveLockedToken: (key, owner, write) => saveLockedOAuthToken(db, key, owner, write),
    putToken: (key, write) => putOAuthToken(db, key, write),
    setLockedStatus: (key, owner, status, now) => setLockedOAuthStatus(db, key, owner, status, now),
    releaseLock: (key, owner) => releaseOAuthLock(db, key, owner),
    deleteToken: (key) => deleteOAuthToken(db, key),
    deleteStates: (key) => deleteOAuthStates(db, key),
    insertState: (row, now) => insertOAuthState(db, row, now),
    takeState: (hash) => takeOAuthState(db, hash),
  };
}
