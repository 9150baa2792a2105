/**
 * The dashboard's JSON editor takes GraphQL tools as any other (the forms for them come later): created
 * from JSON against a started server and a real GraphQL server, a query that does not parse shown at its
 * line, the saved definition edited and saved again unchanged, and a run's partial GraphQL error shown as
 * a note of its step. In Debian's Chromium through playwright-core.
 */
import { beforeAll, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { expectAccessible, useBrowserTests } from '../../support/browser.ts';
import { useStarted } from '../../support/fixture.ts';
import { GRAPHQL_TOKEN, startGraphqlServer } from '../../support/graphql-server.ts';

const { api, call, describeDashboard } = useBrowserTests('GraphQL tools');
const server = useStarted(
  () => startGraphqlServer(),
  (started) => started.stop(),
);

describeDashboard('GraphQL tools in the JSON editor', ({ openSignedIn }) => {
  beforeAll(async () => {
    await call('POST', '/v1/systems', {
      id: 'tracker',
      url: server.url,
      authType: 'bearer',
      credentials: { bearerToken: GRAPHQL_TOKEN },
    });
  });

  it('creates one, showing a query that does not parse at its line, and saves it again unchanged', async () => {
    const page = await openSignedIn('/new/tool');
    await page.getByRole('heading', { name: 'New tool' }).waitFor();
    const definition = {
      id: 'assignees',
      steps: [
        {
          id: 'tasks',
          config: {
            systemId: 'tracker',
            url: '/graphql',
            method: 'POST',
            graphql: { query: '{ tasks(first: 3) { nodes { title assignee { name } } }' },
          },
        },
      ],
    };
    const text = JSON.stringify(definition, null, 2);
    await page.getByRole('radio', { name: 'JSON' }).check();
    const editor = page.getByRole('textbox', { name: 'Tool definition (JSON)' });
    await editor.fill(text);
    await page.getByRole('button', { name: 'Create tool' }).click();
    const problems = page.getByRole('list', { name: 'Problems in Tool definition (JSON)' });
    const line = text.split('\n').findIndex((row) => row.includes('"query"')) + 1;
    await expect
      .poll(() => problems.textContent())
      .toMatch(
        new RegExp(
          `^Line ${line}, column \\d+: \\$\\.steps\\[0\\]\\.config\\.graphql\\.query: the query does not parse`,
        ),
      );
    await expectAccessible(page);

    await editor.fill(text.replace('} } }', '} } } }'));
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.waitForURL(`${api.url}/tools/assignees`);

    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await page.getByRole('radio', { name: 'JSON' }).check();
    await expect.poll(() => editor.inputValue()).toContain('"graphql"');
    await page.getByRole('button', { name: 'Save tool' }).click();
    await page.waitForURL(`${api.url}/tools/assignees`);

    const run = await call<Run>('POST', '/v1/tools/assignees/run', { runId: 'assignees-1' });
    expect(run.status, run.error).toBe('success');
    const runPage = await openSignedIn('/runs/assignees-1');
    await expect
      .poll(() => runPage.locator('body').textContent())
      .toContain('GraphQL error beside data: User 99 not found (at tasks.nodes.2.assignee');
  });
});
