/**
 * The dashboard's Overview in a real browser (Debian's Chromium, test/support/browser.ts) against a started
 * embedded server: runs seeded with known statuses and durations show as the exact figures of the charts'
 * tables (counts per minute, failure rates, p50/p95 per tool); an async run held behind
 * KUBEGLUE_MAX_ASYNC_RUNS=1 is in the queue with its place; the figures update while the page is open; a
 * tool leads to its runs; the hour/day choice; the page's code loads only with it; axe, the
 * Content-Security-Policy and screenshots, light and dark.
 */
import type { ServerResponse } from 'node:http';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { RunStats } from '../../../contract/api/run-stats.ts';
import type { StoredRun, TerminalRunStatus } from '../../../store/index.ts';
import {
  expectAccessible,
  horizontalOverflow,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { endedRun } from '../../support/store.ts';

const target = useHttpTarget();
const { api, describeDashboard } = useBrowserTests('overview', { env: { KUBEGLUE_MAX_ASYNC_RUNS: '1' } });

/** The start of the minute half an hour ago: the seeded runs are in the last hour and the last day. */
const BASE = Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000;

/** A run of `toolId` that started `seconds` after BASE and ended `status` after durationMs. */
const seeded = (
  runId: string,
  toolId: string,
  status: TerminalRunStatus,
  seconds: number,
  durationMs: number,
) => endedRun(runId, toolId, status, new Date(BASE + seconds * 1000).toISOString(), durationMs);

// Four minutes: 2 success | 3 success | 1 success, 1 failed | 2 failed, 1 aborted.
const RUNS: StoredRun[] = [
  seeded('alpha-1', 'alpha', 'success', 0, 100),
  seeded('alpha-2', 'alpha', 'success', 30, 200),
  seeded('alpha-3', 'alpha', 'success', 70, 300),
  seeded('beta-1', 'beta', 'success', 80, 10),
  seeded('beta-2', 'beta', 'success', 90, 20),
  seeded('alpha-4', 'alpha', 'success', 120, 400),
  seeded('alpha-5', 'alpha', 'failed', 150, 1000),
  seeded('beta-3', 'beta', 'failed', 180, 30),
  seeded('beta-4', 'beta', 'failed', 190, 50),
  seeded('gamma-1', 'gamma', 'aborted', 200, 5),
];

let held: ServerResponse[] = [];
let queuedRunId = '';

/** The text of each cell of the table's body rows. */
async function rowsOf(page: Page, table: string): Promise<string[][]> {
  const rows = page.locator(`${table} tbody tr`);
  const texts: string[][] = [];
  for (let i = 0; i < (await rows.count()); i++) {
    texts.push((await rows.nth(i).locator('th, td').allTextContents()).map((text) => text.trim()));
  }
  return texts;
}

/** The value shown under a figure's name ("Runs", "Failure rate"). */
function figure(page: Page, name: string) {
  return page
    .locator('.figures div')
    .filter({ has: page.getByText(name, { exact: true }) })
    .locator('dd');
}

describeDashboard('the Overview in a browser', ({ openSignedIn: open }) => {
  beforeAll(async () => {
    held = target.hold('/hold');
    await api.embedded.store.insertRuns(RUNS);
    await api.call('POST', '/v1/tools', {
      body: { id: 'hold', steps: [{ id: 'wait', config: { url: `${target.url}/hold` } }] },
    });
    await api.call('POST', '/v1/tools', {
      body: { id: 'quick', steps: [{ id: 'two', config: { type: 'transform', transformCode: '() => 2' } }] },
    });
    // One async run executes (held by the target); the next waits for the only slot.
    await api.call('POST', '/v1/tools/hold/run', { body: { options: { async: true } } });
    await vi.waitFor(() => expect(held).toHaveLength(1), { timeout: 15_000 });
    const queued = await api.call<{ runId: string }>('POST', '/v1/tools/hold/run', {
      body: { runId: 'queued-run', options: { async: true } },
    });
    queuedRunId = queued.body.runId;
    await vi.waitFor(
      async () => {
        const { queue } = (await api.call<RunStats>('GET', '/v1/stats/runs')).body;
        expect(queue.runs.find((run) => run.runId === queuedRunId)?.admission).toContain('position 1');
      },
      { timeout: 15_000, interval: 100 },
    );
  }, 60_000);

  afterAll(() => {
    for (const response of held) response.destroy();
  });

  it('shows the runs per minute by status, the failure rate and each tool’s p50/p95, as the seeded runs make them', async () => {
    const page = await open('/overview');
    await page.getByRole('heading', { name: 'Runs per minute by status' }).waitFor();
    // Ten seeded runs and the two async runs of `hold` (one executing, one waiting).
    expect(await figure(page, 'Runs').textContent()).toBe('12');
    expect(await figure(page, 'Failed').textContent()).toBe('3');
    expect(await figure(page, 'Failure rate').textContent()).toBe('33.3 %');
    expect(await figure(page, 'Running').textContent()).toBe('2');
    expect(await figure(page, 'Waiting to start').textContent()).toBe('1');

    await screenshot(page, 'overview');

    // The chart's text alternative: its summary, and the table of every minute.
    const chart = page.getByRole('img', { name: /Runs per minute by status/ });
    expect(await chart.getAttribute('aria-label')).toContain(
      '12 runs (6 success, 3 failed, 1 aborted, 2 running)',
    );
    await page.getByText('The runs per minute as a table').click();
    const minutes = await rowsOf(page, '.bucket-table');
    expect(minutes).toHaveLength(60);
    // Columns: starting, success, failed, aborted, running, all.
    const busy = minutes.filter((row) => row[5] !== '0').map((row) => row.slice(1));
    expect(busy.slice(0, 4)).toEqual([
      ['2', '0', '0', '0', '2'],
      ['3', '0', '0', '0', '3'],
      ['1', '1', '0', '0', '2'],
      ['0', '2', '1', '0', '3'],
    ]);
    // The two runs of `hold`, in the minute (or two) they started in.
    expect(busy.slice(4).reduce((sum, row) => sum + Number(row[3]), 0)).toBe(2);
    // Every status is named in the legend, beside its pattern: colour is not the only signal.
    expect(await page.locator('.chart-legend').first().textContent()).toBe('✓success✕failed⊘aborted◷running');

    // Per tool: runs, failed, failure rate, p50, p95 (of the runs that ended by themselves).
    expect(await rowsOf(page, '.tool-stats')).toEqual([
      ['alpha', '5', '1', '20.0 %', '300 ms', '880 ms'],
      ['beta', '4', '2', '50.0 %', '25 ms', '47 ms'],
      ['hold', '2', '0', '—', '—', '—'],
      ['gamma', '1', '0', '—', '—', '—'],
    ]);
    expect(await page.locator('.duration-values').allTextContents()).toEqual([
      'p50 300 ms · p95 880 ms',
      'p50 25 ms · p95 47 ms',
    ]);

    // The queue: the run waiting for the only slot, and why.
    const queue = await rowsOf(page, '.queue-table');
    expect(queue).toHaveLength(1);
    expect(queue[0]?.[0]).toBe(queuedRunId);
    expect(queue[0]?.[5]).toBe(
      'Waiting for an execution slot: position 1 in the queue; 1 of 1 runs executing (limit KUBEGLUE_MAX_ASYNC_RUNS)',
    );
    await expectAccessible(page);
  });

  it('reads the figures again while it is open', async () => {
    const page = await open('/overview');
    await expect.poll(() => figure(page, 'Runs').textContent()).toBe('12');
    expect((await api.call('POST', '/v1/tools/quick/run', { body: {} })).status).toBe(200);
    // Polled every 10 s while the tab is visible.
    await expect.poll(() => figure(page, 'Runs').textContent(), { timeout: 20_000 }).toBe('13');
    expect(await page.locator('.tool-stats').getByRole('link', { name: 'quick' }).count()).toBe(1);
  });

  it('leads from a tool to its runs of the window', async () => {
    const page = await open('/overview');
    await page.locator('.tool-stats').getByRole('link', { name: 'beta' }).click();
    await page.getByRole('heading', { name: 'Runs', exact: true }).waitFor();
    const url = new URL(page.url());
    expect(url.pathname).toBe('/runs');
    expect(url.searchParams.get('toolId')).toBe('beta');
    expect(Date.parse(url.searchParams.get('startedAfter') ?? '')).toBeLessThanOrEqual(BASE);
    await expect.poll(() => page.locator('.runs-table tbody tr').count()).toBe(4);
  });

  it('shows the last day in quarter hours, in the dark theme too', async () => {
    const page = await open('/overview', { colorScheme: 'dark' });
    // Every run of the store is in the last hour: the day shows the same figures.
    await page.getByRole('heading', { name: 'Runs per minute by status' }).waitFor();
    const hour = await figure(page, 'Runs').textContent();
    await page.getByRole('radio', { name: 'Last day' }).check();
    await page.getByRole('heading', { name: 'Runs per 15 minutes by status' }).waitFor();
    expect(new URL(page.url()).searchParams.get('window')).toBe('day');
    expect(await figure(page, 'Runs').textContent()).toBe(hour);
    await screenshot(page, 'overview-day-dark');
    await page.getByText('The runs per 15 minutes as a table').click();
    expect(await rowsOf(page, '.bucket-table')).toHaveLength(96);
    await expectAccessible(page);
    await page.getByRole('radio', { name: 'Last hour' }).check();
    await page.getByRole('heading', { name: 'Runs per minute by status' }).waitFor();
  });

  it('loads its code only when it is shown, and reflows at 200 % zoom', async () => {
    const page = await open('/runs', { viewport: ZOOMED_200 });
    await page.locator('.runs-table').waitFor();
    // What the page has fetched so far (the browser's resource timing), as served paths.
    const scripts = () =>
      page.evaluate<string[]>(
        "performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname).filter((p) => p.endsWith('.js'))",
      );
    const firstLoad = await scripts();
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Runs per minute by status' }).waitFor();
    const later = (await scripts()).filter((script) => !firstLoad.includes(script));
    expect(later).toHaveLength(1);
    expect(later[0]).toMatch(/^\/assets\/chunk-[A-Z0-9]+\.js$/);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
  });
});
