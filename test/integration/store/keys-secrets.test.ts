import { describe, expect, it } from 'vitest';
import type { StoredApiKey } from '../../../store/index.ts';
import { describeStore, openTestStore } from '../../support/store.ts';

function key(id: string, overrides: Partial<StoredApiKey> = {}): Omit<StoredApiKey, 'lastUsedAt'> {
  return {
    id,
    name: `key ${id}`,
    keyHash: `hash-${id}`,
    scopes: ['tools:read'],
    toolIds: null,
    systemIds: null,
    admin: false,
    createdAt: '2026-03-01T10:00:00.000Z',
    ...overrides,
  };
}

describeStore('api keys and secrets', (store, driver) => {
  describe('api keys', () => {
    it("keeps a key's scopes and the systems it may use", async () => {
      await store.insertApiKey(key('k-host', { scopes: ['gateways:host'] }));
      expect(await store.findApiKeyByHash('hash-k-host')).toMatchObject({
        admin: false,
        scopes: ['gateways:host'],
        systemIds: null,
      });
      await store.insertApiKey(key('k-systems', { scopes: ['tools:write'], systemIds: ['crm', 'erp'] }));
      expect(await store.findApiKeyByHash('hash-k-systems')).toMatchObject({
        scopes: ['tools:write'],
        systemIds: ['crm', 'erp'],
      });
    });

    it('finds a key by its hash, with every field', async () => {
      await store.insertApiKey(key('k-find', { toolIds: ['tool-a', 'tool-b'], admin: true }));
      expect(await store.findApiKeyByHash('hash-k-find')).toEqual({
        id: 'k-find',
        name: 'key k-find',
        keyHash: 'hash-k-find',
        scopes: ['tools:read'],
        toolIds: ['tool-a', 'tool-b'],
        systemIds: null,
        admin: true,
        createdAt: '2026-03-01T10:00:00.000Z',
        lastUsedAt: null,
      });
      expect(await store.findApiKeyByHash('hash-nobody')).toBeUndefined();
    });

    it('refuses a second key with the same hash', async () => {
      await store.insertApiKey(key('k-dup-1', { keyHash: 'hash-dup' }));
      await expect(store.insertApiKey(key('k-dup-2', { keyHash: 'hash-dup' }))).rejects.toThrow();
    });

    it('lists keys oldest first and no longer finds, lists or counts a revoked key', async () => {
      const fresh = await openTestStore(driver);
      try {
        await fresh.store.insertApiKey(key('k-new', { createdAt: '2026-03-03T00:00:00.000Z', admin: true }));
        await fresh.store.insertApiKey(key('k-old', { createdAt: '2026-03-01T00:00:00.000Z' }));
        await fresh.store.insertApiKey(key('k-mid', { createdAt: '2026-03-02T00:00:00.000Z' }));
        expect((await fresh.store.listApiKeys()).map((k) => k.id)).toEqual(['k-old', 'k-mid', 'k-new']);
        expect(await fresh.store.countApiKeys()).toBe(3);
        expect(await fresh.store.countApiKeys({ admin: true })).toBe(1);
        expect(await fresh.store.countApiKeys({ admin: false })).toBe(2);

        expect(await fresh.store.revokeApiKey('k-new')).toBe(true);
        expect(await fresh.store.revokeApiKey('k-new')).toBe(false);
        expect(await fresh.store.revokeApiKey('k-unknown')).toBe(false);
        expect(await fresh.store.findApiKeyByHash('hash-k-new')).toBeUndefined();
        expect((await fresh.store.listApiKeys()).map((k) => k.id)).toEqual(['k-old', 'k-mid']);
        expect(await fresh.store.countApiKeys({ admin: true })).toBe(0);
        expect(await fresh.store.countApiKeys()).toBe(2);
      } finally {
        await fresh.close();
      }
    });

    it('records the last use of several keys at once and never moves it back', async () => {
      await store.insertApiKey(key('k-use-1'));
      await store.insertApiKey(key('k-use-2'));
      await store.insertApiKey(key('k-use-3'));
      await store.touchApiKeys(['k-use-1', 'k-use-2', 'k-use-1'], '2026-03-05T12:00:00.000Z');
      await store.touchApiKeys(['k-use-2'], '2026-03-05T11:00:00.000Z');
      await store.touchApiKeys([], '2026-03-06T00:00:00.000Z');
      expect((await store.findApiKeyByHash('hash-k-use-1'))?.lastUsedAt).toBe('2026-03-05T12:00:00.000Z');
      expect((await store.findApiKeyByHash('hash-k-use-2'))?.lastUsedAt).toBe('2026-03-05T12:00:00.000Z');
      expect((await store.findApiKeyByHash('hash-k-use-3'))?.lastUsedAt).toBeNull();
    });

    it('leaves no key behind when the inserting transaction rolls back', async () => {
      await expect(
        store.transaction(async (tx) => {
          await tx.insertApiKey(key('k-rollback'));
          expect(await tx.findApiKeyByHash('hash-k-rollback')).toBeDefined();
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await store.findApiKeyByHash('hash-k-rollback')).toBeUndefined();
    });
  });

  describe('secrets', () => {
    it('stores bytes exactly, replaces them on a second put, and deletes them', async () => {
      const first = new Uint8Array([0, 1, 2, 255, 0, 128]);
      const second = new Uint8Array([9, 0, 9]);
      await store.putSecret('default', 'crm-credentials', first);
      expect(await store.getSecret('default', 'crm-credentials')).toEqual(first);
      await store.putSecret('default', 'crm-credentials', second);
      expect(await store.getSecret('default', 'crm-credentials')).toEqual(second);
      expect(await store.deleteSecret('default', 'crm-credentials')).toBe(true);
      expect(await store.getSecret('default', 'crm-credentials')).toBeUndefined();
      expect(await store.deleteSecret('default', 'crm-credentials')).toBe(false);
    });

    it('keeps secrets of the same name in different namespaces apart', async () => {
      await store.putSecret('team-a', 'token', new Uint8Array([1]));
      await store.putSecret('team-b', 'token', new Uint8Array([2]));
      expect(await store.getSecret('team-a', 'token')).toEqual(new Uint8Array([1]));
      expect(await store.getSecret('team-b', 'token')).toEqual(new Uint8Array([2]));
      expect(await store.deleteSecret('team-a', 'token')).toBe(true);
      expect(await store.getSecret('team-b', 'token')).toEqual(new Uint8Array([2]));
    });

    it('stores an empty value', async () => {
      await store.putSecret('default', 'empty', new Uint8Array());
      expect(await store.getSecret('default', 'empty')).toEqual(new Uint8Array());
    });

    it('writes secrets inside a transaction', async () => {
      await store.transaction(async (tx) => {
        await tx.putSecret('default', 'in-tx', new Uint8Array([7]));
        expect(await tx.getSecret('default', 'in-tx')).toEqual(new Uint8Array([7]));
      });
      expect(await store.getSecret('default', 'in-tx')).toEqual(new Uint8Array([7]));
    });
  });
});
