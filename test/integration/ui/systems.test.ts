/**
 * The dashboard's systems pages in a real browser (Debian's Chromium, test/support/browser.ts) against a
 * started embedded server, a real HTTP target, a real OAuth provider (oidc-provider) and a real gateway
 * agent process: creating a system with an API key and seeing only its key names afterwards, editing
 * that keeps a stored value left empty, dev and prod side by side, OAuth connect ending connected,
 * documentation processing and upload moving to ready, a private system through a gateway's target, a
 * key limited to some systems; no credential value ever in the DOM or in the answers the pages read.
 */

import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectAccessible, screenshot, secretScan, useBrowserTests } from '../../support/browser.ts';
import { TEST_ADMIN_KEY } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { AC_CLIENT, startOAuthProvider, type TestOAuthProvider } from '../../support/oauth-provider.ts';

const API_KEY = 'crm-key-first-7d1c0a5e9b2f4c68';
const NEW_API_KEY = 'crm-key-second-3e8a6b0d2c4f1a97';
const DEV_TOKEN = 'crm-dev-bearer-5b9e2d7a1c3f6e08';
const TENANT_TOKEN = 'tenant-header-8f3a1c6e2b9d0574';
const DOCS =
  '# CRM API\n\n## Authentication\n\nSend the key in the X-Api-Key header.\n\n## Contacts\n\nGET /contacts lists the contacts of the CRM.\n';

const target = useHttpTarget();
const { api, call, describeDashboard } = useBrowserTests('systems');
let idp: TestOAuthProvider;
let agent: AgentProcess | undefined;
/** The credential values typed (secrets, below) looked for in the pages and in every answer they read. */
const scan = secretScan(
  () => api.url,
  () => secrets(),
);
/** Documentation requests for /docs/held wait here until the test answers them. */
let heldDocs: ReturnType<typeof target.hold>;

/** The credential values the tests type; the client id is not one (it travels in the authorization URL). */
const secrets = () => [
  { name: 'api key', value: API_KEY },
  { name: 'new api key', value: NEW_API_KEY },
  { name: 'dev bearer token', value: DEV_TOKEN },
  { name: 'tenant header', value: TENANT_TOKEN },
  { name: 'oauth client secret', value: AC_CLIENT.secret },
  ...[...idp.acceptedTokens].map((value, i) => ({ name: `oauth access token ${i}`, value })),
];

/** Every page: the provider's web font stubbed, and each answer of the server recorded for the secret scan. */
async function prepare(page: Page, context: BrowserContext): Promise<void> {
  // The provider's login page imports a web font from the internet, which this machine may not reach.
  await context.route(/fonts\.googleapis\.com/, (route) =>
    route.fulfill({ status: 200, contentType: 'text/css', body: '' }),
  );
  scan.keep(page);
}

const variant = (page: Page, environment: 'prod' | 'dev') =>
  page.getByRole('region', { name: environment === 'prod' ? 'Production (prod)' : 'Development (dev)' });

async function storedKeys(page: Page, environment: 'prod' | 'dev'): Promise<string[]> {
  const list = variant(page, environment).getByRole('list', { name: 'Stored credential keys' });
  await list.waitFor();
  return list.getByRole('listitem').allTextContents();
}

async function runTool(toolId: string): Promise<{ status: string; data?: unknown; error?: string }> {
  return call('POST', `/v1/tools/${toolId}/run`, {});
}

describeDashboard('the systems pages in a browser', { timeout: 60_000, prepare }, ({ openSignedIn }) => {
  beforeAll(async () => {
    idp = await startOAuthProvider({ redirectUris: [`${api.url}/v1/oauth/callback`] });
    target.route('GET', '/whoami', (req) => ({
      body: {
        key:
          req.headers['x-api-key'] === API_KEY
            ? 'first'
            : req.headers['x-api-key'] === NEW_API_KEY
              ? 'second'
              : 'none',
      },
    }));
    target.route('GET', '/hello', (req) => ({ body: { host: req.headers.host ?? null } }));
    heldDocs = target.hold('/docs/held');
  }, 60_000);

  afterAll(async () => {
    await agent?.kill();
    for (const response of heldDocs ?? []) response.destroy();
    await idp?.stop();
  });

  it('creates a system with an API key, and afterwards shows only the key names', async () => {
    const page = await openSignedIn('/systems');
    await page.getByText('No systems yet.').waitFor();
    await page.getByRole('link', { name: 'New system' }).click();
    await page.getByRole('heading', { name: 'New system' }).waitFor();
    await page.getByLabel('Id').fill('crm');
    await page.getByLabel('Name', { exact: true }).fill('CRM');
    await page.getByLabel('URL', { exact: true }).fill(target.url);
    await page.getByLabel('Method').selectOption({ label: 'API key' });
    await page.getByLabel('API key', { exact: true }).fill(API_KEY);
    await page.getByLabel('Header name').fill('X-Api-Key');
    await expectAccessible(page);
    await screenshot(page, 'system-new');
    await page.getByRole('button', { name: 'Create system' }).click();

    await page.waitForURL(`${api.url}/systems/crm`);
    expect(await storedKeys(page, 'prod')).toEqual(['apiKey', 'apiKeyHeader']);
    await scan.expectNoneShown(page);
    // The value stored is the one typed: the target receives it.
    await call('POST', '/v1/tools', {
      id: 'whoami-crm',
      steps: [{ id: 'me', config: { systemId: 'crm', url: '/whoami' } }],
    });
    expect((await runTool('whoami-crm')).data).toEqual({ key: 'first' });

    await page.getByRole('link', { name: 'All systems' }).click();
    const row = page.getByRole('row', { name: /crm/ });
    await row.waitFor();
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'crmCRM',
      'prod',
      target.url,
      'API key',
      '✓stored apiKeyapiKeyHeader',
      '—',
      '—',
    ]);
    await scan.expectNoneShown(page);
    await expectAccessible(page);
  });

  it('stores a header named in a row of its own, and afterwards shows only its name', async () => {
    const page = await openSignedIn('/systems/new');
    await page.getByLabel('Id').fill('tenant-api');
    await page.getByLabel('URL', { exact: true }).fill(target.url);
    await page.getByLabel('Method').selectOption({ label: 'Custom headers' });
    await page.getByRole('button', { name: 'Add a header' }).click();
    await page.getByLabel('Name of new header 1').fill('X-Tenant');
    await page.getByLabel('Value of new header 1').fill(TENANT_TOKEN);
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create system' }).click();

    await page.waitForURL(`${api.url}/systems/tenant-api`);
    expect(await storedKeys(page, 'prod')).toEqual(['X-Tenant']);
    await scan.expectNoneShown(page);
  });

  it('edits a system: an empty credential field keeps the stored value, a typed one replaces it', async () => {
    const page = await openSignedIn('/systems/crm');
    await page.getByRole('link', { name: 'Edit prod' }).click();
    await page.getByRole('heading', { name: 'Edit system crm (prod)' }).waitFor();
    const key = page.getByLabel('API key', { exact: true });
    // Nothing of the stored value reaches the form: the field is empty and says the value is kept.
    expect(await key.inputValue()).toBe('');
    expect(await key.getAttribute('aria-describedby')).toBeTruthy();
    await page.getByText('Stored; leave empty to keep it, type to replace it.').first().waitFor();
    await scan.expectNoneShown(page);
    await expectAccessible(page);
    await screenshot(page, 'system-edit');

    // A new credential beside the stored ones: those left empty go back as placeholders, which keep them.
    await page.getByLabel('Name', { exact: true }).fill('CRM (EU)');
    await page.getByLabel('Query parameter name').fill('api_key');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${api.url}/systems/crm`);
    await page.getByRole('heading', { name: /CRM \(EU\)/ }).waitFor();
    expect(await storedKeys(page, 'prod')).toEqual(['apiKey', 'apiKeyHeader', 'apiKeyQueryParam']);
    expect((await runTool('whoami-crm')).data).toEqual({ key: 'first' });

    // A typed value replaces the stored one; a stored key can be removed.
    await page.getByRole('link', { name: 'Edit prod' }).click();
    await page.getByLabel('API key', { exact: true }).fill(NEW_API_KEY);
    await page.getByLabel('Remove the stored query parameter name').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${api.url}/systems/crm`);
    expect(await storedKeys(page, 'prod')).toEqual(['apiKey', 'apiKeyHeader']);
    expect((await runTool('whoami-crm')).data).toEqual({ key: 'second' });
    await scan.expectNoneShown(page);
  });

  it('shows the dev and prod variants side by side', async () => {
    const page = await openSignedIn('/systems/crm');
    // crm has no dev variant yet: the page says so without a read the server refuses (a 404 the browser
    // would log as an error, which fails the test in closeWatchedPages).
    await variant(page, 'dev').getByText('No dev variant', { exact: false }).waitFor();
    await variant(page, 'dev').getByRole('link', { name: 'Add a dev variant' }).click();
    await page.getByRole('heading', { name: 'New system' }).waitFor();
    expect(await page.getByLabel('Id').inputValue()).toBe('crm');
    expect(await page.getByLabel('Environment').inputValue()).toBe('dev');
    await page.getByLabel('URL', { exact: true }).fill(`${target.url}/sandbox`);
    await page.getByLabel('Method').selectOption({ label: 'Bearer token' });
    await page.getByLabel('Bearer token').fill(DEV_TOKEN);
    await page.getByRole('button', { name: 'Create system' }).click();

    await page.waitForURL(`${api.url}/systems/crm`);
    expect(await storedKeys(page, 'dev')).toEqual(['bearerToken']);
    expect(await storedKeys(page, 'prod')).toEqual(['apiKey', 'apiKeyHeader']);
    const [prod, dev] = [await variant(page, 'prod').boundingBox(), await variant(page, 'dev').boundingBox()];
    expect(prod && dev && Math.abs(prod.y - dev.y)).toBe(0);
    expect(prod && dev && dev.x > prod.x + prod.width - 1).toBe(true);
    expect(await variant(page, 'dev').getByText(`${target.url}/sandbox`).count()).toBe(1);
    await scan.expectNoneShown(page);
    await expectAccessible(page);
    await screenshot(page, 'system');
  });

  it('shows documentation processing until it is ready, uploads a file and searches it', async () => {
    const page = await openSignedIn('/systems/crm/edit?environment=dev');
    await page.getByLabel('Documentation URL').fill(`${target.url}/docs/held`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${api.url}/systems/crm`);
    const devDocs = page.getByRole('region', { name: 'Documentation (dev)' });
    // The fetch hangs at the target: the page shows it processing, and follows it without a reload.
    await devDocs.locator('.status', { hasText: 'processing' }).waitFor({ timeout: 20_000 });
    expect(await devDocs.textContent()).toContain('attempt 1 of');
    for (const response of heldDocs.splice(0)) {
      response.writeHead(200, { 'content-type': 'text/markdown' });
      response.end(DOCS);
    }
    await devDocs.locator('.status', { hasText: 'ready' }).waitFor({ timeout: 20_000 });

    const prodDocs = page.getByRole('region', { name: 'Documentation (prod)' });
    await prodDocs.getByText('None: give a documentation URL').waitFor();
    await prodDocs.getByLabel('Documentation file').setInputFiles({
      name: 'crm.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from(DOCS),
    });
    await prodDocs.getByRole('button', { name: 'Upload' }).click();
    await prodDocs.getByText('upload:crm.md').waitFor();
    await prodDocs.locator('.status', { hasText: 'ready' }).waitFor({ timeout: 20_000 });

    await prodDocs.getByRole('searchbox', { name: 'Search the documentation' }).fill('contacts');
    await prodDocs.getByRole('button', { name: 'Search' }).click();
    await prodDocs.getByRole('heading', { name: 'Contacts' }).waitFor();
    await expectAccessible(page);
    await screenshot(page, 'system-documentation');
  });

  it('connects an OAuth system at the provider and comes back to its page, connected', async () => {
    const page = await openSignedIn('/systems/new');
    await page.getByLabel('Id').fill('idp');
    await page.getByLabel('URL', { exact: true }).fill(idp.apiUrl);
    await page.getByLabel('Method').selectOption({ label: 'OAuth 2.0' });
    await page.getByLabel('Grant').selectOption('authorization_code');
    await page.getByLabel('Client id').fill(AC_CLIENT.id);
    await page.getByLabel('Client secret').fill(AC_CLIENT.secret);
    await page.getByLabel('Token URL').fill(idp.tokenUrl);
    await page.getByLabel('Authorization URL').fill(idp.authorizationUrl);
    await page.getByLabel('Scopes').fill('openid offline_access api:read');
    await page.getByRole('button', { name: 'Create system' }).click();
    await page.waitForURL(`${api.url}/systems/idp`);
    const oauth = page.getByRole('region', { name: 'OAuth (prod)' });
    await oauth.getByText('not connected').waitFor();
    await scan.expectNoneShown(page);

    await oauth.getByRole('button', { name: 'Connect prod' }).click();
    // The provider's own pages: sign in, then consent.
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('any-password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    // kubeglue's callback sends the browser back to the system's page, still signed in.
    await page.waitForURL((url) => url.origin === api.url && url.pathname === '/systems/idp');
    await page.getByRole('status').getByText('The prod variant is connected').waitFor();
    await oauth.locator('.status', { hasText: /^.connected$/ }).waitFor();
    await oauth.getByRole('button', { name: 'Reconnect prod' }).waitFor();
    expect(new URL(page.url()).search).toBe('');
    await scan.expectNoneShown(page);
    await expectAccessible(page);
    await screenshot(page, 'system-oauth');

    await call('POST', '/v1/tools', {
      id: 'whoami-idp',
      steps: [{ id: 'me', config: { systemId: 'idp', url: '/api/whoami' } }],
    });
    const run = await runTool('whoami-idp');
    expect(run.status, run.error).toBe('success');
  });

  it('does not leave the page for an authorization URL that is not http(s), whatever the server answers', async () => {
    const page = await openSignedIn('/systems/idp');
    // The server never answers one (security/api-navigation-urls.test.ts); an older server or an altered
    // store might: the page checks before it navigates, not only the Content-Security-Policy.
    await page.route(/\/v1\/systems\/idp\/oauth\/authorize/, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({
          success: true,
          data: {
            authorizationUrl: 'javascript:document.title="taken over"',
            redirectUri: `${api.url}/v1/oauth/callback`,
            expiresAt: new Date(Date.now() + 600_000).toISOString(),
          },
        }),
      }),
    );
    const oauth = page.getByRole('region', { name: 'OAuth (prod)' });
    await oauth.getByRole('button', { name: 'Reconnect prod' }).click();
    const alert = oauth.getByRole('alert');
    await alert.getByText('Connecting could not start').waitFor();
    expect(await alert.textContent()).toContain('not an http(s) URL');
    expect(new URL(page.url()).pathname).toBe('/systems/idp');
    expect(await page.title()).not.toBe('taken over');
    await expectAccessible(page);
  });

  it('says so on the page when the provider refuses the connection', async () => {
    const started = await call<{ data: { authorizationUrl: string } }>(
      'GET',
      `/v1/systems/idp/oauth/authorize?environment=prod&returnTo=${encodeURIComponent('/systems/idp?environment=prod')}`,
    );
    const state = new URL(started.data.authorizationUrl).searchParams.get('state') ?? '';
    const page = await openSignedIn('/systems/idp');
    // What the provider does when the user refuses consent: back to the callback with error=access_denied.
    await page.goto(`${api.url}/v1/oauth/callback?error=access_denied&state=${encodeURIComponent(state)}`);
    await page.waitForURL((url) => url.pathname === '/systems/idp');
    const alert = page.getByRole('alert');
    await alert.getByText('Connecting did not complete').waitFor();
    expect(await alert.textContent()).toContain('KG_ERR_OAUTH_DENIED');
  });

  it('creates a private system by choosing a connected gateway and one of its targets', async () => {
    const { hostname, port } = new URL(target.url);
    agent = await startAgent({
      tunnel_id: 'corp',
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: {
        web: { address: `${hostname}:${port}`, protocol: 'http' },
        warehouse: { address: `${hostname}:1`, protocol: 'postgres' },
      },
    });
    await agent.waitFor("tunnel 'corp' registered");

    const page = await openSignedIn('/systems/new');
    await page.getByLabel('Id').fill('billing');
    await page.getByLabel('In a private network, through a gateway').check();
    await page.getByLabel('Gateway', { exact: true }).selectOption('corp');
    expect(await page.getByLabel('Target').locator('option').allTextContents()).toEqual([
      'choose a target of the gateway',
      'web (http)',
      'warehouse (postgres)',
    ]);
    await page.getByLabel('Target').selectOption('web');
    await page.getByLabel('URL', { exact: true }).fill('http://billing.corp.internal:8080');
    await expectAccessible(page);
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'system-gateway');
    await page.getByRole('button', { name: 'Create system' }).click();

    await page.waitForURL(`${api.url}/systems/billing`);
    await variant(page, 'prod').getByText('corp, target web').waitFor();
    const system = await call<{ data: { gateway?: unknown } }>('GET', '/v1/systems/billing');
    expect(system.data.gateway).toEqual({ tunnelId: 'corp', target: 'web' });
    // Steps on it reach the target through the agent, with the system's host name.
    await call('POST', '/v1/tools', {
      id: 'hello-billing',
      steps: [{ id: 'hello', config: { systemId: 'billing', url: '/hello' } }],
    });
    const run = await runTool('hello-billing');
    expect(run.status, run.error).toBe('success');
    expect(run.data).toEqual({ host: 'billing.corp.internal:8080' });

    // The list: every kind of system of this file, with its state.
    await page.getByRole('link', { name: 'All systems' }).click();
    await page
      .getByRole('row', { name: /billing/ })
      .getByText('gateway corp → web')
      .waitFor();
    await page.getByRole('row', { name: /idp/ }).getByText('connected', { exact: false }).waitFor();
    await scan.expectNoneShown(page);
    await expectAccessible(page);
    await screenshot(page, 'systems');
    const dark = await openSignedIn('/systems/crm', { colorScheme: 'dark' });
    await variant(dark, 'prod').getByRole('list', { name: 'Stored credential keys' }).waitFor();
    await expectAccessible(dark);
  });

  it('shows a key limited to some systems only those, and no way to change them', async () => {
    const limited = await call<{ key: string }>('POST', '/v1/api-keys', {
      name: 'crm reader',
      scopes: ['systems:read'],
      systemIds: ['crm'],
    });
    const page = await openSignedIn('/systems', { key: limited.key });
    const rows = page.locator('.systems-table tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    expect(new Set(await page.locator('.systems-table tbody td:first-child a').allTextContents())).toEqual(
      new Set(['crm']),
    );
    expect(await page.getByRole('link', { name: 'New system' }).count()).toBe(0);
    await page.locator('.systems-table').getByRole('link', { name: 'crm', exact: true }).first().click();
    await variant(page, 'prod').getByText('CRM (EU)').waitFor();
    expect(await page.getByRole('link', { name: /^Edit / }).count()).toBe(0);
    expect(await page.getByLabel('Documentation file').count()).toBe(0);
    await page.goto(`${api.url}/systems/idp`);
    await page.getByText('There is no system idp, or this API key may not use it.').waitFor();
  });

  it("sets a system's rate budget in the form, and its page shows what the budget did", async () => {
    target.route('GET', '/limited', { body: { ok: true } });
    const page = await openSignedIn('/systems/new');
    await page.getByLabel('Id').fill('limited-api');
    await page.getByLabel('URL', { exact: true }).fill(target.url);
    await page.getByLabel('Requests per second').fill('5');
    await page.getByLabel('Requests in flight').fill('2');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create system' }).click();
    await page.waitForURL(`${api.url}/systems/limited-api`);
    await variant(page, 'prod').getByText('5 requests/s, 2 in flight').waitFor();
    await variant(page, 'prod').getByText('not used yet').waitFor();
    expect(
      (await call<{ data: { rateLimit?: unknown } }>('GET', '/v1/systems/limited-api')).data.rateLimit,
    ).toEqual({
      requestsPerSecond: 5,
      maxConcurrent: 2,
    });

    await call('POST', '/v1/tools', {
      id: 'limited-twice',
      steps: [
        { id: 'call', dataSelector: '() => [1, 2, 3]', config: { systemId: 'limited-api', url: '/limited' } },
      ],
    });
    expect((await runTool('limited-twice')).status).toBe('success');
    await page.reload();
    await variant(page, 'prod')
      .getByText(/^3 requests, \d+ waited/)
      .waitFor();

    // Emptying the fields removes the budget.
    await page.getByRole('link', { name: 'Edit prod' }).click();
    await page.getByLabel('Requests per second').fill('');
    await page.getByLabel('Requests in flight').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${api.url}/systems/limited-api`);
    await variant(page, 'prod').getByText('none (requests are not held back)').waitFor();
  });

  it('works at 200 % zoom', async () => {
    const page = await openSignedIn('/systems', { viewport: { width: 600, height: 400 } });
    await page.locator('.systems-table').waitFor();
    const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(await overflow()).toBeLessThanOrEqual(0);
    for (const path of ['/systems/crm', '/systems/new', '/systems/crm/edit?environment=prod']) {
      await page.goto(`${api.url}${path}`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.getByRole('heading', { level: 2 }).or(page.getByRole('group').first()).first().waitFor();
      expect(await overflow(), path).toBeLessThanOrEqual(0);
    }
  });

  it('never puts a credential value in an answer the pages read', async () => {
    expect(scan.answers.length).toBeGreaterThan(20);
    expect(scan.answers.some((answer) => answer.where.includes('/v1/systems'))).toBe(true);
    scan.expectNoneAnswered();
  });
});
