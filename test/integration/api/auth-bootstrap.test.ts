import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureAdminKey, hashApiKey } from '../../../api/api-keys.ts';
import { embeddedStorePath, openStore, type Store } from '../../../store/index.ts';

const opened: Store[] = [];
const dirs: string[] = [];

async function memoryStore(): Promise<Store> {
  const store = await openStore({ driver: 'sqlite', path: ':memory:' });
  opened.push(store);
  return store;
}

afterAll(async () => {
  for (const store of opened) await store.close().catch(() => {});
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const PRESET = 'preset-admin-key-0123456789-abcdef';

describe('admin key bootstrap', () => {
  it('stores the preset key once when two replicas start on an empty store at the same time', async () => {
    const store = await memoryStore();
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    await Promise.all([
      ensureAdminKey(store, { presetKey: PRESET, log }),
      ensureAdminKey(store, { presetKey: PRESET, log }),
    ]);
    expect(await store.countApiKeys({ admin: true })).toBe(1);
    expect((await store.findApiKeyByHash(hashApiKey(PRESET)))?.admin).toBe(true);
    expect(lines.filter((line) => line.includes('revoked'))).toEqual([]);
  });

  it('generates one admin key on the first start only and logs it once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bootstrap-'));
    dirs.push(dataDir);
    const first: string[] = [];
    const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
    await ensureAdminKey(store, { log: (line) => first.push(line) });
    await store.close();
    expect(first).toHaveLength(1);
    const match = /^admin API key \(shown once, store it now\): (kg_[A-Za-z0-9_-]{43})$/.exec(first[0] ?? '');
    expect(match).not.toBeNull();

    const second: string[] = [];
    const reopened = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
    opened.push(reopened);
    await ensureAdminKey(reopened, { log: (line) => second.push(line) });
    expect(second).toEqual([]);
    const keys = await reopened.listApiKeys();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ admin: true, toolIds: null, keyHash: hashApiKey(match?.[1] ?? '') });
  });

  it('stores a preset key on an empty store without logging it', async () => {
    const store = await memoryStore();
    const lines: string[] = [];
    await ensureAdminKey(store, { presetKey: PRESET, log: (line) => lines.push(line) });
    expect(lines).toEqual(['admin API key from KUBEGLUE_ADMIN_KEY stored']);
    expect(await store.findApiKeyByHash(hashApiKey(PRESET))).toMatchObject({ admin: true, toolIds: null });
    expect(await store.countApiKeys({ admin: true })).toBe(1);

    await ensureAdminKey(store, { presetKey: PRESET, log: (line) => lines.push(line) });
    expect(lines).toHaveLength(1);
    expect(await store.countApiKeys()).toBe(1);
  });

  it('adds a new preset key to a store that already has an admin key', async () => {
    const store = await memoryStore();
    const lines: string[] = [];
    await ensureAdminKey(store, { log: (line) => lines.push(line) });
    await ensureAdminKey(store, { presetKey: PRESET, log: (line) => lines.push(line) });
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('KUBEGLUE_ADMIN_KEY added as an additional admin API key');
    expect(await store.countApiKeys({ admin: true })).toBe(2);
    expect(await store.findApiKeyByHash(hashApiKey(PRESET))).toMatchObject({ admin: true });
  });

  it('does not bring back a preset key that was revoked', async () => {
    const store = await memoryStore();
    const lines: string[] = [];
    await ensureAdminKey(store, { log: (line) => lines.push(line) });
    await ensureAdminKey(store, { presetKey: PRESET, log: (line) => lines.push(line) });
    const preset = await store.findApiKeyByHash(hashApiKey(PRESET));
    expect(await store.revokeApiKey(preset?.id ?? '')).toBe(true);

    await ensureAdminKey(store, { presetKey: PRESET, log: (line) => lines.push(line) });
    expect(lines.at(-1)).toBe('KUBEGLUE_ADMIN_KEY is a revoked API key; it is not added again');
    expect(await store.findApiKeyByHash(hashApiKey(PRESET))).toBeUndefined();
    for (const line of lines) expect(line).not.toContain(PRESET);
  });

  it('fails the start when the only candidate admin key is a revoked preset key', async () => {
    const store = await memoryStore();
    await ensureAdminKey(store, { presetKey: PRESET, log: () => {} });
    for (const key of await store.listApiKeys()) await store.revokeApiKey(key.id);
    const error = await ensureAdminKey(store, { presetKey: PRESET, log: () => {} }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe(
      'KUBEGLUE_ADMIN_KEY is a revoked API key and there is no other admin key: set a new key',
    );
  });

  it('refuses a weak preset key with a message that does not contain it, and stores nothing', async () => {
    const store = await memoryStore();
    const weak = 'hunter2-password';
    const error = await ensureAdminKey(store, { presetKey: weak, log: () => {} }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/^KUBEGLUE_ADMIN_KEY is not usable: it must be 24 to 512/);
    expect(error?.message).not.toContain(weak);
    expect(await store.countApiKeys()).toBe(0);
  });
});
