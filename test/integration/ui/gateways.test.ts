/**
 * The Gateways page in a real browser: with no agent it says how to connect one; a real gateway agent
 * (test/support/gateway-agent.ts) shows with its targets, the replica holding its tunnel, since when, and
 * the bytes a run moved through it, as the page reads the list again; a key without systems:read is told
 * why it sees nothing. Checked with axe-core and photographed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KG_ERR_SCOPE_REQUIRED } from '../../../contract/api/errors.ts';
import {
  expectAccessible,
  expectFitsAccessibly,
  expectRefusedRead,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';
import { TEST_ADMIN_KEY } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const TUNNEL = 'corp-eu';
const REPLICA = 'kubeglue-api-0';
const target = useHttpTarget();
// The private system's host name resolves nowhere: only the agent's tunnel reaches the target.
const { api, call, describeDashboard } = useBrowserTests('gateways', {
  env: { KUBEGLUE_POD_NAME: REPLICA, KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' },
});
let agent: AgentProcess | undefined;

interface Gateway {
  tunnelId: string;
  bytesIn: number;
  bytesOut: number;
}

describeDashboard('the Gateways page', (dashboard) => {
  beforeAll(async () => {
    target.route('GET', '/hello', { body: { hello: 'from the private network' } });
    await call('POST', '/v1/systems', {
      id: 'billing',
      url: 'http://billing.corp.internal',
      gateway: { tunnelId: TUNNEL, target: 'web' },
    });
    await call('POST', '/v1/tools', {
      id: 'private-hello',
      steps: [{ id: 'call', config: { url: '/hello', systemId: 'billing' } }],
    });
  });

  afterAll(async () => {
    await agent?.kill();
  });

  it('says how to connect an agent while none is', async () => {
    const page = await dashboard.openSignedIn('/gateways');
    await page.getByText('No gateway agent is connected.').waitFor();
    await expectAccessible(page);
  });

  it('shows a connected agent with its targets, its replica, and the bytes a run moved through it', async () => {
    agent = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: {
        web: { address: new URL(target.url).host, protocol: 'http' },
        warehouse: { address: '127.0.0.1:5432', protocol: 'postgres' },
      },
    });
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);

    const page = await dashboard.openSignedIn('/gateways');
    const row = page.getByRole('row', { name: new RegExp(TUNNEL) });
    await row.waitFor();
    const cells = row.getByRole('cell');
    expect(await cells.nth(0).textContent()).toContain('connected');
    expect(await cells.nth(1).textContent()).toBe('web httpwarehouse postgres');
    expect(await cells.nth(2).textContent()).toBe(REPLICA);
    expect(await cells.nth(3).textContent()).toMatch(/seconds? ago|now/);
    const bytes = cells.nth(5);
    expect(await bytes.textContent()).toBe('0 B to the agent0 B from the agent');

    // A run through the tunnel: the page shows what it moved when it reads the list again.
    const run = await call<{ status: string }>('POST', '/v1/tools/private-hello/run', {});
    expect(run.status).toBe('success');
    const [moved] = (await call<{ data: Gateway[] }>('GET', '/v1/gateways')).data;
    expect(moved?.bytesIn).toBeGreaterThan(0);
    await expect
      .poll(() => bytes.textContent(), { timeout: 15_000 })
      .toBe(`${moved?.bytesOut} B to the agent${moved?.bytesIn} B from the agent`);
    expect(await cells.nth(4).textContent()).toMatch(/0 open1 opened/);
    await expectAccessible(page);
    await screenshot(page, 'gateways');
  });

  it('tells a key without systems:read why it sees no gateways', async () => {
    const { key } = await call<{ key: string }>('POST', '/v1/api-keys', {
      name: 'runner only',
      scopes: ['runs:read'],
    });
    const page = await dashboard.open('/gateways');
    // The page shows the API's refusal, as any client would meet it.
    expectRefusedRead(page, /^GET \/v1\/gateways 403$/);
    await dashboard.signIn(page, key);
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain(KG_ERR_SCOPE_REQUIRED.code);
    expect(await alert.textContent()).toContain('systems:read');
  });

  it('works at 200 % zoom, in the dark theme', async () => {
    const page = await dashboard.openSignedIn('/gateways', { viewport: ZOOMED_200, colorScheme: 'dark' });
    await page.getByRole('row', { name: new RegExp(TUNNEL) }).waitFor();
    await expectFitsAccessibly(page);
  });
});
