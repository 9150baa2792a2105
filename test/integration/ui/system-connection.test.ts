/**
 * The system form per protocol and the connection test in a real browser (Debian's Chromium) against a
 * started server, a real redis-server and the run's MariaDB: choosing or typing a scheme shows the URL's
 * shape and the protocol's login fields; a Redis and a MySQL system created through the form test as
 * connected, then with a wrong password saved as failed, the failure shown and no password anywhere on
 * the page or in what the pages read; an MSSQL system's form and page say no step can use it yet; a key
 * that may not run sees no test.
 */
import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { expectAccessible, screenshot, secretScan, useBrowserTests } from '../../support/browser.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';
import { REDIS_PASSWORD, redisServerMissing, useRedisServer } from '../../support/redis-server.ts';
import type { Secret } from '../../support/secret-scan.ts';

const WRONG_PASSWORD = 'typed-WRONG-pw-5d0c8e';

const { api, call, describeDashboard } = useBrowserTests('system connection', {
  alsoMissing: () => redisServerMissing() ?? (mariadbSkip() ? 'no MariaDB in this run' : undefined),
});
/** The credential values typed looked for in the pages and in every answer they read. */
const scan = secretScan(
  () => api.url,
  () => secrets,
);
const secrets: Secret[] = [
  { name: 'redis password', value: REDIS_PASSWORD },
  { name: 'wrong password', value: WRONG_PASSWORD },
];

const prod = (page: Page) => page.getByRole('region', { name: 'Production (prod)' });

/** Clicks the variant's test and waits for its outcome: the status region's text. */
async function testProd(page: Page): Promise<string> {
  await prod(page).getByRole('button', { name: 'Test prod connection' }).click();
  const status = prod(page).getByRole('status', { name: 'Connection test (prod)' });
  await status.locator('.connection-outcome').waitFor({ timeout: 30_000 });
  return (await status.textContent()) ?? '';
}

/** Saves a new password on the prod variant through the edit form. */
async function savePassword(page: Page, systemId: string, password: string): Promise<void> {
  await prod(page).getByRole('link', { name: 'Edit prod' }).click();
  await page.getByRole('heading', { name: `Edit system ${systemId} (prod)` }).waitFor();
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.waitForURL(`${api.url}/systems/${systemId}`);
}

describeDashboard(
  'the system form per protocol, and the connection test',
  { timeout: 90_000, prepare: (page) => scan.keep(page) },
  ({ openSignedIn }) => {
    const redis = useRedisServer();
    const database = useMariaDb();

    it("shows each protocol's URL shape and login fields as it is chosen or typed", async () => {
      const page = await openSignedIn('/systems/new');
      await page.getByRole('heading', { name: 'New system' }).waitFor();
      const protocol = page.getByLabel('Protocol');
      const url = page.getByLabel('URL', { exact: true });
      const urlNote = page.locator('#system-url-note');
      const labels = () => page.locator('.credential-fields .field > label').allTextContents();

      await protocol.selectOption({ label: 'SFTP' });
      expect(await url.getAttribute('placeholder')).toBe('sftp://host:22/path');
      expect(await page.getByLabel('Method').inputValue()).toBe('dataStore');
      expect(await labels()).toEqual([
        'Username',
        'Password',
        'Private key',
        'Passphrase of the private key',
        'Host key fingerprint',
      ]);
      await protocol.selectOption({ label: 'SMB file share' });
      expect(await urlNote.textContent()).toContain('smb://host/share/path');
      expect(await labels()).toEqual(['Username', 'Password', 'Domain', 'Connection URL']);
      await protocol.selectOption({ label: 'Postgres' });
      expect(await urlNote.textContent()).toContain('postgres://host:5432/db');
      expect(await labels()).toEqual(['Username', 'Password', 'Connection URL']);

      // Typing a scheme chooses the protocol; a GraphQL endpoint says where its documentation hint goes.
      await url.fill('rediss://cache.internal:6380/2');
      expect(await protocol.inputValue()).toBe('redis');
      expect(await labels()).toEqual(['Username', 'Password', 'Connection URL', 'CA certificate (PEM)']);
      await url.fill('https://api.example.com/graphql');
      expect(await protocol.inputValue()).toBe('graphql');
      expect(await page.getByLabel('Method').inputValue()).toBe('none');
      expect(await urlNote.textContent()).toContain('#graphql');
      await url.fill('mysql://db.internal:3306/shop');
      expect(await protocol.inputValue()).toBe('mysql');
      expect(await urlNote.textContent()).toContain('mysql://host:3306/db');
      await expectAccessible(page);
    });

    it('creates a Redis system through the form, tests it connected, then failed with a wrong password', async () => {
      const page = await openSignedIn('/systems/new');
      await page.getByLabel('Id').fill('cache');
      await page.getByLabel('Protocol').selectOption({ label: 'Redis' });
      expect(await page.getByLabel('URL', { exact: true }).getAttribute('placeholder')).toBe(
        'redis://host:6379/0',
      );
      await page.getByLabel('URL', { exact: true }).fill(`${redis.url}/0`);
      await page.getByLabel('Password', { exact: true }).fill(REDIS_PASSWORD);
      await page.getByText('Once the system is created, its page tests the connection').waitFor();
      await expectAccessible(page);
      await screenshot(page, 'system-new-redis');
      await page.getByRole('button', { name: 'Create system' }).click();
      await page.waitForURL(`${api.url}/systems/cache`);

      const connected = await testProd(page);
      expect(connected).toContain('Connected');
      expect(connected).toContain(`DBSIZE on ${redis.url}/0`);
      await scan.expectNoneShown(page);
      await expectAccessible(page);
      await screenshot(page, 'system-connection');

      await savePassword(page, 'cache', WRONG_PASSWORD);
      const failed = await testProd(page);
      expect(failed).toContain('Failed');
      expect(failed).toContain('WRONGPASS');
      await scan.expectNoneShown(page);
      await expectAccessible(page);
      await screenshot(page, 'system-connection-failed');
    });

    it('creates a MySQL system by typing its URL, and tests it from the edit form too', async () => {
      secrets.push({ name: 'mariadb password', value: database.password });
      const page = await openSignedIn('/systems/new');
      await page.getByLabel('Id').fill('shop');
      await page.getByLabel('URL', { exact: true }).fill(database.bareUrl);
      expect(await page.getByLabel('Protocol').inputValue()).toBe('mysql');
      await page.getByLabel('Username').fill(database.user);
      await page.getByLabel('Password', { exact: true }).fill(database.password);
      await page.getByRole('button', { name: 'Create system' }).click();
      await page.waitForURL(`${api.url}/systems/shop`);
      const connected = await testProd(page);
      expect(connected).toContain('Connected');
      expect(connected).toContain(`SELECT 1 on ${database.bareUrl}`);

      await savePassword(page, 'shop', WRONG_PASSWORD);
      const failed = await testProd(page);
      expect(failed).toContain('ER_ACCESS_DENIED_ERROR');
      // The user name is a credential too: the error shows its placeholder.
      expect(failed).toContain('<<shop_username>>');
      expect(failed).not.toContain(database.user);
      await scan.expectNoneShown(page);

      // The edit form tests what is saved, never what is typed.
      await prod(page).getByRole('link', { name: 'Edit prod' }).click();
      await page.getByLabel('Password', { exact: true }).fill(database.password);
      await page.getByRole('button', { name: 'Test the saved connection' }).click();
      const status = page.getByRole('status', { name: 'Connection test (prod)' });
      await status.locator('.connection-failed').waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.waitForURL(`${api.url}/systems/shop`);
      expect(await testProd(page)).toContain('Connected');
      await expectAccessible(page);
    });

    it('says on the form and the page that no step can use an MSSQL system yet, and offers no test', async () => {
      const page = await openSignedIn('/systems/new');
      await page.getByLabel('Id').fill('ledger');
      await page.getByLabel('Protocol').selectOption({ label: 'MSSQL (no step can use it yet)' });
      const formNotice = page.getByRole('note');
      await formNotice.getByText('No step can use MSSQL systems yet.').waitFor();
      expect(await formNotice.textContent()).toContain('docs/tools.md#other-protocols');
      await page.getByLabel('URL', { exact: true }).fill('mssql://sql.internal:1433/ledger');
      await page.getByLabel('Username').fill('ledger_app');
      await page.getByLabel('Password', { exact: true }).fill(WRONG_PASSWORD);
      await expectAccessible(page);
      await screenshot(page, 'system-new-mssql');
      await page.getByRole('button', { name: 'Create system' }).click();
      await page.waitForURL(`${api.url}/systems/ledger`);
      await prod(page).getByRole('note').getByText('No step can use MSSQL systems yet.').waitFor();
      expect(await prod(page).getByText('MSSQL (no step can use it yet)').count()).toBe(1);
      expect(await page.getByRole('button', { name: /^Test / }).count()).toBe(0);
      await scan.expectNoneShown(page);
      await expectAccessible(page);
      await screenshot(page, 'system-mssql');
    });

    it('shows a failed outcome readably in the dark theme', async () => {
      const page = await openSignedIn('/systems/cache', { colorScheme: 'dark' });
      expect(await testProd(page)).toContain('WRONGPASS');
      await expectAccessible(page);
    });

    it('shows no test to a key that may not run', async () => {
      const reader = await call<{ key: string }>('POST', '/v1/api-keys', {
        name: 'systems reader',
        scopes: ['systems:read'],
      });
      const page = await openSignedIn('/systems/cache', { key: reader.key });
      await prod(page).getByText(`${redis.url}/0`).waitFor();
      expect(await page.getByRole('button', { name: /^Test / }).count()).toBe(0);
    });

    it('never puts a credential value in an answer the pages read', () => {
      expect(scan.answers.some((answer) => answer.where.includes('/test'))).toBe(true);
      scan.expectNoneAnswered();
    });
  },
);
