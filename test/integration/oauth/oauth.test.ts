/**
 * OAuth systems against a real provider (oidc-provider) through the public API of the embedded
 * deployment: client credentials, the authorization-code flow with PKCE through the provider's login and
 * consent, refresh with rotation, a revoked refresh token, a token revoked mid-run, and one token request
 * for many concurrent runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { systemResourceName } from '../../../contract/resources/convert.ts';
import { hashState } from '../../../systems/oauth/pkce.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import {
  AC_CLIENT,
  authorizeInBrowser,
  CC_CLIENT,
  startOAuthProvider,
  type TestOAuthProvider,
} from '../../support/oauth-provider.ts';

const api = useTestApi();
let idp: TestOAuthProvider;

beforeAll(async () => {
  idp = await startOAuthProvider({ redirectUris: [`${api.url}/v1/oauth/callback`] });
  await api.call('POST', '/v1/systems', { body: idp.clientCredentialsSystem('cc', { scopes: 'api:read' }) });
  await api.call('POST', '/v1/systems', {
    body: idp.authorizationCodeSystem('ac', { scopes: 'openid offline_access api:read' }),
  });
  for (const id of ['cc', 'ac']) {
    await api.call('POST', '/v1/tools', {
      body: { id: `whoami-${id}`, steps: [{ id: 'me', config: { url: '/api/whoami', systemId: id } }] },
    });
    await api.call('POST', '/v1/tools', {
      body: {
        id: `twice-${id}`,
        steps: [
          { id: 'first', config: { url: '/api/whoami', systemId: id } },
          { id: 'second', config: { url: '/api/whoami', systemId: id } },
        ],
      },
    });
  }
}, 60_000);

afterAll(async () => {
  await idp?.stop();
});

const run = (toolId: string, body: object = {}) => api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body });

describe('client credentials', () => {
  it('50 concurrent runs of a new system cause one token request, and every run is authorized', async () => {
    const before = idp.tokenRequests.client_credentials ?? 0;
    const runs = await Promise.all(Array.from({ length: 50 }, () => run('whoami-cc')));
    for (const r of runs) expect(r.body.status, r.body.error).toBe('success');
    // The API answers with the client id and scope, which are credentials of the system: redacted.
    expect(runs[0]?.body.data).toEqual({ clientId: '<<cc_clientId>>', scope: '<<cc_scopes>>' });
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
  });

  it('authenticates the client as configured (client_secret_post)', () => {
    expect(idp.authMethods).toEqual(['client_secret_post']);
  });

  it('shows status, expiry and scopes on the system, never a token', async () => {
    const { body, text } = await api.call<{
      data: { oauth: { status: string; expiresAt: string; scopes: string } };
    }>('GET', '/v1/systems/cc');
    expect(body.data.oauth.status).toBe('active');
    expect(Date.parse(body.data.oauth.expiresAt)).toBeGreaterThan(Date.now());
    expect(body.data.oauth.scopes).toBe('api:read');
    expect(text).not.toContain(CC_CLIENT.secret);
    expect(Object.keys(body.data.oauth).sort()).toEqual(['expiresAt', 'scopes', 'status']);
  });

  it('a token revoked mid-run is answered by one new token and the request is repeated', async () => {
    const before = idp.tokenRequests.client_credentials ?? 0;
    // The first step's answer revokes every token: the second step's request is refused with 401.
    const tool = {
      id: 'revoke-mid-run',
      steps: [
        { id: 'first', config: { url: '/api/whoami', systemId: 'cc' } },
        { id: 'pause', config: { type: 'transform', transformCode: '(s) => s.first' } },
        { id: 'second', config: { url: '/api/whoami', systemId: 'cc' } },
      ],
    };
    await api.call('POST', '/v1/tools', { body: tool });
    const rejectedBefore = idp.apiCalls.rejected;
    await idp.revokeAccessTokens();
    const result = await run('revoke-mid-run');
    expect(result.body.status, result.body.error).toBe('success');
    expect(idp.apiCalls.rejected - rejectedBefore).toBe(1);
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
  });
});

describe('authorization code with PKCE', () => {
  /** A run of the authorization-code system fails saying `why` and where to authorize; the system shows `status`. */
  async function expectRunNeedsAuthorization(why: string, status: string): Promise<void> {
    const result = await run('whoami-ac');
    expect(result.body.status).toBe('failed');
    expect(result.body.error).toContain(why);
    expect(result.body.error).toContain('GET /v1/systems/ac/oauth/authorize?environment=prod');
    const system = await api.call<{ data: { oauth: { status: string } } }>('GET', '/v1/systems/ac');
    expect(system.body.data.oauth.status).toBe(status);
  }

  it('a run before authorization fails naming the system and the authorize route', async () => {
    await expectRunNeedsAuthorization("System 'ac' (prod)", 'not_authorized');
  });

  it('the authorize URL carries the state and an S256 challenge; login and consent end in stored tokens', async () => {
    const started = await api.call<{ data: { authorizationUrl: string; redirectUri: string } }>(
      'GET',
      '/v1/systems/ac/oauth/authorize?environment=prod',
    );
    expect(started.status).toBe(200);
    const url = new URL(started.body.data.authorizationUrl);
    expect(url.origin + url.pathname).toBe(idp.authorizationUrl);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('state')?.length).toBeGreaterThan(30);
    expect(started.body.data.redirectUri).toBe(`${api.url}/v1/oauth/callback`);

    const done = await authorizeInBrowser(started.body.data.authorizationUrl);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ success: true, data: { systemId: 'ac', oauth: { status: 'active' } } });
    expect(JSON.stringify(done.body)).not.toMatch(/access_token|refresh_token|code=/);

    const result = await run('whoami-ac');
    expect(result.body.status, result.body.error).toBe('success');
    expect(result.body.data).toMatchObject({ clientId: '<<ac_clientId>>' });
    // Without tokenAuthMethod: the discovery document lists client_secret_basic, which is preferred.
    expect(idp.authMethods.at(-1)).toBe('client_secret_basic');
  });

  it('the state is single use', async () => {
    const started = await api.call<{ data: { authorizationUrl: string } }>(
      'GET',
      '/v1/systems/ac/oauth/authorize',
    );
    const state = new URL(started.body.data.authorizationUrl).searchParams.get('state') ?? '';
    const first = await api.call(
      'GET',
      `/v1/oauth/callback?code=made-up&state=${encodeURIComponent(state)}`,
      {
        key: null,
      },
    );
    // The made-up code is refused by the provider, and the state is used up either way.
    expect(first.status).toBe(502);
    const again = await api.call<{ error: { code: string } }>(
      'GET',
      `/v1/oauth/callback?code=made-up&state=${encodeURIComponent(state)}`,
      { key: null },
    );
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('KG_ERR_OAUTH_STATE_INVALID');
  });

  it('an access token the target refuses is refreshed with the refresh token, which rotates', async () => {
    const refreshesBefore = idp.tokenRequests.refresh_token ?? 0;
    const issuedBefore = idp.refreshTokensIssued();
    await idp.revokeAccessTokens();
    const result = await run('twice-ac');
    expect(result.body.status, result.body.error).toBe('success');
    expect((idp.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);
    // Rotation: the provider issued a new refresh token, and the next refresh must use it (the old is spent).
    expect(idp.refreshTokensIssued()).toBe(issuedBefore + 1);
    await idp.revokeAccessTokens();
    const again = await run('whoami-ac');
    expect(again.body.status, again.body.error).toBe('success');
    expect((idp.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(2);
  });

  it('a revoked refresh token marks the system as needing re-authorization, without retrying', async () => {
    await idp.revokeRefreshTokens();
    await idp.revokeAccessTokens();
    const refreshesBefore = idp.tokenRequests.refresh_token ?? 0;
    await expectRunNeedsAuthorization("System 'ac' (prod) needs re-authorization", 'needs_reauthorization');
    // Further runs fail at once: no request reaches the provider until the user authorizes again.
    const next = await run('whoami-ac');
    expect(next.body.status).toBe('failed');
    expect((idp.tokenRequests.refresh_token ?? 0) - refreshesBefore).toBe(1);

    const started = await api.call<{ data: { authorizationUrl: string } }>(
      'GET',
      '/v1/systems/ac/oauth/authorize',
    );
    const done = await authorizeInBrowser(started.body.data.authorizationUrl);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const ok = await run('whoami-ac', { options: { async: true } });
    const finished = await waitForRun<Run>(api, (ok.body as unknown as { runId: string }).runId);
    expect(finished.status, finished.error).toBe('success');
  });
});

describe('system lifecycle', () => {
  const ccSystem = (id: string) =>
    idp.clientCredentialsSystem(id, { authorizationUrl: idp.authorizationUrl });
  const keyOf = (id: string) => `default/${systemResourceName(id, 'prod')}`;

  it('create and update answers carry the oauth status like GET does', async () => {
    const created = await api.call<{ data: { oauth?: { status: string } } }>('POST', '/v1/systems', {
      body: ccSystem('lifecycle'),
    });
    expect(created.status).toBe(201);
    expect(created.body.data.oauth).toEqual({ status: 'none' });
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'whoami-lifecycle',
        steps: [{ id: 'me', config: { url: '/api/whoami', systemId: 'lifecycle' } }],
      },
    });
    const ran = await run('whoami-lifecycle');
    expect(ran.body.status, ran.body.error).toBe('success');
    const updated = await api.call<{ data: { name: string; oauth?: { status: string } } }>(
      'PUT',
      '/v1/systems/lifecycle',
      { body: { name: 'Renamed' } },
    );
    expect(updated.status).toBe(200);
    expect(updated.body.data.name).toBe('Renamed');
    expect(updated.body.data.oauth?.status).toBe('active');
    const got = await api.call<{ data: { oauth?: unknown } }>('GET', '/v1/systems/lifecycle');
    expect(updated.body.data.oauth).toEqual(got.body.data.oauth);
  });

  it('deleting a system deletes its cached token and its pending authorizations', async () => {
    const store = api.embedded.store;
    expect((await store.oauth.getToken(keyOf('lifecycle')))?.status).toBe('active');
    const started = await api.call<{ data: { authorizationUrl: string } }>(
      'GET',
      '/v1/systems/lifecycle/oauth/authorize',
    );
    expect(started.status).toBe(200);
    const state = new URL(started.body.data.authorizationUrl).searchParams.get('state') ?? '';

    // The tool whoami-lifecycle still uses it: deleted anyway, the answer says what that breaks.
    const deleted = await api.call('DELETE', '/v1/systems/lifecycle?force=true');
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, brokenTools: ['whoami-lifecycle'] });
    expect(await store.oauth.getToken(keyOf('lifecycle'))).toBeUndefined();
    expect(await store.oauth.takeState(hashState(state))).toBeUndefined();

    // Created again with the same id: it starts without a token and obtains a new one.
    const before = idp.tokenRequests.client_credentials ?? 0;
    const again = await api.call<{ data: { oauth?: { status: string } } }>('POST', '/v1/systems', {
      body: ccSystem('lifecycle'),
    });
    expect(again.body.data.oauth).toEqual({ status: 'none' });
    const ran = await run('whoami-lifecycle');
    expect(ran.body.status, ran.body.error).toBe('success');
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
  });
});

describe('returning to the page that started the flow (the dashboard)', () => {
  const authorizeReturningTo = (systemId: string, returnTo: string) =>
    api.call<{ data: { authorizationUrl: string }; error: { code: string } }>(
      'GET',
      `/v1/systems/${systemId}/oauth/authorize?environment=prod&returnTo=${encodeURIComponent(returnTo)}`,
    );
  const stateOf = (authorizationUrl: string) => new URL(authorizationUrl).searchParams.get('state') ?? '';

  beforeAll(async () => {
    const created = await api.call('POST', '/v1/systems', {
      body: idp.authorizationCodeSystem('back', { scopes: 'openid offline_access api:read' }),
    });
    expect(created.status).toBe(201);
  });

  it('ends back on that page of the server, saying the system is connected', async () => {
    const started = await authorizeReturningTo('back', '/systems/back?environment=prod');
    expect(started.status).toBe(200);
    const done = await authorizeInBrowser(started.body.data.authorizationUrl);
    expect(done.url).toBe(`${api.url}/systems/back?environment=prod&oauth=connected`);
    const system = await api.call<{ data: { oauth: { status: string } } }>('GET', '/v1/systems/back');
    expect(system.body.data.oauth.status).toBe('active');
  });

  it("returns there with the error's code when the provider refuses or the code is bad", async () => {
    const denied = await authorizeReturningTo('back', `${api.url}/systems/back`);
    const refusal = await fetch(
      `${api.url}/v1/oauth/callback?error=access_denied&state=${stateOf(denied.body.data.authorizationUrl)}`,
      { redirect: 'manual' },
    );
    expect(refusal.status).toBe(303);
    expect(refusal.headers.get('location')).toBe(
      `${api.url}/systems/back?oauth=failed&error=KG_ERR_OAUTH_DENIED`,
    );

    const badCode = await authorizeReturningTo('back', '/systems/back');
    const exchange = await fetch(
      `${api.url}/v1/oauth/callback?code=made-up&state=${stateOf(badCode.body.data.authorizationUrl)}`,
      { redirect: 'manual' },
    );
    expect(exchange.headers.get('location')).toBe(
      `${api.url}/systems/back?oauth=failed&error=KG_ERR_OAUTH_TOKEN_REFUSED`,
    );
    // A state that is not (or no longer) known has nowhere to return to: the JSON error as before.
    const again = await fetch(
      `${api.url}/v1/oauth/callback?code=made-up&state=${stateOf(badCode.body.data.authorizationUrl)}`,
      { redirect: 'manual' },
    );
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe(
      'KG_ERR_OAUTH_STATE_INVALID',
    );
  });

  it('refuses a returnTo outside the server, so the callback never redirects to another site', async () => {
    const own = new URL(api.url);
    const elsewhere = [
      'https://evil.example/systems/back',
      '//evil.example/systems/back',
      '/\\evil.example/systems/back',
      'javascript:alert(1)',
      `http://${own.hostname}:1/systems/back`,
      `http://user:pass@${own.host}/systems/back`,
    ];
    for (const returnTo of elsewhere) {
      const started = await authorizeReturningTo('back', returnTo);
      expect(started.status, returnTo).toBe(400);
      expect(started.body.error.code, returnTo).toBe('KG_ERR_OAUTH_RETURN_INVALID');
    }
  });
});

describe('secrets', () => {
  it('no token, client secret or code appears in any response', () => {
    const all = api.bodies.join('\n');
    expect(all).not.toContain(CC_CLIENT.secret);
    expect(all).not.toContain(AC_CLIENT.secret);
    expect(all).not.toMatch(/"(access|refresh)_?[tT]oken"\s*:\s*"[^<]/);
  });
});
