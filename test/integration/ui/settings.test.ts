/**
 * Settings, API keys, in a real browser against a started embedded server: a key created in the form is
 * shown once (copyable, never again), limited to one tool it sees only that tool's runs, revoked it is
 * refused; scopes the signed-in key lacks are not offered and the API's refusals show with their code and
 * what to do; an agent's key gets gateways:host alone. Each state of the page is checked with axe-core and
 * photographed.
 */
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import {
  ERROR_CATALOG,
  KG_ERR_GRANT_EXCEEDS_KEY,
  KG_ERR_INVALID_API_KEY,
} from '../../../contract/api/errors.ts';
import type { ApiKey, ApiKeyCreated, ApiKeyList } from '../../../ui/api/types.ts';
import {
  expectAccessible,
  expectFitsAccessibly,
  screenshot,
  useBrowserTests,
  ZOOMED_200,
} from '../../support/browser.ts';

const { api, call, describeDashboard } = useBrowserTests('settings');

const transformTool = (id: string) => ({
  id,
  steps: [{ id: 'make', config: { type: 'transform', transformCode: `() => '${id}'` } }],
});

async function keysNamed(name: string): Promise<ApiKey[]> {
  const { data } = await call<ApiKeyList>('GET', '/v1/api-keys');
  return data.filter((key) => key.name === name);
}

/** Fills and submits the create form: name, the scopes to tick on top of the defaults, tools. */
async function createKey(
  page: Page,
  name: string,
  options: { tools?: string[]; runsPerMinute?: number } = {},
): Promise<void> {
  await page.getByLabel('Name', { exact: true }).fill(name);
  for (const tool of options.tools ?? []) {
    await page.getByLabel('Add a tool').fill(tool);
    await page.getByLabel('Add a tool').press('Enter');
  }
  if (options.runsPerMinute !== undefined) {
    await page.getByLabel('Runs per minute').fill(String(options.runsPerMinute));
  }
  await page.getByRole('button', { name: 'Create key' }).click();
}

describeDashboard('API keys in the dashboard', (dashboard) => {
  beforeAll(async () => {
    await call('POST', '/v1/tools', transformTool('list-items'));
    await call('POST', '/v1/tools', transformTool('other'));
    for (const tool of ['list-items', 'list-items', 'other', 'other']) {
      await call('POST', `/v1/tools/${tool}/run`, {});
    }
  });

  it('creates a key limited to one tool, shows it once, signs in with it, and revokes it', async () => {
    const page = await dashboard.open('/settings');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: api.url });
    await dashboard.signIn(page);
    // The signed-in key's facts, as before.
    await expect
      .poll(() => page.getByLabel('The signed-in API key').getByText('runs:execute').count())
      .toBe(1);
    await page.getByRole('row', { name: /admin \(KUBEGLUE_ADMIN_KEY\) \(signed in with it\)/ }).waitFor();
    await expectAccessible(page);

    await createKey(page, 'list-items reader', { tools: ['list-items'], runsPerMinute: 30 });
    const field = page.getByLabel('The new API key');
    await field.waitFor();
    const secret = await field.inputValue();
    expect(secret).toMatch(/^kg_/);
    await page.getByText('you will not see it again').waitFor();
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await expectAccessible(page);
    await screenshot(page, 'settings-new-key');

    // What the API made of the form: the default scopes of a tool-limited key, one tool, its quota.
    const [created] = await keysNamed('list-items reader');
    expect(created).toMatchObject({
      scopes: ['tools:read', 'runs:read', 'runs:execute'],
      toolIds: ['list-items'],
      systemIds: null,
      quotas: { runsPerMinute: 30, concurrentRuns: null },
    });
    // Listed with its limit and quota, and the secret is gone from the page for good once copied.
    const row = page.getByRole('row', { name: /list-items reader/ });
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('list-items');
    expect(await row.getByRole('cell').nth(4).textContent()).toBe('30 runs/min');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await field.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    await page.reload();
    await page.getByRole('row', { name: /list-items reader/ }).waitFor();
    expect(await page.content()).not.toContain(secret);

    // Signed in with the new key, only that tool's runs are there.
    const limited = await dashboard.openSignedIn('/runs', { key: secret });
    const tools = limited.locator('.runs-table tbody td:nth-child(3)');
    await expect
      .poll(async () => (await tools.allTextContents()).sort())
      .toEqual(['list-items', 'list-items']);
    await limited.getByRole('link', { name: 'Settings' }).click();
    await limited.getByText('Managing API keys needs the scope').waitFor();

    // Revoked (after a confirmation), it is refused.
    await page.getByRole('button', { name: 'Revoke key list-items reader' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke the key “list-items reader”?' });
    await dialog.waitFor();
    await expectAccessible(page);
    await screenshot(page, 'settings-revoke');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // By keyboard: Escape cancels too, and focus goes back to the button that opened it.
    await page.getByRole('button', { name: 'Revoke key list-items reader' }).press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate('document.activeElement?.getAttribute("aria-label")')).toBe(
      'Revoke key list-items reader',
    );
    expect(await keysNamed('list-items reader')).toHaveLength(1);
    await page.getByRole('button', { name: 'Revoke key list-items reader' }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('row', { name: /list-items reader/ }).waitFor({ state: 'detached' });
    expect(await keysNamed('list-items reader')).toEqual([]);

    await limited.reload();
    await limited.getByLabel('API key').fill(secret);
    await limited.getByRole('button', { name: 'Sign in' }).click();
    const refused = limited.getByRole('alert');
    await expect.poll(() => refused.textContent()).toContain(KG_ERR_INVALID_API_KEY.code);
  });

  it('creates an agent key that may host gateway agents and nothing else', async () => {
    const page = await dashboard.openSignedIn('/settings');
    await page.getByLabel('Name', { exact: true }).fill('corp-eu agent');
    for (const scope of ['tools:read', 'runs:read', 'runs:execute']) {
      await page.getByRole('checkbox', { name: new RegExp(scope) }).uncheck();
    }
    expect(await page.getByRole('button', { name: 'Create key' }).isDisabled()).toBe(true);
    expect(await page.getByText('Choose at least one scope.').count()).toBe(1);
    await page.getByRole('checkbox', { name: /Host gateway agents/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('The new API key').waitFor();
    expect(await keysNamed('corp-eu agent')).toMatchObject([{ scopes: ['gateways:host'], toolIds: null }]);
  });

  it("offers only what the signed-in key has, and shows the API's refusal with what to do", async () => {
    const manager = await call<ApiKeyCreated>('POST', '/v1/api-keys', {
      name: 'list-items manager',
      scopes: ['keys:admin', 'tools:read', 'runs:read'],
      toolIds: ['list-items'],
    });
    const page = await dashboard.openSignedIn('/settings', { key: manager.key });
    await page.getByRole('heading', { name: 'Create an API key' }).waitFor();
    // No admin keys, and the scopes it lacks cannot be ticked.
    expect(await page.getByText('Admin key: every scope').count()).toBe(0);
    expect(await page.getByRole('checkbox', { name: /runs:execute/ }).isDisabled()).toBe(true);
    expect(await page.getByRole('checkbox', { name: /tools:read/ }).isChecked()).toBe(true);
    // A tool it may not use: the server refuses, and the page says why and what to do.
    await createKey(page, 'sneaky', { tools: ['other'] });
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain(KG_ERR_GRANT_EXCEEDS_KEY.code);
    const fix = ERROR_CATALOG.find((entry) => entry.code === KG_ERR_GRANT_EXCEEDS_KEY.code)?.fix ?? '';
    expect(await alert.textContent()).toContain(fix);
    expect(await alert.textContent()).toContain("'other'");
    expect(await keysNamed('sneaky')).toEqual([]);
  });

  it('works at 200 % zoom, in the dark theme', async () => {
    const page = await dashboard.openSignedIn('/settings', { viewport: ZOOMED_200, colorScheme: 'dark' });
    await page.getByRole('heading', { name: 'Create an API key' }).waitFor();
    await expectFitsAccessibly(page);
  });
});
