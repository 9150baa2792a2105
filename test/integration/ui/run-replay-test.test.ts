/**
 * Issue 32, a recorded run's page: replayed with the current definition and with an edited transform (the
 * difference shown beside the original, no system called), and saved as a test of its tool in one click;
 * the tool's page then runs its tests, a passing one and one failing with its difference, and says the
 * tool's test bound plainly. A real browser against a started embedded server and a real HTTP target.
 */
import { beforeAll, expect, it } from 'vitest';
import { MAX_TOOL_TESTS } from '../../../contract/api/tool-test.ts';
import { expectAccessible, horizontalOverflow, screenshot, useBrowserTests } from '../../support/browser.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { call, describeDashboard } = useBrowserTests('run replay and tests');

const TOKEN = 'replay-ui-bearer-SECRET-19c';

interface RunAnswer {
  runId: string;
  status: string;
}

/** Names of the items, through a transform step the tests edit. */
const pricesTool = (transformCode: string) => ({
  id: 'prices',
  steps: [
    { id: 'list', config: { systemId: 'shop', url: '/items' } },
    { id: 'names', config: { type: 'transform', transformCode } },
  ],
  outputTransform: '(s) => s.names.data',
});
const NAMES = '(sourceData) => sourceData.list.data.map((item) => item.name)';
const UPPER = '(sourceData) => sourceData.list.data.map((item) => item.name.toUpperCase())';

describeDashboard('replaying a recorded run and saving it as a test', ({ openSignedIn }) => {
  let recorded = '';

  beforeAll(async () => {
    target.route('GET', '/items', { body: [{ name: 'pen' }, { name: 'ink' }] });
    await call('POST', '/v1/systems', {
      id: 'shop',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: TOKEN },
    });
    await call('POST', '/v1/tools', pricesTool(NAMES));
    const run = await call<RunAnswer>('POST', '/v1/tools/prices/run', { options: { record: true } });
    expect(run.status).toBe('success');
    recorded = run.runId;
  });

  it('replays the run with the current definition, then with an edited transform, showing the difference and calling no system', async () => {
    const calls = target.count('/items');
    const page = await openSignedIn(`/runs/${recorded}`);
    await page.getByRole('button', { name: 'Replay with the current definition' }).click();
    const replay = page.locator('section', {
      has: page.getByRole('heading', { name: 'Replay', exact: true }),
    });
    await replay.getByText('The replay succeeded; it is the same as the original run.').waitFor();

    await replay.getByText('Replay with an edited definition').click();
    const editor = replay.getByRole('textbox', { name: 'Definition to replay (not saved)' });
    await expect.poll(() => editor.inputValue(), { timeout: 15_000 }).toContain('sourceData.list.data');
    const definition = JSON.parse(await editor.inputValue()) as ReturnType<typeof pricesTool>;
    expect(definition.steps[1]?.config).toEqual({ type: 'transform', transformCode: NAMES });
    definition.steps[1] = { id: 'names', config: { type: 'transform', transformCode: UPPER } };
    await editor.fill(JSON.stringify(definition, null, 2));
    await replay.getByRole('button', { name: 'Replay with this definition' }).click();
    await replay.getByText('The replay succeeded; it differs from the original run.').waitFor();
    await replay.getByRole('heading', { name: 'Replay of the edited definition' }).waitFor();
    const output = replay.getByRole('list', { name: 'Differences of the output' });
    expect(await output.getByRole('listitem').allTextContents()).toEqual([
      '/0 original "pen", replay "PEN"',
      '/1 original "ink", replay "INK"',
    ]);
    const step = replay.getByRole('list', { name: 'Differences of step names' });
    expect(await step.getByRole('listitem').count()).toBe(2);
    // Both outputs side by side.
    await replay.getByRole('region', { name: 'Replay output' }).getByText('"PEN"').waitFor();
    await replay.getByRole('region', { name: 'Original output' }).getByText('"pen"').waitFor();
    // The recording answered: the target was not called, and the saved tool is as it was.
    expect(target.count('/items')).toBe(calls);
    const tool = await call<{ steps: { config: { transformCode?: string } }[] }>('GET', '/v1/tools/prices');
    expect(tool.steps[1]?.config.transformCode).toBe(NAMES);
    expect(await page.content()).not.toContain(TOKEN);
    await expectAccessible(page);
    await replay
      .getByRole('heading', { name: 'Replay of the edited definition' })
      .evaluate((heading) => heading.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'run-replay');
  });

  it('places a problem of the edited definition at its line', async () => {
    const page = await openSignedIn(`/runs/${recorded}`);
    const replay = page.locator('section', {
      has: page.getByRole('heading', { name: 'Replay', exact: true }),
    });
    await replay.getByText('Replay with an edited definition').click();
    const editor = replay.getByRole('textbox', { name: 'Definition to replay (not saved)' });
    await expect.poll(() => editor.inputValue(), { timeout: 15_000 }).toContain('transformCode');
    await editor.fill((await editor.inputValue()).replace(NAMES, '(sourceData) => ('));
    await replay.getByRole('button', { name: 'Replay with this definition' }).click();
    await page.getByRole('alert').waitFor();
    await expect.poll(() => editor.getAttribute('aria-invalid')).toBe('true');
  });

  it('shows the replay on a 390 px wide screen without sideways scrolling', async () => {
    const page = await openSignedIn(`/runs/${recorded}`, { viewport: { width: 390, height: 844 } });
    const replay = page.locator('section', {
      has: page.getByRole('heading', { name: 'Replay', exact: true }),
    });
    await replay.getByText('Replay with an edited definition').click();
    const editor = replay.getByRole('textbox', { name: 'Definition to replay (not saved)' });
    await expect.poll(() => editor.inputValue(), { timeout: 15_000 }).toContain('transformCode');
    await editor.fill((await editor.inputValue()).replace(NAMES, UPPER));
    await replay.getByRole('button', { name: 'Replay with this definition' }).click();
    await replay.getByText('The replay succeeded; it differs from the original run.').waitFor();
    expect(await horizontalOverflow(page)).toBe(0);
  });

  it("saves the run as a test in one click; the tool's page runs its tests, a failure with its difference", async () => {
    const calls = target.count('/items');
    const page = await openSignedIn(`/runs/${recorded}`);
    await page.getByRole('button', { name: 'Save as test' }).click();
    const saved = page.getByRole('status').filter({ hasText: 'Saved test' });
    await expect
      .poll(() => saved.textContent(), { timeout: 15_000 })
      .toBe(`Saved test ${recorded} of tool prices (1 test): run them on the tool's page.`);
    await saved.getByRole('link', { name: 'prices' }).click();
    await page.waitForURL((url) => url.pathname === '/tools/prices');

    const tests = page.locator('section', { has: page.getByRole('heading', { name: 'Tests', exact: true }) });
    await tests.getByRole('heading', { name: recorded }).waitFor();
    await tests.getByText('1 recorded exchange; expects this output exactly.').waitFor();
    await tests.getByRole('button', { name: 'Run tests' }).click();
    await tests.getByText('1 passed, 0 failed.').waitFor();
    await tests.getByRole('heading', { name: `${recorded} passed` }).waitFor();
    await expectAccessible(page);

    // The transform changes: the test fails, showing what it expected and what it got.
    await call('PUT', '/v1/tools/prices', pricesTool(UPPER));
    await page.reload();
    await tests.getByRole('button', { name: 'Run tests' }).click();
    await tests.getByText('0 passed, 1 failed.').waitFor();
    const why = tests.getByRole('note', { name: `Why ${recorded} failed` });
    expect(await why.getByRole('listitem').allTextContents()).toEqual([
      '/0 expected "pen", got "PEN"',
      '/1 expected "ink", got "INK"',
    ]);
    expect(target.count('/items')).toBe(calls);
    await expectAccessible(page);
    await tests.evaluate((section) => section.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'tool-tests');
    await call('PUT', '/v1/tools/prices', pricesTool(NAMES));
  });

  it('says plainly when the tool already has the most tests it may carry', async () => {
    const tool = await call<{ tests: unknown[] }>('GET', '/v1/tools/prices');
    const [first] = tool.tests as Record<string, unknown>[];
    await call('PUT', '/v1/tools/prices', {
      tests: Array.from({ length: MAX_TOOL_TESTS }, (_, index) => ({ ...first, name: `t${index}` })),
    });
    const page = await openSignedIn(`/runs/${recorded}`);
    await page.getByRole('button', { name: 'Save as test' }).click();
    const alert = page.getByRole('alert');
    await expect
      .poll(() => alert.textContent(), { timeout: 15_000 })
      .toContain(`Tool 'prices' has ${MAX_TOOL_TESTS} tests, the most a tool may carry`);
    expect(await alert.textContent()).toContain('KG_ERR_TOOL_TESTS_LIMIT');
    await expectAccessible(page);
  });
});
