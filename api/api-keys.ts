import { hash, randomBytes, randomUUID } from 'node:crypto';
import { SETTINGS } from '../config/config.ts';
import { SCOPES } from '../contract/api/bodies.ts';
import type { StoreQueries } from '../store/index.ts';

/** The store queries API-key code needs (the full Store satisfies it). */
export type ApiKeyStore = Pick<
  StoreQueries,
  'insertApiKey' | 'findApiKeyByHash' | 'listApiKeys' | 'revokeApiKey' | 'countApiKeys' | 'touchApiKeys'
>;

const KEY_PREFIX = 'kg_';
/** The setting that presets the first admin key. */
const ADMIN_KEY = SETTINGS.tree.adminKey.name;
/** Bounds for any key a client presents or an operator presets; outside them a key is refused unseen. */
export const MIN_KEY_LENGTH = 24;
export const MAX_KEY_LENGTH = 512;
/** Visible ASCII only: a key travels in a header and in a query string. */
const KEY_CHARACTERS = /^[\x21-\x7e]+$/;

/** A new secret: `kg_` and 32 random bytes in base64url (256 bits). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function newApiKeyId(): string {
  return randomUUID();
}

/**
 * SHA-256 of the key, hex. A slow password hash (scrypt, argon2) exists to make guessing low-entropy
 * secrets expensive; generated keys carry 256 random bits and preset keys must be long, so guessing is
 * hopeless either way, and a fast hash keeps the check cheap on every request and lets the store find a
 * key by its hash with a unique index (a salted hash could not be looked up).
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Whether a presented string can be a key at all (so junk never reaches the store). */
export function isPlausibleApiKey(key: string): boolean {
  return key.length >= MIN_KEY_LENGTH && key.length <= MAX_KEY_LENGTH && KEY_CHARACTERS.test(key);
}

export interface EnsureAdminKeyOptions {
  /** KUBEGLUE_ADMIN_KEY, if set. */
  presetKey?: string | undefined;
  log: (line: string) => void;
}

/** Postgres' unique_violation: here, a key hash that is stored already (a revoked key keeps its row). */
function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}

/**
 * Makes sure someone can manage API keys. On a store without an admin key it adds the preset key or
 * generates one and logs it once; on a store with admin keys it adds a preset key it does not know yet,
 * so setting KUBEGLUE_ADMIN_KEY works on an existing store too. Never logs or throws a preset key.
 */
export async function ensureAdminKey(store: ApiKeyStore, options: EnsureAdminKeyOptions): Promise<void> {
  const { presetKey, log } = options;
  if (presetKey !== undefined && !isPlausibleApiKey(presetKey)) {
    throw new Error(
      `${ADMIN_KEY} is not usable: it must be ${MIN_KEY_LENGTH} to ${MAX_KEY_LENGTH} visible ASCII ` +
        'characters without spaces (a generated key such as `kg_` + 32 random bytes in base64url is best)',
    );
  }
  const adminKeys = await store.countApiKeys({ admin: true });

  if (presetKey === undefined) {
    if (adminKeys > 0) return;
    const key = generateApiKey();
    await insertAdminKey(store, 'admin (generated at first start)', key);
    log(`admin API key (shown once, store it now): ${key}`);
    return;
  }

  const keyHash = hashApiKey(presetKey);
  const known = await store.findApiKeyByHash(keyHash);
  if (known) {
    if (!known.admin) log(`${ADMIN_KEY} matches an existing API key that is not an admin key; left as is`);
    return;
  }
  try {
    await insertAdminKey(store, `admin (${ADMIN_KEY})`, presetKey);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // Another replica starting at the same moment stored it first: it is there, as wanted.
    if (await store.findApiKeyByHash(keyHash)) return;
    // The preset key was revoked: bringing it back on every restart would undo the revocation.
    if (adminKeys === 0) {
      throw new Error(`${ADMIN_KEY} is a revoked API key and there is no other admin key: set a new key`);
    }
    log(`${ADMIN_KEY} is a revoked API key; it is not added again`);
    return;
  }
  log(
    adminKeys === 0
      ? `admin API key from ${ADMIN_KEY} stored`
      : `${ADMIN_KEY} added as an additional admin API key`,
  );
}

function insertAdminKey(store: ApiKeyStore, name: string, key: string): Promise<void> {
  return store.insertApiKey({
    id: newApiKeyId(),
    name,
    keyHash: hashApiKey(key),
    scopes: [...SCOPES],
    toolIds: null,
    systemIds: null,
    admin: true,
    createdAt: new Date().toISOString(),
  });
}
