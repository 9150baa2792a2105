/**
 * Issue 32: a run recorded from the run form ("Record responses", options.record) shows what it recorded
 * and each step's exchanges, request and response, with no credential anywhere on the page; a recording
 * cut by its size cap says so. A real browser against a started embedded server and a real HTTP target
 * that echoes what it was sent.
 */
import { beforeAll, expect, it } from 'vitest';
import { expectAccessible, screenshot, useBrowserTests } from '../../support/browser.ts';
import { waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
// Small enough that the big tool's second exchange is left out.
const { api, call, describeDashboard } = useBrowserTests('run recording', {
  env: { KUBEGLUE_MAX_RECORDING_BYTES: '20000' },
});

const TOKEN = 'very-secret-token-4711';

interface RunAnswer {
  runId: string;
  status: string;
  options?: { record?: boolean };
  recording?: { exchanges: number; truncated: boolean };
}

describeDashboard('a recorded run on its page', ({ openSignedIn }) => {
  let recordedId = '';

  beforeAll(async () => {
    // The target echoes the Authorization header: the recording must not keep the token it holds.
    target.route('GET', '/whoami', (req) => ({ body: { user: 'grace', sent: req.headers.authorization } }));
    target.route('GET', '/orders', (req) => ({
      body: { page: req.query, orders: [{ id: 1, total: 12.5 }] },
    }));
    target.route('GET', '/big', { body: { rows: 'x'.repeat(15_000) } });
    await call('POST', '/v1/systems', {
      id: 'shop',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: TOKEN },
    });
    await call('POST', '/v1/tools', {
      id: 'orders',
      steps: [
        { id: 'who', config: { systemId: 'shop', url: '/whoami' } },
        {
          id: 'orders',
          dataSelector: '() => [1, 2]',
          config: { systemId: 'shop', url: '/orders', queryParams: { customer: '<<currentItem>>' } },
        },
        { id: 'sum', config: { type: 'transform', transformCode: '(s) => Object.keys(s).length' } },
      ],
    });
    await call('POST', '/v1/tools', {
      id: 'big',
      steps: [
        { id: 'first', config: { systemId: 'shop', url: '/big' } },
        { id: 'second', config: { systemId: 'shop', url: '/big' } },
      ],
    });
  });

  it('records a run started from the run form, and shows each step’s exchanges without a credential', async () => {
    const page = await openSignedIn('/tools/orders');
    await page.getByLabel('Record responses').check();
    await page.getByLabel('In the background, and follow it on its run page').check();
    await page.getByRole('button', { name: 'Run tool' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/runs/'));
    const runId = decodeURIComponent(new URL(page.url()).pathname.slice('/runs/'.length));
    const run = await waitForRun<RunAnswer>(api, runId);
    expect(run).toMatchObject({ status: 'success', recording: { exchanges: 3, truncated: false } });
    recordedId = runId;

    const recording = page.locator('section', { has: page.getByRole('heading', { name: 'Recording' }) });
    await expect
      .poll(() => recording.textContent(), { timeout: 15_000 })
      .toContain('This run recorded 3 exchanges');
    expect(await recording.getByRole('note').count()).toBe(0);

    const who = page.locator('.step', { has: page.getByText('who', { exact: true }) });
    await who.getByText('Recorded exchanges of who').click();
    await who.getByText(`Exchange 1: http GET ${target.url}/whoami`).waitFor();
    const exchange = who.locator('.exchange');
    await exchange.getByText('Request', { exact: true }).click();
    await exchange.getByText('"<<redacted>>"').waitFor();
    await exchange.getByText('Response (200)').click();
    await exchange.getByText('"grace"').waitFor();

    const orders = page.locator('.step', { has: page.getByText('orders', { exact: true }) });
    await orders.getByText('Recorded exchanges of orders').click();
    await orders.getByText(`item 0: http GET ${target.url}/orders`).waitFor();
    expect(await orders.locator('.exchange-name').allTextContents()).toEqual([
      `item 0: http GET ${target.url}/orders`,
      `item 1: http GET ${target.url}/orders`,
    ]);
    const sum = page.locator('.step', { has: page.getByText('sum', { exact: true }) });
    await sum.getByText('Recorded exchanges of sum').click();
    await sum.getByText('This step had no exchange with a system.').waitFor();

    expect(await page.content()).not.toContain(TOKEN);
    await expectAccessible(page);
    await who.scrollIntoViewIfNeeded();
    await screenshot(page, 'run-recording');
  });

  it("shows a step's exchanges on a 390 px wide screen without sideways scrolling", async () => {
    const page = await openSignedIn(`/runs/${recordedId}`, { viewport: { width: 390, height: 844 } });
    const orders = page.locator('.step', { has: page.getByText('orders', { exact: true }) });
    await orders.getByText('Recorded exchanges of orders').click();
    const exchange = orders.locator('.exchange').first();
    await exchange.getByText('Request', { exact: true }).click();
    await exchange.getByText('Response (200)').click();
    await exchange.getByText('"orders"').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });

  it('does not record a run when the box is left unticked', async () => {
    const page = await openSignedIn('/tools/orders');
    await page.getByLabel('In the background, and follow it on its run page').check();
    await page.getByRole('button', { name: 'Run tool' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/runs/'));
    const runId = decodeURIComponent(new URL(page.url()).pathname.slice('/runs/'.length));
    const run = await waitForRun<RunAnswer>(api, runId);
    expect(run.recording).toBeUndefined();
    await page.getByRole('heading', { name: 'Steps' }).waitFor();
    await page.locator('.step').first().waitFor();
    expect(await page.getByRole('heading', { name: 'Recording' }).count()).toBe(0);
    expect(await page.getByText(/Recorded exchanges of/).count()).toBe(0);
  });

  it('says plainly when the size cap cut the recording', async () => {
    const run = await call<RunAnswer>('POST', '/v1/tools/big/run', { options: { record: true } });
    expect(run.recording).toMatchObject({ exchanges: 1, truncated: true });
    const page = await openSignedIn(`/runs/${run.runId}`);
    const recording = page.locator('section', { has: page.getByRole('heading', { name: 'Recording' }) });
    await expect
      .poll(() => recording.getByRole('note').textContent(), { timeout: 15_000 })
      .toContain('Not everything was recorded');
    const second = page.locator('.step', { has: page.getByText('second', { exact: true }) });
    await second.getByText('Recorded exchanges of second').click();
    await second
      .getByText("Exchanges of this step past the recording's size cap were not recorded.")
      .waitFor();
    await expectAccessible(page);
  });
});
