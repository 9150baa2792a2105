/**
 * Schedules and a tool's state in a real browser against a started embedded server: a schedule created in
 * the form with its next run times previewed (and a cron expression the server refuses, refused before
 * saving), shown with its next run, paused and resumed, listed per tool, deleted after a confirmation; a
 * tool's state after runs that wrote it, and its reset. Each page checked with axe-core and photographed.
 */
import { beforeAll, expect, it } from 'vitest';
import { KG_ERR_INPUTS_INVALID, KG_ERR_SCHEDULE_INVALID } from '../../../contract/api/errors.ts';
import type { ToolSchedule } from '../../../contract/api/schedule.ts';
// How the page writes an instant in a time zone (the browser's language is en-US: support/browser.ts).
import { formatInZone } from '../../../ui/components/format.ts';
import {
  expectAccessible,
  expectFitsAccessibly,
  expectRefusedRead,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';

const { api, call, describeDashboard } = useBrowserTests('schedules');

async function schedulesOf(toolId: string): Promise<ToolSchedule[]> {
  return (await call<{ data: ToolSchedule[] }>('GET', `/v1/tools/${toolId}/schedules`)).data;
}

describeDashboard('schedules and tool state in the dashboard', (dashboard) => {
  beforeAll(async () => {
    for (const id of ['report', 'other']) {
      await call('POST', '/v1/tools', {
        id,
        steps: [{ id: 'make', config: { type: 'transform', transformCode: `() => '${id}'` } }],
      });
    }
    await call('POST', '/v1/tools', {
      id: 'todo-sync',
      steps: [
        {
          id: 'keep',
          config: {
            type: 'transform',
            transformCode:
              '(s) => { const n = (s.persistedState.synced || 0) + 5; s.persistedState.synced = n; s.persistedState.cursor = "c" + (n + 1); return n; }',
          },
        },
      ],
    });
  });

  it('creates a schedule with its next run times previewed, pauses, resumes and deletes it', async () => {
    const page = await dashboard.openSignedIn('/schedules');
    await page.getByText('No schedules yet.').waitFor();
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Tool to run').fill('report');

    // A cron expression the server would refuse is refused while typing, with its code.
    expectRefusedRead(page, /^GET \/v1\/schedules\/next-runs\?cronExpression=61\+.* 400$/);
    await page.getByLabel('Cron expression').fill('61 * * * *');
    const refusal = page.getByRole('alert');
    await expect.poll(() => refusal.textContent()).toContain(KG_ERR_SCHEDULE_INVALID.code);

    await page.getByLabel('Cron expression').fill('30 7 * * MON-FRI');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    const preview = page.getByRole('list', { name: 'Next run times' });
    await expect.poll(() => preview.getByRole('listitem').count()).toBe(5);
    expect(await refusal.count()).toBe(0);
    const { nextRuns } = await call<{ nextRuns: string[] }>(
      'GET',
      '/v1/schedules/next-runs?cronExpression=30+7+*+*+MON-FRI&timezone=Europe/Berlin',
    );
    const previewed = await preview.getByRole('listitem').allTextContents();
    expect(previewed.map((text) => text.split(' (')[0])).toEqual(
      nextRuns.map((tick) => formatInZone(tick, 'Europe/Berlin', 'en-US')),
    );
    await page.getByLabel('Inputs of every run').fill('{"limit": 20}');
    await page.getByLabel('While a run still runs').selectOption('Forbid');
    await expectAccessible(page);
    await screenshot(page, 'schedule-new');
    await page.getByRole('button', { name: 'Create schedule' }).click();

    await page.getByRole('status').filter({ hasText: 'created for report' }).waitFor();
    const [schedule] = await schedulesOf('report');
    expect(schedule).toMatchObject({
      cronExpression: '30 7 * * MON-FRI',
      timezone: 'Europe/Berlin',
      payload: { limit: 20 },
      concurrencyPolicy: 'Forbid',
      enabled: true,
      nextRunAt: nextRuns[0],
    });
    const row = page.getByRole('row', { name: new RegExp(schedule?.id ?? '') });
    const cells = row.getByRole('cell');
    expect(await cells.nth(0).textContent()).toBe('▶active');
    expect(await cells.nth(2).textContent()).toContain(
      formatInZone(nextRuns[0] ?? '', 'Europe/Berlin', 'en-US'),
    );
    expect(await cells.nth(3).textContent()).toBe('none yet');

    // Pause and resume.
    await page.getByRole('button', { name: `Pause schedule ${schedule?.id}` }).click();
    await expect.poll(() => cells.nth(0).textContent()).toBe('⏸disabledSuspended');
    expect((await schedulesOf('report'))[0]?.enabled).toBe(false);
    await page.getByRole('button', { name: `Resume schedule ${schedule?.id}` }).click();
    await expect.poll(() => cells.nth(0).textContent()).toBe('▶active');
    expect((await schedulesOf('report'))[0]?.enabled).toBe(true);

    // Every tool's schedules, then one tool's.
    await call('POST', '/v1/tools/other/schedules', { id: 'other-hourly', cronExpression: '@hourly' });
    const rows = page.locator('.schedules-table tbody tr');
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2);
    await expectAccessible(page);
    await screenshot(page, 'schedules');
    await page.getByLabel('Tool', { exact: true }).fill('report');
    await page.getByLabel('Tool', { exact: true }).press('Enter');
    await page.getByRole('heading', { name: 'Schedules of report' }).waitFor();
    await expect.poll(() => rows.count()).toBe(1);
    expect(page.url()).toContain('toolId=report');
    await page.getByRole('button', { name: 'Every tool' }).click();
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByRole('link', { name: 'other', exact: true }).click();
    await page.getByRole('heading', { name: 'Schedules of other' }).waitFor();
    await expect.poll(() => rows.count()).toBe(1);

    // Delete, after a confirmation.
    await page.getByRole('button', { name: 'Delete schedule other-hourly' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete the schedule other-hourly?' });
    await dialog.getByRole('button', { name: 'Delete schedule' }).click();
    await page.getByText('other has no schedule.').waitFor();
    expect(await schedulesOf('other')).toEqual([]);
  });

  it("shows a tool's state after runs that wrote it, and resets it after a confirmation", async () => {
    await call('POST', '/v1/tools/todo-sync/run', {});
    await call('POST', '/v1/tools/todo-sync/run', {});
    const page = await dashboard.openSignedIn('/tools/todo-sync/state');
    await page.getByRole('heading', { name: 'State of todo-sync' }).waitFor();
    const facts = page.getByLabel('The state', { exact: true });
    await expect.poll(() => facts.textContent()).toMatch(/^Version2 \(writes so far\)Updated.*Keys2 /);
    const tree = page.locator('.json-tree');
    await expect.poll(() => tree.textContent()).toContain('"synced": 10');
    expect(await tree.textContent()).toContain('"cursor": "c11"');
    await expectAccessible(page);
    await screenshot(page, 'tool-state');
    await page.getByLabel('Search state').fill('c11');
    await page.getByRole('button', { name: '$.cursor' }).waitFor();

    await page.getByRole('button', { name: 'Reset state' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reset the state of todo-sync?' });
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Reset state' }).click();
    await page.getByText('Reset: 2 keys deleted').waitFor();
    await expect.poll(() => facts.textContent()).toMatch(/^Version3 .*Keys0 /);
    await page.getByText('Empty:').waitFor();
    expect(await call('GET', '/v1/tools/todo-sync/state')).toMatchObject({ state: {}, version: 3 });
    // The next run starts from nothing again.
    const next = await call<{ data: number }>('POST', '/v1/tools/todo-sync/run', {});
    expect(next.data).toBe(5);
  });

  it('shows why a schedule starts no run, and refuses in the form one that would fail at every tick', async () => {
    const key = await call<{ id: string; key: string }>('POST', '/v1/api-keys', {
      name: 'leaving',
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
      toolIds: ['other'],
    });
    await call('POST', '/v1/tools/other/schedules', { id: 'by-leaver', cronExpression: '@daily' }, key.key);
    await call('DELETE', `/v1/api-keys/${key.id}`);
    await call('POST', '/v1/tools', {
      id: 'needs-n',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => s.n' } }],
    });

    const page = await dashboard.openSignedIn('/schedules?toolId=other');
    const status = page
      .getByRole('row', { name: /by-leaver/ })
      .getByRole('cell')
      .nth(0);
    await expect.poll(() => status.textContent()).toContain('paused');
    expect(await status.textContent()).toContain('KeyRevoked');
    expect(await status.textContent()).toContain(`the API key '${key.id}' the schedule runs as was revoked`);
    await expectAccessible(page);
    await screenshot(page, 'schedule-key-revoked');

    // A tool whose inputs are required: no inputs given is refused, not saved to fail at each tick.
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Tool to run').fill('needs-n');
    await page.getByLabel('Cron expression').fill('@daily');
    await page.getByRole('list', { name: 'Next run times' }).waitFor();
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(KG_ERR_INPUTS_INVALID.code);
    expect(await schedulesOf('needs-n')).toEqual([]);
  });

  it('works at 200 % zoom, in the dark theme', async () => {
    await call('POST', '/v1/tools/report/schedules', { id: 'report-daily', cronExpression: '@daily' });
    const page = await dashboard.openSignedIn('/schedules', { viewport: ZOOMED_200, colorScheme: 'dark' });
    await page.getByRole('row', { name: /report-daily/ }).waitFor();
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Cron expression').fill('@weekly');
    await page.getByRole('list', { name: 'Next run times' }).waitFor();
    await expectFitsAccessibly(page);
    await page.goto(`${api.url}/tools/todo-sync/state`);
    await page.getByRole('heading', { name: 'State of todo-sync' }).waitFor();
    await expectFitsAccessibly(page);
  });
});
