/**
 * Issue 19, item 9: what a key may do are its scopes, declared per route in contract/api/routes.ts and enforced
 * for every route; a key that may host gateways (the agent key) may do nothing else. Item 7 (a): the
 * systems a key may use in tools and runs (systemIds), for saving, running, webhooks, chains and drafts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeKey } from '../../../api/scopes.ts';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { SCOPES, type Scope } from '../../../contract/api/bodies.ts';
import { ROUTES, type RouteSpec } from '../../../contract/api/routes.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { startAgent } from '../../support/gateway-agent.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

const api = useTestApi();
let crm: HttpTarget;
let erp: HttpTarget;

async function createKey(body: Record<string, unknown>): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', { body });
  expect(created.status, created.text).toBe(201);
  return created.body.key;
}

/** A request to the route with ids that exist nowhere: what a route answers past its scope check. */
function probe(route: RouteSpec, key: string) {
  const path = route.path.replace(/\{\w+\}/g, 'probe-id');
  const query = route.operationId === 'streamLogs' ? '?runId=probe-id' : '';
  const withBody = route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH';
  return api.call<ErrorBody>(route.method, `/v1${path}${query}`, {
    key,
    ...(withBody ? { body: {} } : {}),
  });
}

const guardedRoutes = ROUTES.filter(
  (route): route is RouteSpec & { scopes: readonly Scope[] } => !route.public,
);

const tool = (id: string, systemId: string) => ({
  id,
  steps: [{ id: 'call', config: { url: '/who', systemId } }],
});

beforeAll(async () => {
  crm = await startHttpTarget();
  erp = await startHttpTarget();
  crm.route('GET', '/who', { body: { system: 'crm' } });
  erp.route('GET', '/who', { body: { system: 'erp' } });
  for (const [id, target] of [
    ['crm', crm],
    ['erp', erp],
  ] as const) {
    const created = await api.call('POST', '/v1/systems', {
      body: { id, url: target.url, credentials: { apiKey: `${id}-secret-token-0123` } },
    });
    expect(created.status, created.text).toBe(201);
  }
  for (const body of [tool('crm-tool', 'crm'), tool('erp-tool', 'erp')]) {
    expect((await api.call('POST', '/v1/tools', { body })).status).toBe(201);
  }
}, 30_000);

afterAll(async () => {
  await crm?.stop();
  await erp?.stop();
});

describe('the route table', () => {
  it('declares the access of every /v1 route the server registers, and every declared route exists', () => {
    const registered = api.embedded.auth.guardedRoutes();
    expect(registered.length).toBeGreaterThan(30);
    for (const route of registered) {
      expect(route.access.public, `${route.method} ${route.url}`).not.toBe(true);
      expect(Array.isArray(route.access.scopes), `${route.method} ${route.url}`).toBe(true);
    }
    const keys = new Set(registered.map((route) => `${route.method} ${route.url}`));
    for (const route of guardedRoutes) expect(keys).toContain(routeKey(route.method, route.path));
  });
});

describe('scopes', () => {
  it('each scope allows exactly the routes that need it and nothing more', async () => {
    for (const scope of SCOPES) {
      const key = await createKey({ name: `only ${scope}`, scopes: [scope] });
      for (const route of guardedRoutes) {
        const answer = await probe(route, key);
        const operation = `${scope} → ${route.method} ${route.path}`;
        const allowed = route.scopes.every((needed) => needed === scope);
        if (allowed) {
          expect(answer.body?.error?.code, operation).not.toBe('KG_ERR_SCOPE_REQUIRED');
        } else {
          expect({ operation, status: answer.status, code: answer.body.error.code }).toEqual({
            operation,
            status: 403,
            code: 'KG_ERR_SCOPE_REQUIRED',
          });
          const missing = route.scopes.find((needed) => needed !== scope);
          expect(answer.body.error.message, operation).toContain(`'${missing}'`);
        }
      }
    }
  }, 60_000);

  it('a key with exactly the scopes a route declares may call it', async () => {
    const sets = new Map(guardedRoutes.map((route) => [route.scopes.join(' '), route.scopes]));
    for (const scopes of sets.values()) {
      // A route that needs no scope (GET /v1/me) is for any key: one with a single unrelated scope.
      const key = await createKey({
        name: `exactly ${scopes.join(' ')}`,
        scopes: scopes.length ? scopes : ['tools:read'],
      });
      for (const route of guardedRoutes.filter((r) => r.scopes.join(' ') === scopes.join(' '))) {
        const answer = await probe(route, key);
        expect(answer.body?.error?.code, `${route.method} ${route.path}`).not.toBe('KG_ERR_SCOPE_REQUIRED');
      }
    }
  });

  it('shows a key its own scopes and systems (GET /v1/me)', async () => {
    const key = await createKey({ name: 'reader', scopes: ['runs:read', 'tools:read'], systemIds: ['crm'] });
    const me = await api.call<Record<string, unknown>>('GET', '/v1/me', { key });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      name: 'reader',
      admin: false,
      scopes: ['tools:read', 'runs:read'],
      toolIds: null,
      systemIds: ['crm'],
      roleIds: ['member'],
    });
  });
});

describe('a key that may host gateways (gateways:host alone)', () => {
  let agentKey: string;
  beforeAll(async () => {
    agentKey = await createKey({ name: 'corp agent', hostGateways: true });
  });

  it('may not list systems, read credentials, create or run tools, or change systems', async () => {
    for (const [method, path, body, scope] of [
      ['GET', '/v1/systems', undefined, 'systems:read'],
      ['GET', '/v1/systems/crm', undefined, 'systems:read'],
      ['GET', '/v1/credentials', undefined, 'systems:read'],
      ['GET', '/v1/tools', undefined, 'tools:read'],
      ['POST', '/v1/tools', tool('agent-tool', 'crm'), 'tools:write'],
      ['POST', '/v1/tools/crm-tool/run', {}, 'runs:execute'],
      ['POST', '/v1/hooks/crm-tool', {}, 'runs:execute'],
      ['POST', '/v1/tools/run', { tool: tool('draft', 'crm') }, 'tools:write'],
      ['PATCH', '/v1/systems/crm', { url: 'https://attacker.example' }, 'systems:write'],
      ['PUT', '/v1/systems/crm', { url: 'https://attacker.example' }, 'systems:write'],
      ['DELETE', '/v1/systems/crm', undefined, 'systems:write'],
      ['GET', '/v1/runs', undefined, 'runs:read'],
      ['GET', '/v1/api-keys', undefined, 'keys:admin'],
    ] as const) {
      const answer = await api.call<ErrorBody>(method, path, {
        key: agentKey,
        ...(body !== undefined ? { body } : {}),
      });
      expect({ route: `${method} ${path}`, status: answer.status, code: answer.body.error?.code }).toEqual({
        route: `${method} ${path}`,
        status: 403,
        code: 'KG_ERR_SCOPE_REQUIRED',
      });
      expect(answer.body.error.message).toContain(`'${scope}'`);
    }
    // Nothing changed, nothing ran.
    expect((await api.call<{ data: { url: string } }>('GET', '/v1/systems/crm')).body.data.url).toBe(crm.url);
    expect(crm.count('/who')).toBe(0);
  });

  it('registers a tunnel with a real agent', async () => {
    const agent = await startAgent({
      tunnel_id: 'scoped',
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: agentKey,
      targets: { web: crm.url.replace('http://', '') },
    });
    try {
      await agent.waitFor("tunnel 'scoped' registered");
      const listed = await api.call<{ data: { tunnelId: string }[] }>('GET', '/v1/gateways');
      expect(listed.body.data.map((gateway) => gateway.tunnelId)).toContain('scoped');
    } finally {
      await agent.kill();
    }
  }, 30_000);
});

describe('a key limited to some systems (systemIds)', () => {
  let crmOnly: string;
  beforeAll(async () => {
    crmOnly = await createKey({
      name: 'crm only',
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute', 'systems:read'],
      systemIds: ['crm'],
    });
  });

  it('saves tools on its systems only; another system answers the same whether it exists or not', async () => {
    expect((await api.call('POST', '/v1/tools', { key: crmOnly, body: tool('mine', 'crm') })).status).toBe(
      201,
    );
    const existing = await api.call<ErrorBody>('POST', '/v1/tools', {
      key: crmOnly,
      body: tool('x1', 'erp'),
    });
    const missing = await api.call<ErrorBody>('POST', '/v1/tools', {
      key: crmOnly,
      body: tool('x1', 'nowhere'),
    });
    expect(existing.status).toBe(403);
    expect(existing.body.error.code).toBe('KG_ERR_SYSTEM_NOT_GRANTED');
    expect(existing.body.error.message).toContain("system 'erp' (step 'call')");
    expect(missing.status).toBe(existing.status);
    expect(missing.body.error.message.replaceAll('nowhere', 'erp')).toBe(existing.body.error.message);
    const moved = await api.call<ErrorBody>('PUT', '/v1/tools/mine', {
      key: crmOnly,
      body: { steps: tool('mine', 'erp').steps },
    });
    expect(moved.status).toBe(403);
    expect(moved.body.error.code).toBe('KG_ERR_SYSTEM_NOT_GRANTED');
    const kept = await api.call<{ steps: { config: { systemId: string } }[] }>('GET', '/v1/tools/mine');
    expect(kept.body.steps.map((step) => step.config.systemId)).toEqual(['crm']);
  });

  it('may not run a tool on another system by REST, webhook or draft: refused before any step runs', async () => {
    const before = erp.count('/who');
    for (const [path, body] of [
      ['/v1/tools/erp-tool/run', {}],
      ['/v1/tools/erp-tool/run', { options: { async: true } }],
      ['/v1/hooks/erp-tool', { event: 'x' }],
      ['/v1/tools/run', { tool: tool('draft', 'erp') }],
    ] as const) {
      const answer = await api.call<ErrorBody>('POST', path, { key: crmOnly, body });
      expect({ path, status: answer.status, code: answer.body.error?.code }).toEqual({
        path,
        status: 403,
        code: 'KG_ERR_SYSTEM_NOT_GRANTED',
      });
    }
    expect(erp.count('/who')).toBe(before);
    expect((await api.call<{ total: number }>('GET', '/v1/runs?toolId=erp-tool')).body.total).toBe(0);
    const own = await api.call<Run>('POST', '/v1/tools/crm-tool/run', { key: crmOnly, body: {} });
    expect(own.body.status).toBe('success');
  });

  it('may not reach another system through a chain: the chained run is refused and recorded', async () => {
    const before = erp.count('/who');
    const parent = await api.call<Run>('POST', '/v1/tools/crm-tool/run', {
      key: crmOnly,
      body: { options: { webhookUrl: 'tool:erp-tool' } },
    });
    expect(parent.body.status).toBe('success');
    const deadline = Date.now() + 15_000;
    let chained: Run | undefined;
    while (!chained && Date.now() < deadline) {
      const list = await api.call<{ data: Run[] }>(
        'GET',
        '/v1/runs?toolId=erp-tool&requestSources=tool-chain',
      );
      chained = list.body.data[0];
      if (!chained) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(chained).toBeDefined();
    const finished = await waitForRun<Run>(api, chained?.runId ?? '');
    expect(finished.status).toBe('failed');
    expect(finished.error).toContain('Chain refused');
    expect(finished.error).toContain("may not use system 'erp'");
    expect(erp.count('/who')).toBe(before);
  });

  it('sees only its systems: another answers 404 like one that does not exist', async () => {
    const listed = await api.call<{ data: { id: string }[] }>('GET', '/v1/systems', { key: crmOnly });
    expect(listed.body.data.map((system) => system.id)).toEqual(['crm']);
    const hidden = await api.call<ErrorBody>('GET', '/v1/systems/erp', { key: crmOnly });
    const unknown = await api.call<ErrorBody>('GET', '/v1/systems/nowhere', { key: crmOnly });
    expect(hidden.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(hidden.body.error.message.replaceAll('erp', 'nowhere')).toBe(unknown.body.error.message);
    const credentials = await api.call<{ data: { items: { systemId: string }[] } }>(
      'GET',
      '/v1/credentials',
      {
        key: crmOnly,
      },
    );
    expect(credentials.body.data.items.map((item) => item.systemId)).toEqual(['crm']);
  });
});
