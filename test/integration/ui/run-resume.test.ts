/**
 * Issue 32, the dashboard's run pages: a failed run resumed from its page (the new run reuses the
 * unchanged step before the failed one and names its origin), and the refusal of a run that cannot be
 * resumed shown as every API error is. A real browser against a started embedded server and a real HTTP
 * target.
 */
import { beforeAll, expect, it } from 'vitest';
import { ERROR_CATALOG, KG_ERR_RESUME_TOOL_GONE } from '../../../contract/api/errors.ts';
import { expectAccessible, screenshot, useBrowserTests } from '../../support/browser.ts';
import { waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { api, call, describeDashboard } = useBrowserTests('run resume');

interface RunAnswer {
  runId: string;
  status: string;
  requestSource?: string;
  resumedFrom?: string;
  data?: unknown;
  stepResults?: { stepId: string; success: boolean; reusedFrom?: string }[];
}

/** A user, then their todos: at `todosPath` (a typo, /todo, fails with 404). */
const todosTool = (id: string, todosPath: string) => ({
  id,
  steps: [
    { id: 'user', config: { systemId: 'target', url: '/users/2' } },
    { id: 'todos', config: { systemId: 'target', url: todosPath } },
  ],
  outputTransform: '(s) => ({ name: s.user.data.name, open: s.todos.data.length })',
});

describeDashboard('resuming a run from its page', ({ openSignedIn }) => {
  beforeAll(async () => {
    target.route('GET', '/users/2', { body: { id: 2, name: 'Grace' } });
    target.route('GET', '/todos', { body: [{ title: 'write the report' }, { title: 'fix the bike' }] });
    await call('POST', '/v1/systems', { id: 'target', url: target.url });
  });

  it('resumes a failed run from the failed step, reusing the step before it without calling its system again', async () => {
    await call('POST', '/v1/tools', todosTool('open-todos', '/todo'));
    const failed = await call<RunAnswer>('POST', '/v1/tools/open-todos/run', {});
    expect(failed.status).toBe('failed');
    // The tool is fixed through the API; the run's page resumes it.
    await call('PUT', '/v1/tools/open-todos', todosTool('open-todos', '/todos'));
    const usersCalled = target.count('/users/2');

    const page = await openSignedIn(`/runs/${failed.runId}`);
    const resume = page.getByRole('button', { name: 'Resume from step todos, reusing up to 1 step' });
    await resume.waitFor();
    // "Run again" stays beside it.
    expect(await page.getByRole('button', { name: 'Run again with these inputs' }).count()).toBe(1);
    await expectAccessible(page);
    await resume.click();
    await page.waitForURL((url) => url.pathname.startsWith('/runs/') && !url.pathname.endsWith(failed.runId));
    const resumedId = decodeURIComponent(new URL(page.url()).pathname.slice('/runs/'.length));
    const resumed = await waitForRun<RunAnswer>(api, resumedId);
    expect(resumed).toMatchObject({
      status: 'success',
      resumedFrom: failed.runId,
      requestSource: 'frontend',
    });
    expect(target.count('/users/2')).toBe(usersCalled);

    await page.getByRole('heading', { name: `Run ${resumedId}` }).waitFor();
    const origin = page.locator('.facts').getByRole('link', { name: failed.runId });
    await expect.poll(() => origin.count(), { timeout: 15_000 }).toBe(1);
    const user = page.locator('.step', { has: page.getByText('user', { exact: true }) });
    await expect
      .poll(() => user.locator('.step-reused').textContent(), { timeout: 15_000 })
      .toBe(`Reused from run ${failed.runId}, not executed again.`);
    const todos = page.locator('.step', { has: page.getByText('todos', { exact: true }) });
    expect(await todos.locator('.step-reused').count()).toBe(0);
    // A successful run offers no resume.
    expect(await page.getByRole('button', { name: /^Resume/ }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'run-resumed');

    await origin.click();
    await page.getByRole('heading', { name: `Run ${failed.runId}` }).waitFor();
  });

  it("shows the API's refusal of a resume as the page shows every API error", async () => {
    await call('POST', '/v1/tools', todosTool('gone-todos', '/todo'));
    const failed = await call<RunAnswer>('POST', '/v1/tools/gone-todos/run', {});
    await call('DELETE', '/v1/tools/gone-todos');
    const page = await openSignedIn(`/runs/${failed.runId}`);
    await page.getByRole('button', { name: 'Resume from step todos, reusing up to 1 step' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain(KG_ERR_RESUME_TOOL_GONE.code);
    const fix = ERROR_CATALOG.find((entry) => entry.code === KG_ERR_RESUME_TOOL_GONE.code)?.fix ?? '';
    expect(await alert.textContent()).toContain(fix);
    expect(new URL(page.url()).pathname).toBe(`/runs/${failed.runId}`);
    await expectAccessible(page);
  });
});
