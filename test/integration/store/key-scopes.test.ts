/**
 * Issue 19, items 8 and 9 in the store: keys created before scopes existed get exactly what they could do
 * (migration 13), and a gateway tunnel id belongs to the key that first registered it (migration 14).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { scopesOfKey } from '../../../api/scopes.ts';
import type { Driver } from '../../../store/driver.ts';
import { createPgDriver } from '../../../store/drivers/pg.ts';
import { createSqliteDriver } from '../../../store/drivers/sqlite.ts';
import { MIGRATIONS, openStore, type Store, type StoreConfig } from '../../../store/index.ts';
import { applyMigrations } from '../../../store/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { DRIVERS, describeStore } from '../../support/store.ts';

/** The keys a store could hold before migration 13, as the code of that time wrote them. */
const OLD_KEYS = [
  { id: 'admin', toolIds: null, admin: true, hostGateways: false },
  { id: 'unrestricted', toolIds: null, admin: false, hostGateways: false },
  { id: 'tool-limited', toolIds: ['crm-sync'], admin: false, hostGateways: false },
  { id: 'agent', toolIds: null, admin: false, hostGateways: true },
  { id: 'tool-limited-agent', toolIds: ['crm-sync'], admin: false, hostGateways: true },
] as const;

/** What a key without restrictions could do then (an admin key or an agent's more). */
const FULL = ['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write'];

/** What each of them could do then, as scopes. */
const EXPECTED_SCOPES: Record<(typeof OLD_KEYS)[number]['id'], string[]> = {
  admin: [...FULL, 'keys:admin', 'gateways:host'],
  unrestricted: FULL,
  'tool-limited': ['tools:read', 'runs:read', 'runs:execute'],
  agent: [...FULL, 'gateways:host'],
  'tool-limited-agent': ['tools:read', 'runs:read', 'runs:execute', 'gateways:host'],
};

describe.each(DRIVERS)('api keys from before scopes, migrated on %s', (driver) => {
  let config: StoreConfig;
  let database: TestDatabase | undefined;
  let dir: string | undefined;
  let store: Store | undefined;

  beforeAll(async () => {
    let old: Driver;
    if (driver === 'pg') {
      database = await createTestDatabase(inject('databaseUrl'));
      config = { driver: 'pg', url: database.url };
      old = createPgDriver({ url: database.url });
    } else {
      dir = await mkdtemp(join(tmpdir(), 'kubeglue-scopes-'));
      config = { driver: 'sqlite', path: join(dir, 'store.db') };
      old = createSqliteDriver({ path: config.path });
    }
    // The schema as it was (migrations up to 12), holding keys written the way the code then wrote them.
    await applyMigrations(
      old,
      MIGRATIONS.filter((migration) => migration.id <= 12),
    );
    const d = old.dialect;
    for (const key of OLD_KEYS) {
      await old.query(
        `INSERT INTO api_keys (id, name, key_hash, tool_ids, is_admin, host_gateways, created_at)
         VALUES ($1, $2, $3, ${d.textArray('$4')}, $5, $6, ${d.timestamp('$7')})`,
        [
          key.id,
          key.id,
          `hash-${key.id}`,
          key.toolIds,
          key.admin,
          key.hostGateways,
          '2026-03-01T10:00:00.000Z',
        ],
      );
    }
    await old.close();
    store = await openStore(config);
  });

  afterAll(async () => {
    await store?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('applies migrations 13 and 14 to the old store', () => {
    expect(store?.migrations.applied).toEqual(MIGRATIONS.filter((m) => m.id > 12).map((m) => m.id));
  });

  it.each(OLD_KEYS.map((key) => key.id))('gives key %s exactly what it could do before', async (id) => {
    const migrated = await store?.findApiKeyByHash(`hash-${id}`);
    expect(migrated).toBeDefined();
    if (!migrated) return;
    expect(migrated.scopes).toEqual(EXPECTED_SCOPES[id]);
    expect(scopesOfKey(migrated)).toEqual(EXPECTED_SCOPES[id]);
    expect(migrated.systemIds).toBeNull();
    expect(migrated.toolIds).toEqual(OLD_KEYS.find((key) => key.id === id)?.toolIds);
    expect(migrated.admin).toBe(id === 'admin');
  });
});

describeStore('gateway tunnel owners', (store) => {
  beforeAll(async () => {
    for (const id of ['key-a', 'key-b', 'key-c']) {
      await store.insertApiKey({
        id,
        name: id,
        keyHash: `hash-${id}`,
        scopes: ['gateways:host'],
        toolIds: null,
        systemIds: null,
        admin: false,
        createdAt: '2026-03-01T10:00:00.000Z',
      });
    }
  });

  it('belong to the key that registered them first; the same key may register them again', async () => {
    const owners = store.gatewayTunnelOwners;
    expect(await owners.claim('corp-eu', 'key-a')).toBe('key-a');
    expect(await owners.claim('corp-eu', 'key-b')).toBe('key-a');
    expect(await owners.claim('corp-eu', 'key-a')).toBe('key-a');
    expect(await owners.claim('corp-us', 'key-b')).toBe('key-b');
  });

  it('have exactly one owner when two keys register a free id at once', async () => {
    const owners = store.gatewayTunnelOwners;
    const answers = await Promise.all([owners.claim('race', 'key-a'), owners.claim('race', 'key-b')]);
    expect(new Set(answers).size).toBe(1);
  });

  it('are free again once the owner key is revoked, or an admin released them', async () => {
    const owners = store.gatewayTunnelOwners;
    expect(await store.revokeApiKey('key-a')).toBe(true);
    expect(await owners.claim('corp-eu', 'key-b')).toBe('key-b');
    expect(await owners.claim('corp-eu', 'key-c')).toBe('key-b');
    expect(await owners.release('corp-eu')).toBe(true);
    expect(await owners.release('corp-eu')).toBe(false);
    expect(await owners.claim('corp-eu', 'key-c')).toBe('key-c');
  });
});
