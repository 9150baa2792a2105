/**
 * The dashboard's Tools pages in a real browser (Debian's Chromium through playwright-core), against a
 * started embedded server and a real HTTP target: the list with its folders, search, archived filter and
 * pages; creating a tool from JSON with a transform that does not compile shown at its line; editing a
 * definition; running a tool from the form made of its inputSchema (the schema's message first, the
 * server's refusal at its field, runtime credentials, then a real request); an asynchronous run opening
 * its live page; archive and unarchive; delete behind an accessible confirmation; a key limited to one
 * tool; the manifest copied as kubectl takes it. Every page is checked with axe-core and photographed.
 */
import type { Locator, Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Run } from '../../../contract/api/run.ts';
import { toolFromResource } from '../../../contract/resources/convert.ts';
import { ToolManifest, ToolResource } from '../../../contract/resources/kinds.ts';
import { API_VERSION } from '../../../contract/resources/meta.ts';
import {
  expectAccessible,
  expectFitsAccessibly,
  expectRefusedRead,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';
import { waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { api, call, describeDashboard } = useBrowserTests('tools');

const STORED_TOKEN = 'stored-token-4b1c';
const RUNTIME_TOKEN = 'runtime-token-9e27';

const GREET_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Who to greet', minLength: 2 },
    count: { type: 'integer', minimum: 1, maximum: 5, default: 2, description: 'How many times' },
    loud: { type: 'boolean', description: 'Shout it' },
    lang: { type: 'string', enum: ['en', 'de'], default: 'en' },
    tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
    address: {
      type: 'object',
      properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city'],
    },
  },
  required: ['name', 'count'],
};

const greetTool = (id: string, path = '/greet') => ({
  id,
  name: `Greeter ${id}`,
  folder: 'people/greetings',
  instruction: 'Greets someone through the target',
  inputSchema: GREET_SCHEMA,
  steps: [
    {
      id: 'hello',
      config: {
        systemId: 'target',
        url: path,
        queryParams: { name: '<<name>>', count: '<<count>>', lang: '<<lang>>' },
      },
    },
  ],
  outputTransform: '(s) => s.hello.data',
});

const simpleTool = (id: string, folder?: string) => ({
  id,
  ...(folder ? { folder } : {}),
  steps: [{ id: 'one', config: { type: 'transform', transformCode: '() => 1' } }],
});

/** The rows of the tools table, header row left out. */
const toolRows = (page: Page) => page.getByRole('table').locator('tbody tr');

/** The error a control of the run form is described by (its aria-describedby), or ''. */
async function errorOf(control: Locator): Promise<string> {
  const ids = (await control.getAttribute('aria-describedby')) ?? '';
  const id = ids.split(' ').find((candidate) => candidate.endsWith('-error'));
  return id ? ((await control.page().locator(`[id="${id}"]`).textContent()) ?? '') : '';
}
const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
/** The editor's JSON view (the page opens on the step builder). */
const editorOf = async (page: Page) => {
  await page.getByRole('radio', { name: 'JSON' }).check();
  return page.getByRole('textbox', { name: 'Tool definition (JSON)' });
};

describeDashboard('the Tools pages in a browser', ({ openSignedIn }) => {
  beforeAll(async () => {
    target.route('GET', '/greet', (req) => {
      const query = Object.fromEntries(req.query);
      return { body: { greeting: `Hello ${query.name}`, query, auth: req.headers.authorization ?? null } };
    });
    target.route('GET', '/slow', { delayMs: 3_000, body: { late: true } });
    await call('POST', '/v1/systems', {
      id: 'target',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: STORED_TOKEN },
    });
    await call('POST', '/v1/tools', greetTool('greet'));
    await call('POST', '/v1/tools', greetTool('slow-greet', '/slow'));
    await call('POST', '/v1/tools', simpleTool('report-monthly', 'finance/reports'));
    await call('POST', '/v1/tools', { ...simpleTool('old-report', 'finance/reports'), archived: true });
    for (let i = 0; i < 52; i++) {
      await call('POST', '/v1/tools', simpleTool(`bulk-${String(i).padStart(2, '0')}`, 'bulk'));
    }
  }, 120_000);

  it('lists the tools 50 a page, by folder, by search and with the archived ones on demand', async () => {
    const page = await openSignedIn('/tools');
    await expect.poll(() => toolRows(page).count()).toBe(50);
    await page.getByText('Page 1 of 2').waitFor();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(() => toolRows(page).count()).toBe(5);
    expect(page.url()).toContain('page=2');

    // Every folder is offered, with its parents and counts, whatever page is shown.
    const folders = await page.getByLabel('Folder').locator('option').allTextContents();
    expect(folders).toEqual([
      'All folders',
      'bulk (52)',
      'finance (1)',
      'finance/reports (1)',
      'people (2)',
      'people/greetings (2)',
    ]);
    await page.getByLabel('Folder').selectOption('people');
    await expect.poll(() => toolRows(page).count()).toBe(2);
    expect(page.url()).toContain('folder=people');
    await page.getByRole('button', { name: 'Clear filters' }).click();

    await page.getByLabel('Search').fill('GREETER slow');
    await page.getByLabel('Search').press('Enter');
    await expect.poll(() => toolRows(page).allInnerTexts()).toEqual([expect.stringContaining('slow-greet')]);
    await page.getByRole('button', { name: 'Clear filters' }).click();

    await page.getByLabel('Show').selectOption({ label: 'Archived only' });
    await expect.poll(() => toolRows(page).allInnerTexts()).toEqual([expect.stringContaining('old-report')]);
    expect(await toolRows(page).getByText('archived').count()).toBe(1);
    await page.getByLabel('Show').selectOption({ label: 'Active and archived' });
    await page.getByLabel('Folder').selectOption('finance/reports');
    await expect.poll(() => toolRows(page).count()).toBe(2);
    // For the picture: a few tools of several folders, one archived.
    await page.getByLabel('Folder').selectOption('');
    await page.getByLabel('Search').fill('e');
    await page.getByLabel('Search').press('Enter');
    await expect.poll(() => toolRows(page).count()).toBe(4);
    await expectAccessible(page);
    await screenshot(page, 'tools');
  });

  it('creates a tool from JSON, showing a transform that does not compile at its line', async () => {
    const page = await openSignedIn('/tools');
    await page.getByRole('link', { name: 'New tool' }).click();
    await page.getByRole('heading', { name: 'New tool' }).waitFor();
    const definition = {
      id: 'shaper',
      name: 'Shaper',
      instruction: 'Shapes the greeting',
      steps: [
        { id: 'fetch', config: { systemId: 'target', url: '/greet', queryParams: { name: 'x' } } },
        {
          id: 'shape',
          config: { type: 'transform', transformCode: '(s) => {\n  return s.fetch.data +;\n}' },
        },
      ],
    };
    const text = JSON.stringify(definition, null, 2);
    const editor = await editorOf(page);

    // Text that is not JSON is shown at its line before anything is sent.
    await editor.fill(text.replace('"name": "Shaper",', '"name": "Shaper"'));
    await page.getByRole('button', { name: 'Create tool' }).click();
    const problems = page.getByRole('list', { name: 'Problems in Tool definition (JSON)' });
    await expect.poll(() => problems.textContent()).toContain('not valid JSON');
    expect((await problems.textContent()) ?? '').toMatch(/^Line (3|4), column \d+/);

    await editor.fill(text);
    await page.getByRole('button', { name: 'Create tool' }).click();
    const line = text.split('\n').findIndex((row) => row.includes('"transformCode"')) + 1;
    await expect.poll(() => problems.textContent()).toContain('SyntaxError');
    const problem = (await problems.textContent()) ?? '';
    expect(problem).toMatch(
      new RegExp(`^Line ${line}, column \\d+: \\$\\.steps\\[1\\]\\.config\\.transformCode: `),
    );
    expect(problem).toContain('at line 2, column');
    // The API's error with its code and what to do, and the line marked beside the text.
    expect(await page.getByRole('alert').textContent()).toContain('KG_ERR_TOOL_INVALID');
    expect(await page.locator('.gutter-problem').allTextContents()).toEqual([`✕${line}`]);
    await expectAccessible(page);
    await screenshot(page, 'tool-editor');

    // Selecting the problem puts the caret inside the code, at the column of its line 2 the server named.
    const column = Number(/line 2, column (\d+)/.exec(problem)?.[1]);
    await problems.getByRole('button').click();
    const caret = await page.evaluate<{ line: number; inCode: string }>(`(() => {
      const area = document.activeElement;
      const before = area.value.slice(0, area.selectionStart);
      return { line: before.split('\\n').length, inCode: before.slice(before.lastIndexOf('\\\\n') + 2) };
    })()`);
    expect(caret.line).toBe(line);
    expect(caret.inCode).toBe('  return s.fetch.data +;'.slice(0, column - 1));

    await editor.fill(text.replace('s.fetch.data +;', 's.fetch.data.greeting;'));
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.waitForURL(`${api.url}/tools/shaper`);
    await page.getByRole('heading', { name: /^Shaper/ }).waitFor();
    expect((await call<{ instruction: string }>('GET', '/v1/tools/shaper')).instruction).toBe(
      'Shapes the greeting',
    );
  });

  it("edits a tool's JSON: a schema problem at its line, a deleted field removed", async () => {
    await call('POST', '/v1/tools', { ...simpleTool('editable'), outputTransform: '(s) => s.one' });
    const page = await openSignedIn('/tools/editable');
    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    const editor = await editorOf(page);
    await expect.poll(() => editor.inputValue()).toContain('"outputTransform"');
    const definition = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    const { outputTransform: _removed, ...kept } = definition;
    const text = JSON.stringify({ ...kept, version: '1.2' }, null, 2);
    await editor.fill(text);
    await page.getByRole('button', { name: 'Save tool' }).click();
    const problems = page.getByRole('list', { name: 'Problems in Tool definition (JSON)' });
    const line = text.split('\n').findIndex((row) => row.includes('"version"')) + 1;
    await expect
      .poll(() => problems.textContent())
      .toMatch(new RegExp(`^Line ${line}, column 3: \\$\\.version: `));

    await editor.fill(text.replace('"1.2"', '"1.2.0"'));
    await page.getByRole('button', { name: 'Save tool' }).click();
    await page.waitForURL(`${api.url}/tools/editable`);
    const saved = await call<Record<string, unknown>>('GET', '/v1/tools/editable');
    expect(saved.version).toBe('1.2.0');
    expect('outputTransform' in saved).toBe(false);
  });

  it('runs a tool from the form made of its inputSchema: the schema first, then a real request', async () => {
    const page = await openSignedIn('/tools/greet');
    const run = page.getByRole('button', { name: 'Run tool' });
    await run.waitFor();
    // Defaults fill the form; nothing is sent while a required field is empty.
    expect(await page.getByLabel('count', { exact: true }).inputValue()).toBe('2');
    expect(await page.getByLabel('lang', { exact: true }).locator('option:checked').textContent()).toBe('en');
    await run.click();
    await expect.poll(() => errorOf(field(page, 'name'))).toContain('is required');
    expect(await page.getByLabel('name', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate('document.activeElement?.id')).toBe(
      await page.getByLabel('name', { exact: true }).getAttribute('id'),
    );
    expect(await page.getByRole('alert').textContent()).toContain('1 field needs attention');
    await page.getByLabel('name', { exact: true }).fill('A');
    await page.getByLabel('count', { exact: true }).fill('9');
    await run.click();
    await expect.poll(() => errorOf(field(page, 'name'))).toContain('fewer than 2 characters');
    expect(await errorOf(field(page, 'count'))).toContain('must be <= 5');
    await expectAccessible(page);
    await screenshot(page, 'tool-run-form');
    expect(target.count('/greet')).toBe(0);

    await page.getByLabel('name', { exact: true }).fill('Ada');
    await page.getByLabel('count', { exact: true }).fill('3');
    await page.getByLabel('loud', { exact: true }).check();
    await page.getByLabel('lang', { exact: true }).selectOption({ label: 'de' });
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.getByLabel('tags item 1', { exact: true }).fill('x');
    await page.getByLabel('tags item 2', { exact: true }).fill('x');
    await page.getByLabel('city', { exact: true }).fill('Oslo');
    // What only the server checks (uniqueItems) comes back by path and is shown at its field.
    await run.click();
    const tags = page.getByRole('group', { name: 'tags', exact: true });
    await expect.poll(() => errorOf(tags)).toContain('duplicate items');
    expect(await errorOf(field(page, 'tags item 1'))).toBe('');
    expect(await page.getByRole('alert').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('KG_ERR_INPUTS_INVALID')]),
    );
    expect(target.count('/greet')).toBe(0);

    await page.getByLabel('tags item 2', { exact: true }).fill('y');
    await page.getByText('Runtime credentials (0)').click();
    await page.getByRole('button', { name: 'Add a credential' }).click();
    await page.getByLabel('Credential 1 name').fill('target_bearerToken');
    await page.getByLabel('Credential 1 value').fill(RUNTIME_TOKEN);
    await run.click();
    const result = page.getByRole('region', { name: /Result/ });
    await expect.poll(() => result.textContent(), { timeout: 15_000 }).toContain('success');
    await result.getByText('"Hello Ada"').waitFor();

    // The real request, with the inputs in the query and the runtime credential instead of the stored one.
    const sent = target.requests.filter((request) => request.path === '/greet');
    expect(sent).toHaveLength(1);
    expect(Object.fromEntries(sent[0]?.query ?? [])).toEqual({ name: 'Ada', count: '3', lang: 'de' });
    expect(sent[0]?.headers.authorization).toBe(`Bearer ${RUNTIME_TOKEN}`);
    const runId = ((await result.getByRole('link').textContent()) ?? '').replace('Open run ', '');
    const stored = await waitForRun<Run>(api, runId);
    expect(stored).toMatchObject({
      status: 'success',
      requestSource: 'frontend',
      toolPayload: {
        name: 'Ada',
        count: 3,
        loud: true,
        lang: 'de',
        tags: ['x', 'y'],
        address: { city: 'Oslo' },
      },
    });
    // The credential was sent with the run only: nothing the API answers holds it.
    expect(api.bodies.some((body) => body.includes(RUNTIME_TOKEN))).toBe(false);
    await expectAccessible(page);
    await result.scrollIntoViewIfNeeded();
    await screenshot(page, 'tool');
  }, 90_000);

  it('runs a tool in the background and opens its live run page', async () => {
    const page = await openSignedIn('/tools/slow-greet');
    await page.getByLabel('name', { exact: true }).fill('Grace');
    await page.getByLabel('In the background, and follow it on its run page').check();
    await page.getByRole('button', { name: 'Run tool' }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/runs/'));
    const runId = decodeURIComponent(new URL(page.url()).pathname.slice('/runs/'.length));
    await page.getByRole('heading', { name: `Run ${runId}` }).waitFor();
    await expect
      .poll(() => page.getByRole('log').textContent(), { timeout: 15_000 })
      .toContain("Step 'hello'");
    const run = await waitForRun<Run>(api, runId);
    expect(run).toMatchObject({
      status: 'success',
      requestSource: 'frontend',
      toolPayload: { name: 'Grace' },
    });
  });

  it('archives a tool (it cannot run, it leaves the default list) and unarchives it', async () => {
    await call('POST', '/v1/tools', simpleTool('seasonal', 'finance'));
    const page = await openSignedIn('/tools/seasonal');
    const heading = page.getByRole('heading', { level: 1 });
    await expect.poll(() => heading.textContent()).toContain('active');
    await page.getByRole('button', { name: 'Archive' }).click();
    await expect.poll(() => heading.textContent()).toContain('archived');
    expect(await page.getByRole('button', { name: 'Run tool' }).isDisabled()).toBe(true);
    await page.getByText('Archived tools cannot be run').waitFor();
    expect((await call<{ archived: boolean }>('GET', '/v1/tools/seasonal')).archived).toBe(true);

    await page.getByRole('link', { name: 'Tools', exact: true }).first().click();
    await page.getByLabel('Search').fill('seasonal');
    await page.getByLabel('Search').press('Enter');
    await page.getByText('No tool matches these filters.').waitFor();
    await page.getByLabel('Show').selectOption({ label: 'Archived only' });
    await page.getByRole('link', { name: 'seasonal' }).click();
    await page.getByRole('button', { name: 'Unarchive' }).click();
    await expect.poll(() => heading.textContent()).toContain('active');
    expect((await call<{ archived: boolean }>('GET', '/v1/tools/seasonal')).archived).toBe(false);
  });

  it('deletes a tool only after a confirmation that keeps the focus and cancels on Escape', async () => {
    await call('POST', '/v1/tools', simpleTool('doomed'));
    const page = await openSignedIn('/tools/doomed');
    const dialog = page.getByRole('dialog', { name: 'Delete doomed?' });
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.waitFor();
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Cancel');
    // Tab goes round inside the dialog; the page behind it is inert.
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate("document.activeElement?.closest('dialog') !== null")).toBe(true);
    }
    await expectAccessible(page);
    await screenshot(page, 'tool-delete');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await api.call('GET', '/v1/tools/doomed')).status).toBe(200);

    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('button', { name: 'Delete tool' }).click();
    await page.waitForURL(`${api.url}/tools`);
    expect((await api.call('GET', '/v1/tools/doomed')).status).toBe(404);
  });

  it('shows a key limited to one tool only that tool, without changing it', async () => {
    const limited = await call<{ key: string }>('POST', '/v1/api-keys', {
      name: 'greet only',
      scopes: ['tools:read', 'runs:execute'],
      toolIds: ['greet'],
    });
    const page = await openSignedIn('/tools', { key: limited.key });
    await expect.poll(() => toolRows(page).allInnerTexts()).toEqual([expect.stringContaining('greet')]);
    expect(await page.getByLabel('Folder').locator('option').allTextContents()).toEqual([
      'All folders',
      'people (1)',
      'people/greetings (1)',
    ]);
    expect(await page.getByRole('link', { name: 'New tool' }).count()).toBe(0);
    await page.getByRole('link', { name: 'greet', exact: true }).click();
    await page.getByRole('button', { name: 'Run tool' }).waitFor();
    expect(await page.getByRole('button', { name: 'Archive' }).count()).toBe(0);
    expectRefusedRead(page, /^GET \/v1\/tools\/slow-greet 404$/);
    await page.goto(`${api.url}/tools/slow-greet`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('KG_ERR_TOOL_NOT_FOUND');
  });

  it('copies the tool manifest as kubectl applies it', async () => {
    const page = await openSignedIn('/tools/greet');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });
    await page.getByRole('button', { name: 'Copy manifest' }).click();
    await page.getByText('Copied').waitFor();
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toBe(
      await page.getByRole('region', { name: 'Tool manifest' }).locator('pre').textContent(),
    );
    // What kubectl would be given: a Tool resource that the CRD's schema (contract/resources) accepts.
    const manifest = ToolManifest.parse(parse(copied));
    expect(manifest).toMatchObject({ apiVersion: API_VERSION, kind: 'Tool', metadata: { name: 'greet' } });
    const {
      createdAt: _c,
      updatedAt: _u,
      ...tool
    } = await call<Record<string, unknown>>('GET', '/v1/tools/greet');
    expect(toolFromResource(ToolResource.parse(manifest))).toEqual(tool);

    await page.getByRole('button', { name: 'Copy JSON' }).click();
    expect(JSON.parse(await page.evaluate<string>('navigator.clipboard.readText()'))).toEqual(tool);
  });

  it('keeps the tool page usable at 200 % zoom and in the dark theme', async () => {
    const page = await openSignedIn('/tools/greet', { viewport: ZOOMED_200, colorScheme: 'dark' });
    await page.getByRole('button', { name: 'Run tool' }).waitFor();
    await page.getByRole('region', { name: 'Tool manifest' }).locator('pre').waitFor();
    await expectFitsAccessibly(page);
    await page.goto(`${api.url}/tools/greet/edit`);
    await (await editorOf(page)).waitFor();
    await expectFitsAccessibly(page);
  });
});
