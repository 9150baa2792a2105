import type { Db } from '../driver.ts';
import type { ApiKeyQuotas, StoredApiKey } from '../types.ts';
import { camelRow, toIso, toNumber } from './values.ts';

/** API keys: only hashes are stored. Revoked keys stay as rows (revoked_at set) and are invisible here. */

interface ApiKeyRow {
  id: string;
  name: string;
  key_hash: string;
  scopes: string[];
  tool_ids: string[] | null;
  system_ids: string[] | null;
  is_admin: boolean;
  created_at: Date | string;
  last_used_at: Date | string | null;
  quota_runs_per_minute: number | string | null;
  quota_concurrent_runs: number | string | null;
}

const API_KEY_COLUMNS =
  'id, name, key_hash, scopes, tool_ids, system_ids, is_admin, created_at, last_used_at, ' +
  'quota_runs_per_minute, quota_concurrent_runs';

function apiKeyFromRow({
  is_admin,
  created_at,
  last_used_at,
  quota_runs_per_minute,
  quota_concurrent_runs,
  ...row
}: ApiKeyRow): StoredApiKey {
  const quotas: ApiKeyQuotas = {
    runsPerMinute: quota_runs_per_minute === null ? null : toNumber(quota_runs_per_minute),
    concurrentRuns: quota_concurrent_runs === null ? null : toNumber(quota_concurrent_runs),
  };
  return {
    ...camelRow(row),
    admin: is_admin,
    createdAt: toIso(created_at),
    lastUsedAt: last_used_at === null ? null : toIso(last_used_at),
    ...(quotas.runsPerMinute !== null || quotas.concurrentRuns !== null ? { quotas } : {}),
  };
}

export async function insertApiKey(db: Db, key: Omit<StoredApiKey, 'lastUsedAt'>): Promise<void> {
  // host_gateways is written for a version from before scopes that may still read the store.
  await db.query(
    `INSERT INTO api_keys (id, name, key_hash, scopes, tool_ids, system_ids, is_admin, host_gateways, created_at,
                           quota_runs_per_minute, quota_concurrent_runs)
     VALUES ($1, $2, $3, ${db.dialect.textArray('$4')}, ${db.dialect.textArray('$5')},
             ${db.dialect.textArray('$6')}, $7, $8, ${db.dialect.timestamp('$9')}, $10, $11)`,
    [
      key.id,
      key.name,
      key.keyHash,
      [...key.scopes],
      key.toolIds === null ? null : [...key.toolIds],
      key.systemIds === null ? null : [...key.systemIds],
      key.admin,
      key.scopes.includes('gateways:host'),
      key.createdAt,
      key.quotas?.runsPerMinute ?? null,
      key.quotas?.concurrentRuns ?? null,
    ],
  );
}

export async function findApiKeyByHash(db: Db, keyHash: string): Promise<StoredApiKey | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
    [keyHash],
  );
  return rows[0] ? apiKeyFromRow(rows[0]) : undefined;
}

/**
 * The key with this id whether revoked or not, and when it was revoked (null: it is not); undefined when
 * no key ever had the id. What a schedule's tick and a chain look at: the key they act as, now.
 */
export async function findApiKeyById(
  db: Db,
  id: string,
): Promise<{ key: StoredApiKey; revokedAt: string | null } | undefined> {
  const { rows } = await db.query<ApiKeyRow & { revoked_at: Date | string | null }>(
    `SELECT ${API_KEY_COLUMNS}, revoked_at FROM api_keys WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { revoked_at, ...rest } = row;
  return { key: apiKeyFromRow(rest), revokedAt: revoked_at === null ? null : toIso(revoked_at) };
}

/** Oldest first. */
export async function listApiKeys(db: Db): Promise<StoredApiKey[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id`,
  );
  return rows.map(apiKeyFromRow);
}

/** False when the key is unknown or already revoked. */
export async function revokeApiKey(db: Db, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE api_keys SET revoked_at = ${db.dialect.now} WHERE id = $1 AND revoked_at IS NULL`,
    [id],
  );
  return rowCount > 0;
}

/** Keys not revoked; admin: true counts only admin keys, false only the others. */
export async function countApiKeys(db: Db, opts: { admin?: boolean } = {}): Promise<number> {
  const { rows } = await db.query<{ n: number | string | bigint }>(
    `SELECT count(*) AS n FROM api_keys
      WHERE revoked_at IS NULL AND (${db.dialect.typed('$1', 'boolean')} IS NULL OR is_admin = ${db.dialect.typed('$1', 'boolean')})`,
    [opts.admin ?? null],
  );
  return toNumber(rows[0]?.n ?? 0);
}

/** Records use of several keys in one statement; a time older than the recorded one is ignored. */
export async function touchApiKeys(db: Db, ids: readonly string[], at: string): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE api_keys SET last_used_at = ${db.dialect.timestamp('$2')}
      WHERE ${db.dialect.inArray('id', '$1')}
        AND (last_used_at IS NULL OR last_used_at < ${db.dialect.timestamp('$2')})`,
    [[...new Set(ids)], at],
  );
}

/** Sets both quotas of a key (null: none); false when the key is unknown or revoked. */
export async function setApiKeyQuotas(db: Db, id: string, quotas: ApiKeyQuotas): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE api_keys SET quota_runs_per_minute = $2, quota_concurrent_runs = $3
      WHERE id = $1 AND revoked_at IS NULL`,
    [id, quotas.runsPerMinute, quotas.concurrentRuns],
  );
  return rowCount > 0;
}
