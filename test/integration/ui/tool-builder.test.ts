/**
 * The tool editor's step builder in a real browser (Debian's Chromium through playwright-core), against a
 * started embedded server and a real HTTP target: a request step and a transform step added through the
 * builder, the definition round-tripping between the builder and the JSON view unchanged, "Try up to here"
 * showing a step's data under its card and the sourceData the next step receives, a transform written
 * against that data, a broken transform's error on its card, and the saved tool equal to the builder's
 * JSON; a paginated request and a loop over its items that continues past a failed item, built in the
 * builder's forms and tried. Nothing is saved before the user saves.
 */
import type { Locator, Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import {
  expectAccessible,
  expectFitsAccessibly,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const { api, call, describeDashboard } = useBrowserTests('tool builder');

/** The card of the step at `position` (1-based), whatever its id is now. */
const card = (page: Page, position: number): Locator =>
  page.getByRole('listitem', { name: new RegExp(`^Step ${position}: `) });

const jsonView = async (page: Page): Promise<string> => {
  await page.getByRole('radio', { name: 'JSON' }).check();
  return page.getByRole('textbox', { name: 'Tool definition (JSON)' }).inputValue();
};

describeDashboard('the step builder', ({ openSignedIn }) => {
  beforeAll(async () => {
    target.route('GET', '/users/2', { body: { id: 2, name: 'Grace', roles: ['admin', 'author'] } });
    // Three items in pages of two; the detail of item 3 fails.
    target.route('GET', '/pages', (req) => {
      const page = Number(req.query.find(([name]) => name === 'page')?.[1]);
      return { body: [{ id: 1 }, { id: 2 }, { id: 3 }].slice((page - 1) * 2, page * 2) };
    });
    for (const id of [1, 2]) target.route('GET', `/details/${id}`, { body: { text: `detail of ${id}` } });
    target.route('GET', '/details/3', { status: 404, body: { error: 'no such item' } });
    await call('POST', '/v1/systems', { id: 'target', url: target.url });
  });

  it('builds a tool step by step, tries each step on real data, and saves what the JSON view shows', async () => {
    const page = await openSignedIn('/new/tool');
    // Start from JSON: a field the builder has no control for (folder) must survive every builder edit.
    await page.getByRole('radio', { name: 'JSON' }).check();
    await page
      .getByRole('textbox', { name: 'Tool definition (JSON)' })
      .fill(JSON.stringify({ id: 'user-card', name: 'User card', folder: 'people', steps: [] }, null, 2));
    await page.getByRole('radio', { name: 'Step builder' }).check();
    expect(await page.getByLabel('Tool id').inputValue()).toBe('user-card');

    await page.getByRole('button', { name: 'Add request step' }).click();
    const request = card(page, 1);
    await request.getByLabel('Step id').fill('user');
    await request.getByLabel('System').selectOption('target');
    await request.getByLabel('URL').fill('/users/<<userId>>');
    expect(await request.textContent()).toContain('Protocol: http');
    await request.getByLabel('URL').fill('postgres://db.internal/crm');
    expect(await request.textContent()).toContain('"query": "SELECT * FROM users WHERE id = $1"');
    await request.getByLabel('URL').fill('/users/<<userId>>');
    await page.getByRole('button', { name: 'Add transform step' }).click();
    const transform = card(page, 2);
    await transform.getByLabel('Step id').fill('card');

    // The builder wrote exactly the definition it shows; JSON → builder → JSON changes nothing.
    const built = await jsonView(page);
    expect(JSON.parse(built)).toEqual({
      id: 'user-card',
      name: 'User card',
      folder: 'people',
      steps: [
        { id: 'user', config: { url: '/users/<<userId>>', method: 'GET', systemId: 'target' } },
        { id: 'card', config: { type: 'transform', transformCode: '(sourceData) => sourceData' } },
      ],
    });
    await page.getByRole('radio', { name: 'Step builder' }).check();
    await card(page, 2).waitFor();
    expect(await jsonView(page)).toBe(built);
    await page.getByRole('radio', { name: 'Step builder' }).check();

    // Try up to the request: its data under its card, and what the transform will receive.
    await page.getByLabel(/^Sample inputs/).fill('{"userId": 2}');
    await page.getByRole('button', { name: 'Try up to here: user' }).click();
    const userData = request.getByRole('region', { name: 'Data of user' });
    await expect.poll(() => userData.textContent()).toContain('Grace');
    const receives = transform.getByRole('region', { name: 'sourceData card receives' });
    await expect.poll(() => receives.textContent()).toContain('Keys: userId, user');
    // The preview is the run page's JSON tree: the step's data one click away.
    await receives.getByRole('button', { name: /"data"/ }).click();
    expect(await receives.textContent()).toContain('Grace');
    expect(target.requests.filter((req) => req.path === '/users/2')).toHaveLength(1);

    // A transform that does not compile: the error on its card, at its field.
    // The code editor (CodeMirror, fetched once a code field shows) with JavaScript highlighting.
    await transform.locator('.cm-editor').first().waitFor();
    const code = transform.getByRole('textbox', { name: 'Transform code' });
    expect(await code.getAttribute('contenteditable')).toBe('true');
    await code.fill('(s) => ({ title: s.user.data.name.toUpperCase( })');
    // Highlighted: the code is split into styled tokens.
    await expect.poll(() => transform.locator('.cm-content .tok-propertyName').count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Try up to here: card' }).click();
    await expect.poll(() => transform.locator('.field-error').allTextContents()).not.toEqual([]);
    expect(await code.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page);
    await screenshot(page, 'tool-builder-error');

    // Fixed against the data shown: its output under its card.
    // Typed, key by key, as a person fixes it.
    await code.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.type(
      '(s) => ({ title: s.user.data.name.toUpperCase(), roles: s.user.data.roles.length })',
    );
    await page.getByRole('button', { name: 'Try up to here: card' }).click();
    const cardData = transform.getByRole('region', { name: 'Data of card' });
    await expect.poll(() => cardData.textContent()).toContain('GRACE');
    await expect.poll(() => code.getAttribute('aria-invalid')).toBeNull();
    await request.getByRole('region', { name: 'Data of user' }).scrollIntoViewIfNeeded();
    await screenshot(page, 'tool-builder');

    // Nothing was saved by trying.
    expect((await api.call('GET', '/v1/tools/user-card')).status).toBe(404);

    const saving = await jsonView(page);
    await page.getByRole('button', { name: 'Create tool' }).click();
    await page.waitForURL(`${api.url}/tools/user-card`);
    const saved = await call<Record<string, unknown>>('GET', '/v1/tools/user-card');
    const { createdAt: _created, updatedAt: _updated, ...definition } = saved;
    // What was saved is the builder's JSON, with the defaults the server fills in and nothing else.
    const sent = JSON.parse(saving) as { steps: { config: Record<string, unknown> }[] };
    expect(definition).toEqual({
      ...sent,
      archived: false,
      steps: sent.steps.map((step) => ({
        ...step,
        config: { type: 'request', ...step.config },
        failureBehavior: 'fail',
        modify: false,
      })),
    });
  });

  it('builds a paginated request and a loop over its items that continues on failure, tried up to the loop', async () => {
    const page = await openSignedIn('/new/tool');
    await page.getByRole('radio', { name: 'JSON' }).check();
    await page
      .getByRole('textbox', { name: 'Tool definition (JSON)' })
      .fill(JSON.stringify({ id: 'paged-details', steps: [] }));
    await page.getByRole('radio', { name: 'Step builder' }).check();
    await page.getByRole('button', { name: 'Add request step' }).click();
    const list = card(page, 1);
    await list.getByLabel('Step id').fill('list');
    await list.getByLabel('System').selectOption('target');
    await list.getByLabel('URL').fill('/pages');
    await list
      .getByLabel('Query parameters (JSON object)')
      .fill('{"page": "<<page>>", "pageSize": "<<pageSize>>"}');
    await list.getByLabel('Pagination (JSON object)').fill('{"type": "pageBased", "pageSize": 2}');
    await page.getByRole('button', { name: 'Add request step' }).click();
    const detail = card(page, 2);
    await detail.getByLabel('Step id').fill('detail');
    await detail.getByLabel('System').selectOption('target');
    await detail.getByLabel('URL').fill('/details/<<currentItem>>');
    await detail.getByText('Loop and failure').click();
    const loop = detail.getByRole('textbox', { name: 'Loop selector (dataSelector)' });
    await loop.fill('(sourceData) => sourceData.list.data.map((item) => item.id)');
    await detail.getByLabel('When the step fails').selectOption('continue');

    // Tried: the list's two pages, then the loop over their three items, the third failing.
    await page.getByRole('button', { name: 'Try up to here: detail' }).click();
    const listData = list.getByRole('region', { name: 'Data of list' });
    await expect.poll(() => listData.textContent(), { timeout: 15_000 }).toContain('3 items');
    const detailData = detail.getByRole('region', { name: 'Data of detail' });
    // One entry per item; the failed one says why, and the step went on.
    await expect.poll(() => detailData.textContent(), { timeout: 15_000 }).toContain('"currentItem": 3');
    expect(await detailData.textContent()).toContain('"error": "HTTP 404 GET');
    expect(await detailData.textContent()).toContain('▾ [ 3 items ]');
    expect(target.requests.filter((req) => req.path === '/pages').map((req) => req.query)).toEqual([
      [
        ['page', '1'],
        ['pageSize', '2'],
      ],
      [
        ['page', '2'],
        ['pageSize', '2'],
      ],
    ]);
    expect(target.count('/details/3')).toBe(1);

    expect(JSON.parse(await jsonView(page)).steps).toEqual([
      {
        id: 'list',
        config: {
          url: '/pages',
          method: 'GET',
          systemId: 'target',
          queryParams: { page: '<<page>>', pageSize: '<<pageSize>>' },
          pagination: { type: 'pageBased', pageSize: 2 },
        },
      },
      {
        id: 'detail',
        config: { url: '/details/<<currentItem>>', method: 'GET', systemId: 'target' },
        dataSelector: '(sourceData) => sourceData.list.data.map((item) => item.id)',
        failureBehavior: 'continue',
      },
    ]);
    expect((await api.call('GET', '/v1/tools/paged-details')).status).toBe(404);
    await expectAccessible(page);
  });

  it('moves and removes cards, and fits a narrow screen in the dark theme', async () => {
    await call('POST', '/v1/tools', {
      id: 'three-steps',
      steps: [
        { id: 'a', config: { type: 'transform', transformCode: '() => 1' } },
        { id: 'b', config: { type: 'transform', transformCode: '() => 2' } },
        { id: 'c', config: { type: 'transform', transformCode: '() => 3' } },
      ],
    });
    const page = await openSignedIn('/tools/three-steps/edit', { viewport: ZOOMED_200, colorScheme: 'dark' });
    await card(page, 3).waitFor();
    await page.getByRole('button', { name: 'Move c up' }).click();
    await page.getByRole('button', { name: 'Remove a' }).click();
    const ids = JSON.parse(await jsonView(page)).steps.map((step: { id: string }) => step.id);
    expect(ids).toEqual(['c', 'b']);
    await page.getByRole('radio', { name: 'Step builder' }).check();
    await card(page, 2).locator('.cm-editor').first().waitFor();
    await expectFitsAccessibly(page);
    await screenshot(page, 'tool-builder-narrow-dark');
  });

  it("edits a paginated step's stop condition in the code editor, keeping the rest of its pagination", async () => {
    await call('POST', '/v1/tools', {
      id: 'paged',
      steps: [
        {
          id: 'list',
          config: {
            systemId: 'target',
            url: '/items',
            pagination: { type: 'offsetBased', pageSize: 2, stopCondition: '(r) => r.length < 2' },
          },
        },
      ],
    });
    const page = await openSignedIn('/tools/paged/edit');
    const stop = card(page, 1).getByRole('textbox', { name: 'Pagination stop condition' });
    await expect.poll(() => stop.textContent()).toBe('(r) => r.length < 2');
    await stop.fill('(r, pageInfo) => pageInfo.totalFetched >= 4');
    const pagination = JSON.parse(await jsonView(page)).steps[0].config.pagination;
    expect(pagination).toEqual({
      type: 'offsetBased',
      pageSize: 2,
      stopCondition: '(r, pageInfo) => pageInfo.totalFetched >= 4',
    });
  });

  it('fetches the code editor only on pages that edit code', async () => {
    /** The scripts a page fetched, and whether one of them is CodeMirror's. */
    const scriptsOf = (page: Page) => {
      const bodies: Promise<string>[] = [];
      page.on('response', (response) => {
        if (response.url().endsWith('.js')) bodies.push(response.text());
      });
      return async () => (await Promise.all(bodies)).some((body) => body.includes('cm-content'));
    };
    const runs = await openSignedIn('/');
    const loadedOnRuns = scriptsOf(runs);
    await runs.goto(`${api.url}/runs`);
    await runs.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await runs.goto(`${api.url}/tools`);
    await runs.getByRole('heading', { name: 'Tools', level: 1 }).waitFor();
    expect(await loadedOnRuns()).toBe(false);

    const editing = await openSignedIn('/');
    const loadedOnEdit = scriptsOf(editing);
    await editing.goto(`${api.url}/new/tool`);
    await editing.locator('.cm-editor >> visible=true').first().waitFor();
    expect(await loadedOnEdit()).toBe(true);
  });
});
