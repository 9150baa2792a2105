/**
 * A real OAuth 2.0 / OpenID provider in-process (`oidc-provider`, a certified implementation) on a free
 * loopback port, with a client-credentials client, an authorization-code client (PKCE required, refresh
 * tokens rotated on every use) and its development login and consent pages, which `authorizeInBrowser`
 * drives like a browser would (cookies, redirects, forms) without one.
 *
 * It also serves as the protected API: `/api/whoami` accepts only access tokens the provider issued and
 * has not revoked, by looking them up in the provider itself.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { useStarted } from './fixture.ts';

export const CC_CLIENT = { id: 'kg-cc-client', secret: 'kg-cc-secret-0123456789abcdef' };
export const AC_CLIENT = { id: 'kg-ac-client', secret: 'kg-ac-secret-0123456789abcdef' };

export interface TestOAuthProvider {
  issuer: string;
  tokenUrl: string;
  authorizationUrl: string;
  /** The protected API (base URL) whose /api/whoami answers 401 to anything but a live token. */
  apiUrl: string;
  provider: Provider;
  /** Requests to the token endpoint so far, by grant_type. */
  tokenRequests: Record<string, number>;
  /** Client authentication methods seen at the token endpoint. */
  authMethods: string[];
  /** Requests to the protected API so far, by status answered. */
  apiCalls: { ok: number; rejected: number };
  /** Access tokens the protected API accepted, to look for them where they must not appear. */
  acceptedTokens: Set<string>;
  /** Revokes every access token the provider has issued so far (the API then answers 401 to them). */
  revokeAccessTokens(): Promise<void>;
  /** Revokes every refresh token issued so far (a refresh with them answers invalid_grant). */
  revokeRefreshTokens(): Promise<void>;
  /** Refresh tokens issued so far (rotation issues a new one with each refresh). */
  refreshTokensIssued(): number;
  /** A System (POST /v1/systems body) calling the protected API with the client-credentials client. */
  clientCredentialsSystem(id: string, credentials?: Record<string, string>): OAuthSystem;
  /** A System calling the protected API with the authorization-code client, once a user connected it. */
  authorizationCodeSystem(id: string, credentials?: Record<string, string>): OAuthSystem;
  stop(): Promise<void>;
}

export interface OAuthSystem {
  id: string;
  url: string;
  authType: 'oauth';
  credentials: Record<string, string>;
}

interface Destroyable {
  destroy(): Promise<void>;
}

/** A provider for the tests of the enclosing block, stopped after them. */
export function useOAuthProvider(opts: { redirectUris: string[] }): TestOAuthProvider {
  return useStarted(
    () => startOAuthProvider(opts),
    (idp) => idp.stop(),
  );
}

export async function startOAuthProvider(opts: { redirectUris: string[] }): Promise<TestOAuthProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CC_CLIENT.id,
        client_secret: CC_CLIENT.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        scope: 'api:read api:write',
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: AC_CLIENT.id,
        client_secret: AC_CLIENT.secret,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: opts.redirectUris,
        scope: 'openid offline_access api:read',
      },
    ],
    scopes: ['openid', 'offline_access', 'api:read', 'api:write'],
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: true },
      revocation: { enabled: true },
    },
    pkce: { required: () => true },
    issueRefreshToken: async () => true,
    rotateRefreshToken: () => true,
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    ttl: { AccessToken: 3600, ClientCredentials: 3600, RefreshToken: 86_400, Grant: 86_400 },
    cookies: { keys: ['kubeglue-test-cookie-key'] },
  });
  const accessTokens: Destroyable[] = [];
  const refreshTokens: Destroyable[] = [];
  provider.on('access_token.saved', (token: Destroyable) => accessTokens.push(token));
  provider.on('client_credentials.saved', (token: Destroyable) => accessTokens.push(token));
  provider.on('refresh_token.saved', (token: Destroyable) => refreshTokens.push(token));
  // The provider's own errors would otherwise print to the test output.
  provider.on('server_error', () => {});

  const tokenRequests: Record<string, number> = {};
  const authMethods: string[] = [];
  const apiCalls = { ok: 0, rejected: 0 };
  const acceptedTokens = new Set<string>();
  const handler = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/api/')) {
      void protectedApi(req, res);
      return;
    }
    if (req.method === 'POST' && req.url === '/token') countTokenRequest(req);
    handler(req, res);
  });

  function countTokenRequest(req: IncomingMessage): void {
    authMethods.push(
      req.headers.authorization?.startsWith('Basic ') ? 'client_secret_basic' : 'client_secret_post',
    );
    // The body is read by the provider; peek at grant_type without consuming it.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const grant = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('grant_type') ?? '?';
      tokenRequests[grant] = (tokenRequests[grant] ?? 0) + 1;
    });
  }

  async function protectedApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const found = token
      ? ((await provider.AccessToken.find(token)) ?? (await provider.ClientCredentials.find(token)))
      : undefined;
    if (!found) {
      apiCalls.rejected++;
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': 'Bearer error="invalid_token"',
      });
      res.end(JSON.stringify({ error: 'invalid_token' }));
      return;
    }
    apiCalls.ok++;
    if (token) acceptedTokens.add(token);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ clientId: found.clientId, scope: found.scope ?? null }));
  }

  return {
    issuer,
    tokenUrl: `${issuer}/token`,
    authorizationUrl: `${issuer}/auth`,
    apiUrl: issuer,
    provider,
    tokenRequests,
    authMethods,
    apiCalls,
    acceptedTokens,
    revokeAccessTokens: async () => {
      await Promise.all(accessTokens.splice(0).map((token) => token.destroy()));
    },
    revokeRefreshTokens: async () => {
      await Promise.all(refreshTokens.map((token) => token.destroy()));
    },
    refreshTokensIssued: () => refreshTokens.length,
    clientCredentialsSystem: (id, credentials = {}) => ({
      id,
      url: issuer,
      authType: 'oauth',
      credentials: {
        clientId: CC_CLIENT.id,
        clientSecret: CC_CLIENT.secret,
        tokenUrl: `${issuer}/token`,
        tokenAuthMethod: 'client_secret_post',
        ...credentials,
      },
    }),
    authorizationCodeSystem: (id, credentials = {}) => ({
      id,
      url: issuer,
      authType: 'oauth',
      credentials: {
        clientId: AC_CLIENT.id,
        clientSecret: AC_CLIENT.secret,
        authorizationUrl: `${issuer}/auth`,
        tokenUrl: `${issuer}/token`,
        grantType: 'authorization_code',
        ...credentials,
      },
    }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What a user's browser does with an authorization URL: follows redirects with cookies, signs in on the
 * provider's login page, confirms the consent page, and ends at the redirect URI, which it opens too.
 * Returns the final response (the callback's answer).
 */
export async function authorizeInBrowser(
  authorizationUrl: string,
  user = 'alice',
): Promise<{ status: number; url: string; body: unknown }> {
  const cookies = new Map<string, string>();
  const cookieHeader = () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  let url = authorizationUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 20; hop++) {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: cookieHeader(),
        ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      if (at > 0) cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url).toString();
      method = 'GET';
      body = undefined;
      continue;
    }
    const text = await response.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(text);
    if (response.status !== 200 || !form?.[1]) {
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: response.status, url, body: parsed };
    }
    const fields = new URLSearchParams();
    for (const input of text.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/gi)) {
      fields.set(input[1] ?? '', input[2] ?? '');
    }
    if (/name="login"/.test(text)) {
      fields.set('login', user);
      fields.set('password', 'any-password');
    }
    url = new URL(form[1].replace(/&amp;/g, '&'), url).toString();
    method = 'POST';
    body = fields.toString();
  }
  throw new Error('the authorization did not end within 20 steps');
}
