import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type ApiKeyStore,
  ensureAdminKey,
  generateApiKey,
  hashApiKey,
  isPlausibleApiKey,
} from '../../../api/api-keys.ts';

/** A store that must not be reached: the preset key check comes before any query. */
const unreachableStore: ApiKeyStore = {
  insertApiKey: () => Promise.reject(new Error('store reached')),
  findApiKeyByHash: () => Promise.reject(new Error('store reached')),
  listApiKeys: () => Promise.reject(new Error('store reached')),
  revokeApiKey: () => Promise.reject(new Error('store reached')),
  countApiKeys: () => Promise.reject(new Error('store reached')),
  touchApiKeys: () => Promise.reject(new Error('store reached')),
};

describe('API key generation and hashing', () => {
  it('generates kg_ keys carrying 32 random bytes in base64url', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^kg_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(3), 'base64url')).toHaveLength(32);
    expect(generateApiKey()).not.toBe(key);
  });

  it('hashes a key to its SHA-256 in hex', () => {
    const key = 'kg_example-key-with-enough-length';
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts only 24 to 512 visible ASCII characters as a key', () => {
    expect(isPlausibleApiKey(generateApiKey())).toBe(true);
    expect(isPlausibleApiKey('a'.repeat(24))).toBe(true);
    expect(isPlausibleApiKey('a'.repeat(23))).toBe(false);
    expect(isPlausibleApiKey('a'.repeat(513))).toBe(false);
    expect(isPlausibleApiKey(`${'a'.repeat(24)} b`)).toBe(false);
    expect(isPlausibleApiKey(`${'a'.repeat(24)}é`)).toBe(false);
  });

  it('refuses a weak preset admin key without echoing it and before touching the store', async () => {
    for (const weak of ['short-secret-123', 'has spaces in it but is quite long']) {
      const error = await ensureAdminKey(unreachableStore, { presetKey: weak, log: () => {} }).catch(
        (e: unknown) => e as Error,
      );
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/KUBEGLUE_ADMIN_KEY/);
      expect((error as Error).message).not.toContain(weak);
    }
  });
});
