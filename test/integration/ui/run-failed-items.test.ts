/**
 * Issue 29, item 12: a loop step that goes on past failed items (failureBehavior continue) succeeds, and the
 * run's page says how many items failed, with each failed item's error one click away; followed live, its
 * event says so as it happens. A real browser against a started embedded server and a real HTTP target.
 */
import { beforeAll, expect, it } from 'vitest';
import { expectAccessible, screenshot, useBrowserTests } from '../../support/browser.ts';
import { waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { api, call, describeDashboard } = useBrowserTests('failed loop items');

/** A tool looping over `ids` at /parcels/<id>, going on past the items that fail. */
const parcelsTool = (id: string, ids: number[]) => ({
  id,
  steps: [
    {
      id: 'parcels',
      dataSelector: `() => ${JSON.stringify(ids)}`,
      failureBehavior: 'continue',
      config: { systemId: 'target', url: '/parcels/<<currentItem>>' },
    },
  ],
});

const notFound = (id: number) =>
  `HTTP 404 GET ${target.url}/parcels/${id}: {"error":"parcel ${id} not found"}`;

describeDashboard('failed loop items on the run page', ({ openSignedIn }) => {
  let runId = '';

  beforeAll(async () => {
    for (const id of [1, 3, 5]) target.route('GET', `/parcels/${id}`, { body: { id, state: 'delivered' } });
    for (const id of [2, 4]) {
      target.route('GET', `/parcels/${id}`, { status: 404, body: { error: `parcel ${id} not found` } });
    }
    await call('POST', '/v1/systems', { id: 'target', url: target.url });
    await call('POST', '/v1/tools', parcelsTool('track-parcels', [1, 2, 3, 4, 5]));
    runId = (await call<{ runId: string; status: string }>('POST', '/v1/tools/track-parcels/run', {})).runId;
  });

  it("shows how many items failed beside the step's success, and each failed item's error one click away", async () => {
    const page = await openSignedIn(`/runs/${runId}`);
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    const step = page.locator('.step', { has: page.getByText('parcels', { exact: true }) });
    await expect.poll(() => step.locator('.step-head').textContent()).toContain('2 of 5 items failed');
    expect(await step.locator('.step-head').textContent()).toContain('success');
    expect(await page.getByRole('link', { name: 'Go to the step with failed items (parcels)' }).count()).toBe(
      1,
    );

    const errors = step.locator('.failed-item-list');
    expect(await errors.isVisible()).toBe(false);
    await step.getByText('Failed items of parcels (2)').click();
    await expect.poll(() => errors.isVisible()).toBe(true);
    expect(await errors.locator('li').allTextContents()).toEqual([
      `Item 1${notFound(2)}`,
      `Item 3${notFound(4)}`,
    ]);
    await expectAccessible(page);
    // The documentation's picture is the viewport: the step with its failed items.
    await step.scrollIntoViewIfNeeded();
    await screenshot(page, 'run-failed-items');
  });

  it('says so in the live events of a run followed as it goes', async () => {
    const held = target.hold('/parcels/9');
    await call('POST', '/v1/tools', parcelsTool('slow-parcels', [2, 9]));
    const started = await call<{ runId: string }>('POST', '/v1/tools/slow-parcels/run', {
      options: { async: true },
    });
    const page = await openSignedIn(`/runs/${started.runId}`);
    const log = page.getByRole('log');
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toContain("Step 'parcels' started");
    await expect.poll(() => held.length, { timeout: 15_000 }).toBe(1);
    held[0]?.writeHead(200, { 'content-type': 'application/json' }).end('{"id":9}');
    await expect
      .poll(() => log.textContent(), { timeout: 15_000 })
      .toMatch(/WARN Step 'parcels' succeeded in \d+ ms; 1 of 2 items failed/);
    expect((await waitForRun<{ status: string }>(api, started.runId)).status).toBe('success');
    const step = page.locator('.step', { has: page.getByText('parcels', { exact: true }) });
    await expect
      .poll(() => step.locator('.step-head').textContent(), { timeout: 15_000 })
      .toContain('1 of 2 items failed');
    await expectAccessible(page);
  });
});
