import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureAdminKey } from '../../../api/api-keys.ts';
import {
  type Auth,
  type AuthOptions,
  allowedToolIds,
  assertToolAccess,
  installAuth,
} from '../../../api/auth.ts';
import { apiKeyHandlers } from '../../../api/routes/api-keys.ts';
import { registerOperations } from '../../../api/routes/register.ts';
import { routeAccessTable } from '../../../api/scopes.ts';
import { buildServer } from '../../../api/server.ts';
import { SCOPES } from '../../../contract/api/bodies.ts';
import { ROUTES } from '../../../contract/api/routes.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { catalogError } from '../../support/api-error.ts';

/** The route table plus this file's own probe routes, declared the same way. */
const TEST_ROUTES = routeAccessTable([
  ...ROUTES,
  { method: 'GET', path: '/ping', scopes: [] },
  { method: 'GET', path: '/tools/{toolId}/ping', scopes: ['tools:read'] },
  { method: 'GET', path: '/everything', scopes: [], unrestricted: true },
]);

interface Running {
  app: FastifyInstance;
  auth: Auth;
  base: string;
}

let store: Store;
let server: Running;
let adminKey: string;
/** Every secret the tests handle; none may show up in a response other than the one creating it. */
const secrets = new Set<string>();
/** Every response body except the 201s that hand out a new key. */
const bodies: string[] = [];

async function start(options: Partial<AuthOptions> = {}): Promise<Running> {
  const app = buildServer({ bodyLimitBytes: 1024 * 1024, logLevel: 'silent', ready: () => true });
  const auth = installAuth(app, {
    store,
    publicPrefixes: ['/v1/openapi.json', '/v1/files/'],
    routes: TEST_ROUTES,
    ...options,
  });
  registerOperations(app, apiKeyHandlers({ store, auth }));
  app.get('/v1/ping', async (request) => ({ principal: request.principal }));
  app.get('/v1/tools/:toolId/ping', async (request) => {
    assertToolAccess(request, (request.params as { toolId: string }).toolId);
    return { ok: true };
  });
  app.get('/v1/everything', async (request) => ({ allowed: allowedToolIds(request) }));
  app.get('/v1/files/:fileId', async () => ({ file: true }));
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, auth, base };
}

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

async function call(
  path: string,
  init: { method?: string; key?: string; headers?: Record<string, string>; body?: unknown } = {},
  target: Running = server,
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${target.base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  if (response.status !== 201) bodies.push(text);
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, text };
}

async function createKey(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const created = await call('/v1/api-keys', { method: 'POST', key: adminKey, body });
  expect(created.status).toBe(201);
  const { id, key } = created.body as { id: string; key: string };
  secrets.add(key);
  return { id, key };
}

beforeAll(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  const lines: string[] = [];
  await ensureAdminKey(store, { log: (line) => lines.push(line) });
  const match = /^admin API key \(shown once, store it now\): (kg_\S+)$/.exec(lines[0] ?? '');
  if (!match?.[1]) throw new Error('no admin key was logged');
  adminKey = match[1];
  secrets.add(adminKey);
  server = await start();
});
afterAll(async () => {
  await server?.app.close();
  await store?.close();
});

describe('API key authentication', () => {
  it('answers 401 with a Bearer challenge when no key is sent', async () => {
    const answer = await call('/v1/ping');
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="kubeglue"');
    expect(answer.body).toEqual(
      catalogError(
        'KG_ERR_MISSING_API_KEY',
        'Missing API key: send Authorization: Bearer <key> or ?token=<key>',
      ),
    );
    expect(answer.headers.get('x-trace-id')).toMatch(/\S/);
  });

  it('answers 401 invalid_token for an unknown key without repeating it', async () => {
    const unknown = `kg_${'x'.repeat(43)}`;
    const tooShort = 'kg_short';
    for (const key of [unknown, tooShort]) {
      secrets.add(key);
      for (const answer of [await call('/v1/ping', { key }), await call(`/v1/ping?token=${key}`)]) {
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="kubeglue", error="invalid_token"');
        expect(answer.text).not.toContain(key);
      }
    }
  });

  it('accepts the key as a Bearer token, with any case of the scheme name, and as ?token=', async () => {
    const expected = {
      principal: {
        id: expect.any(String),
        name: expect.any(String),
        admin: true,
        scopes: [...SCOPES],
        toolIds: null,
        systemIds: null,
      },
    };
    expect((await call('/v1/ping', { key: adminKey })).body).toEqual(expected);
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const answer = await call('/v1/ping', { headers: { authorization: `${scheme} ${adminKey}` } });
      expect(answer.status).toBe(200);
    }
    const byQuery = await call(`/v1/ping?token=${encodeURIComponent(adminKey)}`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.body).toEqual(expected);
  });

  it('refuses a Bearer header holding more than one word and a repeated token parameter', async () => {
    const twoWords = await call('/v1/ping', { headers: { authorization: `Bearer ${adminKey} extra` } });
    expect(twoWords.status).toBe(401);
    const twice = await call(`/v1/ping?token=${adminKey}&token=${adminKey}`);
    expect(twice.status).toBe(401);
    expect(twice.headers.get('www-authenticate')).toContain('invalid_token');
  });

  it('takes ?token= when the Authorization header carries another scheme', async () => {
    const answer = await call(`/v1/ping?token=${adminKey}`, {
      headers: { authorization: 'Basic dXNlcjpwYXNz' },
    });
    expect(answer.status).toBe(200);
  });

  it('needs no key for the public prefixes and for paths outside /v1/', async () => {
    expect((await call('/v1/openapi.json')).status).toBe(200);
    expect((await call('/v1/files/some-file')).status).toBe(200);
    expect((await call('/healthz')).status).toBe(200);
    expect((await call('/readyz')).status).toBe(200);
    expect((await call('/elsewhere')).status).toBe(404);
  });

  it('protects unknown /v1 paths too, so they reveal nothing without a key', async () => {
    expect((await call('/v1/nowhere')).status).toBe(401);
    expect((await call('/v1/nowhere', { key: adminKey })).status).toBe(404);
  });

  it('decides by the route a request reaches, however its path is encoded', async () => {
    // find-my-way decodes %70 to p and %66 to f: these reach /v1/ping and /v1/files/:fileId.
    expect((await call('/v1/%70ing')).status).toBe(401);
    expect((await call('/v1/%66iles/some-file')).status).toBe(200);
  });
});

describe('tool-restricted keys', () => {
  it('may use their own tools only, and nothing that spans every tool or manages keys', async () => {
    const { key } = await createKey({ name: 'crm hooks', toolIds: ['crm-sync', 'crm-sync'] });
    expect((await call('/v1/tools/crm-sync/ping', { key })).status).toBe(200);

    // A tool the key may not use does not exist as far as the key can tell.
    const otherTool = await call('/v1/tools/billing/ping', { key });
    expect(otherTool.status).toBe(404);
    expect(otherTool.body).toEqual(catalogError('KG_ERR_TOOL_NOT_FOUND', "Tool 'billing' not found"));

    const everything = await call('/v1/everything', { key });
    expect(everything.status).toBe(403);
    expect(everything.body).toEqual(
      catalogError('KG_ERR_KEY_RESTRICTED', 'This API key is limited to specific tools'),
    );

    for (const [method, path] of [
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['DELETE', '/v1/api-keys/whatever'],
    ] as const) {
      const answer = await call(path, { method, key, ...(method === 'POST' ? { body: { name: 'x' } } : {}) });
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual(
        catalogError('KG_ERR_SCOPE_REQUIRED', expect.stringContaining("lacks the scope 'keys:admin'")),
      );
    }
    const listed = (await call('/v1/api-keys', { key: adminKey })).body as { data: { toolIds: unknown }[] };
    expect(listed.data.map((k) => k.toolIds)).toContainEqual(['crm-sync']);
  });

  it('lets an unrestricted non-admin key use every tool but not manage keys', async () => {
    const { key } = await createKey({ name: 'ci' });
    expect((await call('/v1/tools/anything/ping', { key })).status).toBe(200);
    expect((await call('/v1/everything', { key })).body).toEqual({ allowed: null });
    expect((await call('/v1/api-keys', { key })).status).toBe(403);
  });
});

describe('API key management', () => {
  it('creates an agent key that may host gateways and nothing else, however it is asked for', async () => {
    for (const body of [
      { name: 'corp-eu agent', scopes: ['gateways:host'] },
      { name: 'corp-eu agent (older spelling)', hostGateways: true },
    ]) {
      const created = await call('/v1/api-keys', { method: 'POST', key: adminKey, body });
      expect(created.status).toBe(201);
      const answer = created.body as Record<string, unknown>;
      secrets.add(answer.key as string);
      expect(answer).toMatchObject({ admin: false, hostGateways: true, scopes: ['gateways:host'] });
      const agentKey = answer.key as string;
      expect((await call('/v1/api-keys', { key: agentKey })).status).toBe(403);
      expect((await call('/v1/tools/anything/ping', { key: agentKey })).status).toBe(403);
      expect((await call('/v1/ping', { key: agentKey })).status).toBe(200);
    }
    const keys = ((await call('/v1/api-keys', { key: adminKey })).body as { data: Record<string, unknown>[] })
      .data;
    expect(keys.filter((k) => k.admin === true).every((k) => k.hostGateways === true)).toBe(true);
  });

  it('lets a key grant only scopes, tools and systems it has itself', async () => {
    const manager = await createKey({
      name: 'crm key manager',
      scopes: ['keys:admin', 'tools:read', 'runs:execute'],
      toolIds: ['crm-sync', 'crm-export'],
      systemIds: ['crm'],
    });
    const byManager = (body: Record<string, unknown>) =>
      call('/v1/api-keys', { method: 'POST', key: manager.key, body });
    const within = await byManager({
      name: 'crm runner',
      scopes: ['runs:execute'],
      toolIds: ['crm-sync'],
      systemIds: ['crm'],
    });
    expect(within.status).toBe(201);
    secrets.add((within.body as { key: string }).key);
    for (const [body, problem] of [
      [{ name: 'x', scopes: ['tools:write'], toolIds: ['crm-sync'], systemIds: ['crm'] }, "'tools:write'"],
      [{ name: 'x', scopes: ['tools:read'], systemIds: ['crm'] }, 'limited to some tools'],
      [{ name: 'x', scopes: ['tools:read'], toolIds: ['billing'], systemIds: ['crm'] }, "'billing'"],
      [{ name: 'x', scopes: ['tools:read'], toolIds: ['crm-sync'] }, 'limited to some systems'],
      [{ name: 'x', scopes: ['tools:read'], toolIds: ['crm-sync'], systemIds: ['erp'] }, "'erp'"],
      [{ name: 'x', admin: true }, "'tools:write'"],
      [{ name: 'x', hostGateways: true, toolIds: ['crm-sync'], systemIds: ['crm'] }, "'gateways:host'"],
    ] as const) {
      const refused = await byManager(body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      const error = (refused.body as { error: { message: string; code: string } }).error;
      expect(error.code).toBe('KG_ERR_GRANT_EXCEEDS_KEY');
      expect(error.message).toContain(problem);
    }
    // Nor may it revoke a key with more than it has (the admin key).
    const list = (await call('/v1/api-keys', { key: adminKey })).body as {
      data: { id: string; admin: boolean }[];
    };
    const adminId = list.data.find((k) => k.admin)?.id ?? '';
    const revoke = await call(`/v1/api-keys/${adminId}`, { method: 'DELETE', key: manager.key });
    expect(revoke.status).toBe(403);
    expect((revoke.body as { error: { code: string } }).error.code).toBe('KG_ERR_GRANT_EXCEEDS_KEY');
    const own = await call(`/v1/api-keys/${(within.body as { id: string }).id}`, {
      method: 'DELETE',
      key: manager.key,
    });
    expect(own.status).toBe(200);
  });

  it('refuses to start with a /v1 route that declares no access', async () => {
    const app = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => true });
    installAuth(app, { store, publicPrefixes: [] });
    try {
      expect(() => app.get('/v1/forgotten', async () => ({ open: true }))).toThrow(
        'route GET /v1/forgotten declares no access',
      );
    } finally {
      await app.close();
    }
  });

  it('creates a key shown once and lists keys without secrets or hashes', async () => {
    const created = await call('/v1/api-keys', {
      method: 'POST',
      key: adminKey,
      body: { name: 'deploy bot' },
    });
    expect(created.status).toBe(201);
    const body = created.body as Record<string, unknown>;
    secrets.add(body.key as string);
    expect(body).toEqual({
      id: expect.any(String),
      name: 'deploy bot',
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read', 'systems:write'],
      toolIds: null,
      systemIds: null,
      admin: false,
      hostGateways: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      lastUsedAt: null,
      quotas: { runsPerMinute: null, concurrentRuns: null },
      key: expect.stringMatching(/^kg_/),
    });
    expect((await call('/v1/ping', { key: body.key as string })).status).toBe(200);

    const list = await call('/v1/api-keys', { key: adminKey });
    expect(list.status).toBe(200);
    const keys = (list.body as { data: Record<string, unknown>[] }).data;
    const listed = keys.find((k) => k.id === body.id);
    expect(listed).toEqual({ ...body, key: undefined, lastUsedAt: null });
    for (const k of keys) {
      expect(Object.keys(k).sort()).toEqual([
        'admin',
        'createdAt',
        'hostGateways',
        'id',
        'lastUsedAt',
        'name',
        'quotas',
        'scopes',
        'systemIds',
        'toolIds',
      ]);
    }
    expect(list.text).not.toMatch(/[0-9a-f]{64}/);
  });

  it('refuses invalid bodies with 400 naming the field, and admin keys limited to tools', async () => {
    const noName = await call('/v1/api-keys', { method: 'POST', key: adminKey, body: {} });
    expect(noName.status).toBe(400);
    expect(noName.text).toContain('name');
    const unknownField = await call('/v1/api-keys', {
      method: 'POST',
      key: adminKey,
      body: { name: 'a', tools: [] },
    });
    expect(unknownField.status).toBe(400);
    const limitedAdmin = await call('/v1/api-keys', {
      method: 'POST',
      key: adminKey,
      body: { name: 'a', admin: true, toolIds: ['t'] },
    });
    expect(limitedAdmin.status).toBe(400);
    expect(limitedAdmin.body).toEqual(
      catalogError('KG_ERR_ADMIN_KEY_WITH_TOOLS', expect.stringContaining('every scope')),
    );
    const unknownScope = await call('/v1/api-keys', {
      method: 'POST',
      key: adminKey,
      body: { name: 'a', scopes: ['tools:everything'] },
    });
    expect(unknownScope.status).toBe(400);
    expect(unknownScope.text).toContain('scopes');
  });

  it('stops accepting a revoked key at once in this process', async () => {
    const { id, key } = await createKey({ name: 'short lived' });
    expect((await call('/v1/ping', { key })).status).toBe(200); // now cached
    const revoked = await call(`/v1/api-keys/${id}`, { method: 'DELETE', key: adminKey });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ success: true });
    const after = await call('/v1/ping', { key });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('invalid_token');
    const listed = (await call('/v1/api-keys', { key: adminKey })).body as { data: { id: string }[] };
    expect(listed.data.map((k) => k.id)).not.toContain(id);
    expect((await call(`/v1/api-keys/${id}`, { method: 'DELETE', key: adminKey })).status).toBe(404);
  });

  it('answers 404 for an unknown key id', async () => {
    const answer = await call('/v1/api-keys/no-such-key', { method: 'DELETE', key: adminKey });
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual(catalogError('KG_ERR_API_KEY_NOT_FOUND', 'API key not found'));
  });

  it('refuses to revoke the last admin key with 409, and allows it once another admin exists', async () => {
    const list = (await call('/v1/api-keys', { key: adminKey })).body as {
      data: { id: string; admin: boolean }[];
    };
    const admins = list.data.filter((k) => k.admin);
    expect(admins).toHaveLength(1);
    const firstAdminId = admins[0]?.id ?? '';

    const refused = await call(`/v1/api-keys/${firstAdminId}`, { method: 'DELETE', key: adminKey });
    expect(refused.status).toBe(409);
    expect((refused.body as { error: { message: string } }).error.message).toMatch(/last admin API key/);

    const second = await createKey({ name: 'second admin', admin: true });
    expect((await call('/v1/api-keys', { key: second.key })).status).toBe(200);
    const revoked = await call(`/v1/api-keys/${firstAdminId}`, { method: 'DELETE', key: second.key });
    expect(revoked.status).toBe(200);
    expect((await call('/v1/ping', { key: adminKey })).status).toBe(401);
    // From here on the second admin key is the admin key of the remaining tests.
    adminKey = second.key;
    const selfRevoke = await call(`/v1/api-keys/${second.id}`, { method: 'DELETE', key: second.key });
    expect(selfRevoke.status).toBe(409);
  });

  it('records lastUsedAt in batches, written on flush and on close', async () => {
    const batching = await start({ touchIntervalMs: 3_600_000 });
    const { id, key } = await createKey({ name: 'batch' });
    const lastUsed = async () => (await store.listApiKeys()).find((k) => k.id === id)?.lastUsedAt;
    try {
      expect((await call('/v1/ping', { key }, batching)).status).toBe(200);
      expect(await lastUsed()).toBeNull();
      await batching.auth.flush();
      const first = await lastUsed();
      expect(first).not.toBeNull();
      expect((await call('/v1/api-keys', { key: adminKey })).text).toContain(
        new Date(first ?? '').toISOString(),
      );

      await store.touchApiKeys([id], '2000-01-01T00:00:00.000Z');
      expect((await call('/v1/ping', { key }, batching)).status).toBe(200);
    } finally {
      await batching.app.close();
    }
    expect(new Date((await lastUsed()) ?? 0).getFullYear()).toBeGreaterThan(2000);
  });
});

describe('revocations made elsewhere', () => {
  it('apply once the cache entry expires', async () => {
    const other = await start({ cacheTtlMs: 50 });
    try {
      const { id, key } = await createKey({ name: 'revoked by another replica' });
      expect((await call('/v1/ping', { key }, other)).status).toBe(200);
      // Another replica revokes straight in the shared store; this one only learns of it from the store.
      expect(await store.revokeApiKey(id)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await call('/v1/ping', { key }, other)).status).toBe(401);
    } finally {
      await other.app.close();
    }
  });
});

describe('key lookups', () => {
  it('ask the store once per key for a burst of requests, and a flood of made-up keys evicts no real one', async () => {
    let lookups = 0;
    const counting: Store = {
      ...store,
      findApiKeyByHash: (keyHash) => {
        lookups += 1;
        return store.findApiKeyByHash(keyHash);
      },
    };
    const app = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => true });
    installAuth(app, { store: counting, publicPrefixes: [], cacheSize: 4, routes: TEST_ROUTES });
    app.get('/v1/ping', async () => ({ ok: true }));
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const burst = (key: string) =>
      Promise.all(
        Array.from({ length: 40 }, () =>
          fetch(`${base}/v1/ping`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status),
        ),
      );
    try {
      const { key } = await createKey({ name: 'busy' });
      expect(new Set(await burst(key))).toEqual(new Set([200]));
      expect(lookups).toBe(1);
      const unknown = `kg_${'u'.repeat(43)}`;
      secrets.add(unknown);
      expect(new Set(await burst(unknown))).toEqual(new Set([401]));
      expect(lookups).toBe(2);

      // More made-up keys than the cache holds do not push the real key out.
      for (let i = 0; i < 10; i += 1) await burst(`kg_${String(i).repeat(43)}`);
      expect(lookups).toBe(12);
      await burst(key);
      expect(lookups).toBe(12);
    } finally {
      await app.close();
    }
  });
});

describe('secrets', () => {
  it('never appear in a response other than the one creating the key', () => {
    expect(bodies.length).toBeGreaterThan(20);
    for (const secret of secrets) {
      for (const body of bodies) expect(body).not.toContain(secret);
    }
  });
});
