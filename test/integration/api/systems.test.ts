import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerOperations } from '../../../api/routes/register.ts';
import { systemHandlers } from '../../../api/routes/systems.ts';
import { buildServer } from '../../../api/server.ts';
import { systemResourceName } from '../../../contract/resources/convert.ts';
import type { ToolResource } from '../../../contract/resources/kinds.ts';
import { Informer } from '../../../kube/informer.ts';
import { createEmbeddedKubeglueResources, type KubeglueResources } from '../../../kube/resources/index.ts';
import { EmbeddedSecretStore } from '../../../kube/secrets/embedded.ts';
import { SecretUnreadableError } from '../../../kube/secrets/interface.ts';
import { credentialsBox } from '../../../platform/secret-box.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { SystemService } from '../../../systems/service.ts';
import { ToolService } from '../../../tools/service.ts';
import { catalogError } from '../../support/api-error.ts';

const NAMESPACE = 'kubeglue';
const MASTER = randomBytes(32);
/** Every credential value a test stores; none may ever appear in a response body. */
const SECRETS = {
  crmToken: 'crm-bearer-7f3a9c1e55d2',
  crmTokenRotated: 'crm-bearer-rotated-0b8e44',
  devToken: 'dev-bearer-61c0aa93f1',
  prodToken: 'prod-bearer-d92e10b7c4',
  password: 'pw-2b1d8e6f0a9c',
  extra: 'extra-value-5e7d3c',
  watched: 'watched-token-a1b2c3d4',
};

let store: Store;
let resources: KubeglueResources;
let systems: SystemService;
let tools: ToolService;
let toolInformer: Informer<ToolResource>;
let app: FastifyInstance;
let base: string;
const bodies: string[] = [];

function newService(masterKey = MASTER): { service: SystemService; secrets: EmbeddedSecretStore } {
  const secrets = new EmbeddedSecretStore({ store, namespace: NAMESPACE, box: credentialsBox(masterKey) });
  return { service: new SystemService({ resources, secrets, namespace: NAMESPACE }), secrets };
}

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field
async function call<T = Record<string, any>>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  bodies.push(text);
  return { status: response.status, body: JSON.parse(text) as T };
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  resources = createEmbeddedKubeglueResources(store.resources, NAMESPACE);
  systems = newService().service;
  await systems.start();
  app = buildServer({ bodyLimitBytes: 1 << 20, logLevel: 'silent', ready: () => true });
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    // Scopes are the auth hook's (not installed here); a restricted key is limited to another system.
    const restricted = request.headers['x-test-restricted'] === 'yes';
    request.principal = {
      id: 't',
      name: 't',
      admin: !restricted,
      scopes: ['systems:read', 'systems:write'],
      toolIds: null,
      systemIds: restricted ? ['some-other-system'] : null,
    };
  });
  toolInformer = new Informer<ToolResource>(resources.tools, { log: () => {} });
  await toolInformer.start();
  tools = new ToolService({
    resources,
    informer: toolInformer,
    namespace: NAMESPACE,
    validation: { systemExists: async () => true },
  });
  registerOperations(app, systemHandlers({ systems, tools }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await toolInformer?.stop();
  await systems?.close();
  await store?.close();
});

describe('systems API', () => {
  it('creates, reads, lists, updates and deletes a system, showing credentials only as placeholders', async () => {
    const created = await call('POST', '/v1/systems', {
      id: 'crm',
      name: 'CRM',
      url: 'https://crm.example/api',
      documentationUrl: 'https://crm.example/docs',
      authType: 'bearer',
      credentials: { bearerToken: SECRETS.crmToken },
    });
    expect(created.status).toBe(201);
    // Single-system answers use superglue's envelope: { success, data }.
    expect(created.body).toMatchObject({
      success: true,
      data: {
        id: 'crm',
        name: 'CRM',
        url: 'https://crm.example/api',
        environment: 'prod',
        authType: 'bearer',
        credentials: { bearerToken: '<<crm_bearerToken>>' },
        authentication: { type: 'api_key' },
        hasUserCredentials: true,
      },
    });
    expect(created.body.data).toMatchObject({ createdAt: expect.any(String) });

    const fetched = await call('GET', '/v1/systems/crm');
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toMatchObject({
      id: 'crm',
      credentials: { bearerToken: '<<crm_bearerToken>>' },
    });

    const listed = await call<{ data: Array<{ id: string }>; total: number }>('GET', '/v1/systems');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((system) => system.id)).toContain('crm');

    const updated = await call('PUT', '/v1/systems/crm', { name: 'CRM v2' });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({
      name: 'CRM v2',
      url: 'https://crm.example/api',
      documentationUrl: 'https://crm.example/docs',
      credentials: { bearerToken: '<<crm_bearerToken>>' },
    });
    const [resolved] = await systems.resolveForRun(['crm'], 'prod');
    expect(resolved).toEqual({
      id: 'crm',
      url: 'https://crm.example/api',
      authType: 'bearer',
      credentials: { bearerToken: SECRETS.crmToken },
    });

    expect(await call('DELETE', '/v1/systems/crm')).toEqual({ status: 200, body: { success: true } });
    expect((await call('GET', '/v1/systems/crm')).status).toBe(404);
    expect(
      await store.getSecret(NAMESPACE, `${systemResourceName('crm', 'prod')}-credentials`),
    ).toBeUndefined();
    expect(await systems.exists('crm')).toBe(false);
    await expect(systems.resolveForRun(['crm'], 'prod')).rejects.toThrow("system 'crm' does not exist");
  });

  it('answers 409 for an id that exists in the same environment', async () => {
    expect((await call('POST', '/v1/systems', { id: 'dup', url: 'https://a.example' })).status).toBe(201);
    const again = await call('POST', '/v1/systems', { id: 'dup', url: 'https://b.example' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual(
      catalogError('KG_ERR_SYSTEM_EXISTS', "system 'dup' already exists in environment prod"),
    );
    expect((await call('POST', '/v1/systems', { id: 'dup', environment: 'dev' })).status).toBe(201);
  });

  it('pages the list with both environments as separate entries', async () => {
    for (const id of ['page-a', 'page-b']) {
      await call('POST', '/v1/systems', { id, environment: 'dev' });
      await call('POST', '/v1/systems', { id, environment: 'prod' });
    }
    const all = await call<{ data: Array<{ id: string; environment: string }>; total: number }>(
      'GET',
      '/v1/systems?limit=100',
    );
    const pages = all.body.data.filter((system) => system.id.startsWith('page-'));
    expect(pages.map((system) => `${system.id}/${system.environment}`)).toEqual([
      'page-a/dev',
      'page-a/prod',
      'page-b/dev',
      'page-b/prod',
    ]);
    const second = await call('GET', '/v1/systems?page=2&limit=1');
    expect(second.body).toMatchObject({ page: 2, limit: 1, total: all.body.total, hasMore: true });
    expect((await call<{ limit: number }>('GET', '/v1/systems?limit=100000')).body.limit).toBe(100);
    expect((await call('GET', '/v1/systems?limit=0')).status).toBe(400);
    expect((await call('GET', '/v1/systems?color=blue')).status).toBe(400);
  });

  it('lists the variants of one id with ?systemId=: both, one or none (not a 404), as far as the key may see', async () => {
    await call('POST', '/v1/systems', { id: 'pick', environment: 'dev' });
    await call('POST', '/v1/systems', { id: 'pick', environment: 'prod' });
    await call('POST', '/v1/systems', { id: 'pick-prod-only', environment: 'prod' });
    type Listed = { data: Array<{ id: string; environment: string }>; total: number };
    const variants = async (query: string, headers?: Record<string, string>) => {
      const answer = await call<Listed>('GET', `/v1/systems?${query}`, undefined, headers);
      expect(answer.status).toBe(200);
      return answer.body.data.map((system) => `${system.id}/${system.environment}`);
    };
    expect(await variants('systemId=pick')).toEqual(['pick/dev', 'pick/prod']);
    expect(await variants('systemId=pick-prod-only')).toEqual(['pick-prod-only/prod']);
    expect(await variants('systemId=nowhere')).toEqual([]);
    // It narrows what a limited key sees, never widens it.
    expect(await variants('systemId=pick', { 'x-test-restricted': 'yes' })).toEqual([]);
    expect((await call('GET', '/v1/systems?systemId=')).status).toBe(400);
  });

  it('links dev and prod variants of one id and resolves runs by mode; an unlinked system serves both', async () => {
    for (const [environment, url, bearerToken] of [
      ['prod', 'https://pay.example', SECRETS.prodToken],
      ['dev', 'https://sandbox.pay.example', SECRETS.devToken],
    ]) {
      await call('POST', '/v1/systems', {
        id: 'pay',
        url,
        environment,
        authType: 'bearer',
        credentials: { bearerToken },
      });
    }
    await call('POST', '/v1/systems', { id: 'solo', url: 'https://solo.example', environment: 'dev' });

    expect((await call('GET', '/v1/systems/pay')).body.data).toMatchObject({ environment: 'prod' });
    expect((await call('GET', '/v1/systems/pay?environment=dev')).body.data).toMatchObject({
      environment: 'dev',
      url: 'https://sandbox.pay.example',
    });
    expect((await call('GET', '/v1/systems/solo')).body.data).toMatchObject({ environment: 'dev' });
    expect((await call('GET', '/v1/systems/solo?environment=prod')).status).toBe(404);

    const dev = await systems.resolveForRun(['pay', 'solo'], 'dev');
    const prod = await systems.resolveForRun(['pay', 'solo', 'pay'], 'prod');
    expect(dev.map((system) => [system.url, system.credentials.bearerToken])).toEqual([
      ['https://sandbox.pay.example', SECRETS.devToken],
      ['https://solo.example', undefined],
    ]);
    expect(prod.map((system) => [system.url, system.credentials.bearerToken])).toEqual([
      ['https://pay.example', SECRETS.prodToken],
      ['https://solo.example', undefined],
    ]);
    await expect(systems.resolveForRun(['pay', 'nope'], 'prod')).rejects.toMatchObject({
      statusCode: 400,
      message: "system 'nope' does not exist",
    });

    const ambiguous = await call('DELETE', '/v1/systems/pay');
    expect(ambiguous.status).toBe(400);
    expect((ambiguous.body as { error: { message: string } }).error.message).toMatch(/\?environment=/);
    expect((await call('DELETE', '/v1/systems/pay?environment=dev')).status).toBe(200);
    // The prod variant now has no counterpart, so dev runs use it too.
    const [afterDelete] = await systems.resolveForRun(['pay'], 'dev');
    expect(afterDelete?.credentials.bearerToken).toBe(SECRETS.prodToken);
    expect((await call('DELETE', '/v1/systems/pay')).status).toBe(200);
    expect((await call('GET', '/v1/systems/pay')).status).toBe(404);
  });

  it('addresses updates by ?environment= or the body environment, and refuses a mismatch', async () => {
    await call('POST', '/v1/systems', { id: 'env-upd', url: 'https://p.example' });
    await call('POST', '/v1/systems', { id: 'env-upd', url: 'https://d.example', environment: 'dev' });
    const byBody = await call('PUT', '/v1/systems/env-upd', { environment: 'dev', name: 'dev one' });
    expect(byBody.body.data).toMatchObject({ environment: 'dev', name: 'dev one' });
    expect((await call('GET', '/v1/systems/env-upd')).body.data).not.toHaveProperty('name');
    const mismatch = await call('PUT', '/v1/systems/env-upd?environment=prod', { environment: 'dev' });
    expect(mismatch.status).toBe(400);
    expect((await call('PUT', '/v1/systems/env-upd', { id: 'other' })).status).toBe(400);
    expect((await call('PUT', '/v1/systems/missing', { name: 'x' })).status).toBe(404);
  });

  it('keeps stored values for placeholders on update and replaces the rest of the set', async () => {
    await call('POST', '/v1/systems', {
      id: 'basic',
      authType: 'basic',
      credentials: { username: 'svc', password: SECRETS.password, region: 'eu' },
    });
    const fetched = await call<{ data: { credentials: Record<string, string> } }>('GET', '/v1/systems/basic');
    // Sending back what GET showed, plus one new key and without `region`.
    const { region: _dropped, ...kept } = fetched.body.data.credentials;
    const updated = await call('PUT', '/v1/systems/basic', {
      credentials: { ...kept, extra: SECRETS.extra },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data.credentials).toEqual({
      extra: '<<basic_extra>>',
      password: '<<basic_password>>',
      username: '<<basic_username>>',
    });
    const [resolved] = await systems.resolveForRun(['basic'], 'prod');
    expect(resolved?.credentials).toEqual({
      username: 'svc',
      password: SECRETS.password,
      extra: SECRETS.extra,
    });

    const unknown = await call('PUT', '/v1/systems/basic', { credentials: { token: '<<basic_token>>' } });
    expect(unknown.status).toBe(400);
    expect((unknown.body as { error: { message: string } }).error.message).toContain('credentials.token');
    const wrongShape = await call('PUT', '/v1/systems/basic', { credentials: { password: 'x' } });
    expect(wrongShape.status).toBe(400);
    expect((wrongShape.body as { error: { message: string } }).error.message).toContain(
      'credentials.username',
    );

    const cleared = await call('PUT', '/v1/systems/basic', { credentials: {} });
    expect(cleared.body.data).toMatchObject({ credentials: {}, hasUserCredentials: false });
    expect(
      await store.getSecret(NAMESPACE, `${systemResourceName('basic', 'prod')}-credentials`),
    ).toBeUndefined();
    const [afterClear] = await systems.resolveForRun(['basic'], 'prod');
    expect(afterClear?.credentials).toEqual({});
  });

  it('keeps credentials encrypted at rest and out of the System resource', async () => {
    await call('POST', '/v1/systems', {
      id: 'at-rest',
      authType: 'bearer',
      credentials: { bearerToken: SECRETS.crmToken },
    });
    const name = systemResourceName('at-rest', 'prod');
    const raw = await store.getSecret(NAMESPACE, `${name}-credentials`);
    expect(raw).toBeDefined();
    expect(Buffer.from(raw as Uint8Array).includes(SECRETS.crmToken)).toBe(false);
    expect(Buffer.from(raw as Uint8Array).includes('bearerToken')).toBe(false);
    const resource = await resources.systems.get(name);
    expect(resource?.spec.credentialsSecretRef).toEqual({ name: `${name}-credentials` });
    expect(JSON.stringify(resource)).not.toContain(SECRETS.crmToken);
  });

  it('fails clearly, without the data, when the master key is not the one the credentials were sealed with', async () => {
    await call('POST', '/v1/systems', {
      id: 'wrong-key',
      authType: 'bearer',
      credentials: { bearerToken: SECRETS.crmToken },
    });
    const { service, secrets } = newService(randomBytes(32));
    const direct = await secrets
      .get(`${systemResourceName('wrong-key', 'prod')}-credentials`)
      .catch((error: Error) => error);
    expect(direct).toBeInstanceOf(SecretUnreadableError);
    expect((direct as Error).message).toMatch(/cannot be read: .*master key/);
    expect((direct as Error).message).not.toContain(SECRETS.crmToken);
    const viaService = await service.get('wrong-key').catch((error: Error) => error);
    expect(viaService).toMatchObject({ statusCode: 500 });
    expect((viaService as Error).message).toMatch(/stored credentials of system 'wrong-key' .*master key/);
    await expect(service.resolveForRun(['wrong-key'], 'prod')).rejects.toMatchObject({ statusCode: 500 });
  });

  /** Creates system `id` with the CRM bearer token through the API; runs resolve it with that token. */
  async function bearerSystemResolved(id: string): Promise<void> {
    await call('POST', '/v1/systems', {
      id,
      authType: 'bearer',
      credentials: { bearerToken: SECRETS.crmToken },
    });
    const [resolved] = await systems.resolveForRun([id], 'prod');
    expect(resolved?.credentials.bearerToken).toBe(SECRETS.crmToken);
  }

  it('resolves runs with the new credentials right after an update through the API', async () => {
    await bearerSystemResolved('rotate');
    await call('PUT', '/v1/systems/rotate', { credentials: { bearerToken: SECRETS.crmTokenRotated } });
    const [after] = await systems.resolveForRun(['rotate'], 'prod');
    expect(after?.credentials.bearerToken).toBe(SECRETS.crmTokenRotated);
    // Each run gets its own copy: changing one does not change the cache.
    if (after) after.credentials.bearerToken = 'mutated';
    const [again] = await systems.resolveForRun(['rotate'], 'prod');
    expect(again?.credentials.bearerToken).toBe(SECRETS.crmTokenRotated);
  });

  it('keeps codeAccess in the System resource (off unless set) and hands it to runs', async () => {
    const created = await call('POST', '/v1/systems', { id: 'signer', url: 'https://sign.example' });
    expect(created.body.data.codeAccess).toBe(false);
    const name = systemResourceName('signer', 'prod');
    expect((await resources.systems.get(name))?.spec.codeAccess).toBeUndefined();
    expect((await systems.resolveForRun(['signer'], 'prod'))[0]?.codeAccess).toBeUndefined();

    const patched = await call('PATCH', '/v1/systems/signer', { codeAccess: true });
    expect(patched.body.data.codeAccess).toBe(true);
    expect((await resources.systems.get(name))?.spec.codeAccess).toBe(true);
    expect((await systems.resolveForRun(['signer'], 'prod'))[0]?.codeAccess).toBe(true);
    // A change that does not name it keeps it.
    await call('PATCH', '/v1/systems/signer', { name: 'Signer' });
    expect((await call('GET', '/v1/systems/signer')).body.data.codeAccess).toBe(true);
  });

  it('sees changes made directly to the System resources (kubectl, GitOps) through its watch', async () => {
    await call('POST', '/v1/systems', { id: 'watched', url: 'https://old.example' });
    const [before] = await systems.resolveForRun(['watched'], 'dev');
    expect(before?.url).toBe('https://old.example');

    const name = systemResourceName('watched', 'prod');
    const current = await resources.systems.get(name);
    if (!current) throw new Error('missing resource');
    await resources.systems.update({ ...current, spec: { ...current.spec, url: 'https://new.example' } });
    const changed = await eventually(
      () => systems.resolveForRun(['watched'], 'dev'),
      ([system]) => system?.url === 'https://new.example',
    );
    expect(changed[0]?.url).toBe('https://new.example');

    await resources.systems.delete(name);
    const gone = await eventually(
      () => systems.exists('watched'),
      (exists) => !exists,
    );
    expect(gone).toBe(false);
  });

  it('picks up credentials another replica changed, once its write reaches the watch', async () => {
    await bearerSystemResolved('replicated');
    // Warm this process's secret cache too, so a stale copy would be served if nothing invalidated it.
    expect((await systems.get('replicated')).credentials).toEqual({
      bearerToken: '<<replicated_bearerToken>>',
    });

    const replica = newService().service;
    await replica.update('replicated', undefined, { credentials: { bearerToken: SECRETS.watched } });
    const after = await eventually(
      () => systems.resolveForRun(['replicated'], 'prod'),
      ([system]) => system?.credentials.bearerToken === SECRETS.watched,
    );
    expect(after[0]?.credentials.bearerToken).toBe(SECRETS.watched);
  });

  it('refuses to delete the last variant of a system tools use, naming them, unless forced', async () => {
    await call('POST', '/v1/systems', { id: 'billing', name: 'Billing', url: 'https://billing.example' });
    await call('POST', '/v1/systems', {
      id: 'billing',
      environment: 'dev',
      url: 'https://dev.billing.example',
    });
    const step = (systemId: string) => ({ id: 'get', config: { url: '/invoices', systemId } });
    const everySystem = { systemIds: null };
    await tools.create({ id: 'invoices', steps: [step('billing')] }, everySystem);
    await tools.create({ id: 'archived-report', archived: true, steps: [step('billing')] }, everySystem);

    // One of two variants: the other serves both modes, nothing breaks.
    expect((await call('DELETE', '/v1/systems/billing?environment=dev')).body).toEqual({ success: true });

    const refused = await call('DELETE', '/v1/systems/billing');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toEqual({
      code: 'KG_ERR_SYSTEM_IN_USE',
      message:
        "system 'billing' is used by tools 'archived-report', 'invoices': change them to use another system " +
        'first, or delete with ?force=true (they then fail to run)',
      hint: expect.any(String),
    });
    expect((await call('GET', '/v1/systems/billing')).status).toBe(200);

    const forced = await call('DELETE', '/v1/systems/billing?force=true');
    expect(forced.status).toBe(200);
    expect(forced.body).toEqual({ success: true, brokenTools: ['archived-report', 'invoices'] });
    expect((await call('GET', '/v1/systems/billing')).status).toBe(404);
  });

  it('validates input and refuses keys limited to some tools', async () => {
    const bad = await call('POST', '/v1/systems', { id: '9 bad', credentials: { k: 1 } });
    expect(bad.status).toBe(400);
    const shape = await call('POST', '/v1/systems', {
      id: 'shape',
      authType: 'bearer',
      credentials: { other: SECRETS.extra },
    });
    expect(shape.status).toBe(400);
    expect((shape.body as { error: { message: string } }).error.message).toContain('credentials.bearerToken');
    expect((await call('GET', '/v1/systems/x?environment=staging')).status).toBe(400);
    // A key limited to other systems sees none of these, and may not create one outside its list.
    const restricted = await call('GET', '/v1/systems', undefined, { 'x-test-restricted': 'yes' });
    expect(restricted.status).toBe(200);
    expect((restricted.body as { total: number }).total).toBe(0);
    const restrictedCreate = await call('POST', '/v1/systems', { id: 'r' }, { 'x-test-restricted': 'yes' });
    expect(restrictedCreate.status).toBe(403);
    expect((restrictedCreate.body as { error: { code: string } }).error.code).toBe(
      'KG_ERR_SYSTEM_NOT_GRANTED',
    );
  });

  // Declared last, so it sees the bodies of every test above (vitest runs a file's tests in order).
  it('never puts a credential value into any response body', () => {
    expect(bodies.length).toBeGreaterThan(40);
    const all = bodies.join('\n');
    for (const value of Object.values(SECRETS)) expect(all).not.toContain(value);
  });
});
