/**
 * Issue 32: the runs list and a run's page on a phone's screen (390 × 844 CSS pixels): nothing wider than
 * the screen, the list's filters folded behind a button, and a run with long step data not absurdly tall
 * (its step data collapsed behind a toggle).
 * A real browser against a started embedded server and a real HTTP target.
 */
import { beforeAll, expect, it } from 'vitest';
import { expectAccessible, screenshot, useBrowserTests } from '../../support/browser.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { call, describeDashboard } = useBrowserTests('narrow run pages');

const PHONE = { width: 390, height: 844 };

const scrollWidth = (page: { evaluate<T>(script: string): Promise<T> }) =>
  page.evaluate<number>('document.documentElement.scrollWidth');
const scrollHeight = (page: { evaluate<T>(script: string): Promise<T> }) =>
  page.evaluate<number>('document.documentElement.scrollHeight');

/** Items as an API lists them: long enough that each step's data fills screens. */
const items = Array.from({ length: 40 }, (_, i) => ({
  id: i,
  name: `parcel number ${i} on its way to a long address in a far away town`,
  tags: ['fragile', 'express'],
}));

describeDashboard('the run pages at 390 px wide', ({ openSignedIn }) => {
  let runId = '';
  let failedId = '';

  beforeAll(async () => {
    target.route('GET', '/parcels', { body: items });
    await call('POST', '/v1/systems', { id: 'target', url: target.url });
    await call('POST', '/v1/tools', {
      id: 'a-tool-with-a-rather-long-identifier-for-parcels',
      steps: ['fetch', 'again', 'third', 'fourth', 'fifth', 'sixth'].map((id) => ({
        id,
        config: { systemId: 'target', url: '/parcels' },
      })),
      // Two levels open (40 long strings fit 100 rows), each string wrapped over lines on a phone.
      outputTransform:
        "(s) => ({ labels: s.fetch.data.map((p) => (p.name + ', ').repeat(4)), count: s.sixth.data.length })",
    });
    const run = await call<{ runId: string }>(
      'POST',
      '/v1/tools/a-tool-with-a-rather-long-identifier-for-parcels/run',
      { inputs: { note: 'a long note that is written without any break at all in it_'.repeat(3) } },
    );
    runId = run.runId;
    target.route('GET', '/broken', {
      status: 500,
      body: { error: 'the warehouse database refused the connection_'.repeat(4) },
    });
    await call('POST', '/v1/tools', {
      id: 'broken-parcels',
      steps: [
        { id: 'fetch', config: { systemId: 'target', url: '/parcels' } },
        { id: 'broken', config: { systemId: 'target', url: '/broken' } },
      ],
    });
    failedId = (await call<{ runId: string }>('POST', '/v1/tools/broken-parcels/run', {})).runId;
  });

  it('shows the runs list without sideways scrolling, status, tool and time readable', async () => {
    const page = await openSignedIn('/runs', { viewport: PHONE });
    const run = page.locator('.runs-table tbody tr', {
      hasText: 'a-tool-with-a-rather-long-identifier-for-parcels',
    });
    await run.waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    // Each run's status, tool and start time are on the screen, not scrolled away.
    for (const cell of ['.status', 'td:nth-child(3)', 'td:nth-child(5)']) {
      const box = await run.locator(cell).boundingBox();
      expect(box, cell).not.toBeNull();
      expect((box?.x ?? 0) + (box?.width ?? 0), cell).toBeLessThanOrEqual(PHONE.width);
    }
    await expectAccessible(page);
    await screenshot(page, 'runs-narrow');
  });

  it('folds the runs list’s filters behind a button that says how many apply, the first run on the first screen', async () => {
    const page = await openSignedIn('/runs', { viewport: PHONE });
    const first = page.locator('.runs-table tbody tr').first();
    await first.waitFor();
    const toggle = page.getByRole('button', { name: 'Filters', exact: true });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    const status = page.getByRole('combobox', { name: 'Status' });
    expect(await status.isVisible()).toBe(false);
    // The six filter fields no longer push the runs down: the first run starts on the first screen.
    const box = await first.boundingBox();
    expect((box?.y ?? PHONE.height) + (box?.height ?? 0)).toBeLessThanOrEqual(PHONE.height);

    await toggle.click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await status.selectOption('failed');
    await page.waitForURL((url) => url.searchParams.get('status') === 'failed');
    await page.locator('.runs-table tbody tr', { hasText: 'broken-parcels' }).waitFor();
    await expect.poll(() => page.locator('.runs-table tbody tr').count()).toBe(1);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await expectAccessible(page);

    // Opened again later, the filters stay folded and the button says one applies.
    const again = await openSignedIn('/runs?status=failed', { viewport: PHONE });
    await again.getByRole('button', { name: 'Filters (1 applied)' }).waitFor();
    expect(await again.getByRole('combobox', { name: 'Status' }).isVisible()).toBe(false);
  });

  it("shows a run's page without sideways scrolling, its step data collapsed behind a toggle", async () => {
    const page = await openSignedIn(`/runs/${runId}`, { viewport: PHONE });
    await page.getByRole('heading', { name: 'Steps' }).waitFor();
    await page.locator('.step').first().waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    // Was 7 466 px: the output's 40 long strings open two levels deep, each wrapped over lines.
    expect(await scrollHeight(page)).toBeLessThan(3_000);
    const output = page.locator('section', { has: page.getByRole('heading', { name: 'Output' }) });
    expect(await output.getByText('"count"').isVisible()).toBe(false);
    await expectAccessible(page);
    // The documentation's picture is the viewport: the output collapsed, the steps below it.
    await output.scrollIntoViewIfNeeded();
    await screenshot(page, 'run-narrow');
    await output.getByText('Show the output').click();
    await output.getByText('"count"').waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
  });

  it("shows a failed run's page, its error and its actions, without sideways scrolling", async () => {
    const page = await openSignedIn(`/runs/${failedId}`, { viewport: PHONE });
    await page.getByRole('button', { name: 'Resume from step broken, reusing up to 1 step' }).waitFor();
    await page.getByRole('note', { name: 'Error of step broken' }).waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await expectAccessible(page);
  });

  it('keeps the desktop look: the same output open at once on a wide screen', async () => {
    const page = await openSignedIn(`/runs/${runId}`);
    const output = page.locator('section', { has: page.getByRole('heading', { name: 'Output' }) });
    await output.getByText('"count"').waitFor();
    expect(await output.getByText('Show the output').count()).toBe(0);
    // The runs list shows its filters at once, with no button to fold them.
    const list = await openSignedIn('/runs');
    await list.getByRole('combobox', { name: 'Status' }).waitFor();
    expect(await list.getByRole('button', { name: /^Filters/ }).count()).toBe(0);
  });
});
