/**
 * A real browser for the dashboard's tests: Debian's Chromium (never a downloaded one) driven by
 * playwright-core. Where it is: KUBEGLUE_CHROMIUM, else CHROMIUM_PATH, else /usr/bin/chromium; `npm test`
 * installs the `chromium` package when it is missing. Without one the browser tests are skipped with the
 * reason (prerequisites.ts), except under CI=true, where that is an error.
 *
 * Pages are checked as a person meets them: axe-core (from node_modules, never a CDN) for accessibility,
 * the Content-Security-Policy's violations and the console's errors collected, and a screenshot of each
 * page written under test-output/ui/ (KUBEGLUE_TEST_OUTPUT moves it), which CI keeps as an artifact;
 * with KUBEGLUE_UPDATE_SCREENSHOTS=1 the documentation's copies in docs/images/ are rewritten too.
 */

import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { SETTINGS } from '../../config/config.ts';
import { callOk, TEST_ADMIN_KEY, type TestApi, useTestApi } from './embedded.ts';
import { chromiumPath, skipReason } from './prerequisites.ts';
import { type Exposed, findSecrets, type Secret, summarise } from './secret-scan.ts';

const REPO = resolve(import.meta.dirname, '..', '..');

export { chromiumPath } from './prerequisites.ts';

/** Why the browser tests cannot run here (undefined: they can); throws under CI, where they must. */
export function browserMissing(): string | undefined {
  return skipReason('chromium');
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error('no Chromium (see browserMissing)');
  // --no-sandbox: CI and developers run as root, where Chromium refuses its sandbox.
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** What a page reported on its own while a test used it. */
export interface PageWatch {
  cspViolations: string[];
  consoleErrors: string[];
  /**
   * Reads the server refused (`GET /v1/systems/x?environment=dev 404`), each of which the browser logs as
   * an error: a page reads what exists. A refused key (401) is not among them: the sign-in form shows it.
   */
  refusedReads: string[];
  /** The refused reads the test provokes on purpose (expectRefusedRead). */
  expectedRefusals: RegExp[];
}

const watchOfPage = new WeakMap<Page, PageWatch>();

/**
 * The test makes `page` read what the server refuses, on purpose (a page of a tool the key may not see, a
 * preview of an expression being typed): such a read, as `GET <path and query> <status>`, does not fail it.
 */
export function expectRefusedRead(page: Page, refusal: RegExp): void {
  const watch = watchOfPage.get(page);
  if (!watch) throw new Error('expectRefusedRead: not a page of openPage');
  watch.expectedRefusals.push(refusal);
}

/** A page in a fresh context (its own sessionStorage), watched for CSP violations and console errors. */
export async function openPage(
  browser: Browser,
  options: { colorScheme?: 'light' | 'dark'; viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; page: Page; watch: PageWatch }> {
  const context = await browser.newContext({
    viewport: options.viewport ?? { width: 1200, height: 800 },
    colorScheme: options.colorScheme ?? 'light',
    // What a test reads (dates, numbers) does not depend on the machine's language.
    locale: 'en-US',
    acceptDownloads: true,
  });
  const watch: PageWatch = { cspViolations: [], consoleErrors: [], refusedReads: [], expectedRefusals: [] };
  await context.exposeBinding('__reportCspViolation', (_source, text: string) => {
    watch.cspViolations.push(text);
  });
  // In-page code is given as text: the tests are type-checked without the DOM's types.
  await context.addInitScript(`document.addEventListener('securitypolicyviolation', (event) => {
    window.__reportCspViolation(event.violatedDirective + ' blocked ' + event.blockedURI + ' (' + event.sourceFile + ':' + event.lineNumber + ')');
  });`);
  const page = await context.newPage();
  watchOfPage.set(page, watch);
  page.on('console', (message) => {
    // The browser logs every refused request as an error, without saying which: the answers below do.
    // A refused write is the page's answer to what was typed, and shows on it.
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) {
      watch.consoleErrors.push(message.text());
    }
  });
  page.on('pageerror', (error) => watch.consoleErrors.push(String(error)));
  page.on('response', (response) => {
    const status = response.status();
    if (response.request().method() !== 'GET' || status < 400 || status >= 500 || status === 401) return;
    const url = new URL(response.url());
    watch.refusedReads.push(`GET ${url.pathname}${url.search} ${status}`);
  });
  return { context, page, watch };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

let axeSource: string | undefined;

/**
 * axe-core's violations of impact serious or critical on the page as it is now. The script is evaluated
 * through the DevTools protocol, which the page's CSP does not govern, so the policy stays as served.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= await readFile(join(REPO, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
  await page.evaluate(`${axeSource}\n;true`);
  const violations = await page.evaluate<AxeViolation[]>('axe.run().then((result) => result.violations)');
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      nodes: nodes.map((n) => ({ target: n.target })),
    }));
}

/** Fails on any serious or critical axe-core finding on the page as it is now. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
}

/** Signs in on the form every path shows signed out, and waits for the signed-in frame. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/**
 * Closes the contexts of the pages a test opened (emptying `opened`) and fails if any page reported a
 * Content-Security-Policy violation, a console error or a refused read it did not expect meanwhile: for
 * each test's afterEach.
 */
export async function closeWatchedPages(
  opened: { context: BrowserContext; watch: PageWatch }[],
): Promise<void> {
  const watches = opened.map((entry) => entry.watch);
  for (const { context } of opened.splice(0)) await context.close();
  expect(watches.flatMap((watch) => watch.cspViolations)).toEqual([]);
  expect(watches.flatMap((watch) => watch.consoleErrors)).toEqual([]);
  const unexpected = (watch: PageWatch) =>
    watch.refusedReads.filter((read) => !watch.expectedRefusals.some((expected) => expected.test(read)));
  expect(watches.flatMap(unexpected), 'reads the server refused (the browser logs each as an error)').toEqual(
    [],
  );
}

export interface SecretScan {
  /** Every answer of the server a page read since `keep` watched it: `<method> <url>` and its body. */
  answers: Exposed[];
  /** Keeps every answer of the server that `page` reads: for the block's DashboardOptions.prepare. */
  keep(page: Page): void;
  /** No secret in the page as it is now: its markup and every field's value. */
  expectNoneShown(page: Page): Promise<void>;
  /** No secret in any answer kept so far. */
  expectNoneAnswered(): void;
}

/**
 * The secret scan of a suite that types credentials into the pages (test/support/secret-scan.ts): the
 * page as shown, and every answer of the server at `baseUrl()` the pages read.
 */
export function secretScan(baseUrl: () => string, secrets: () => Secret[]): SecretScan {
  const answers: Exposed[] = [];
  return {
    answers,
    keep(page) {
      page.on('response', (response) => {
        if (!response.url().startsWith(baseUrl())) return;
        void response.text().then(
          (text) => answers.push({ where: `${response.request().method()} ${response.url()}`, text }),
          () => {}, // a redirect has no body
        );
      });
    },
    async expectNoneShown(page) {
      const shown = await page.evaluate<string>(
        "document.documentElement.outerHTML + '\\n' + [...document.querySelectorAll('input, textarea, select')].map((e) => e.value).join('\\n')",
      );
      expect(summarise(findSecrets(secrets(), [{ where: page.url(), text: shown }]))).toEqual([]);
    },
    expectNoneAnswered() {
      expect(summarise(findSecrets(secrets(), answers))).toEqual([]);
    },
  };
}

/** Where the tests write what CI keeps: screenshots of every page. */
export const TEST_OUTPUT = resolve(
  process.env[SETTINGS.tree.ci.testOutput.name] ?? join(REPO, 'test-output'),
  'ui',
);

/**
 * A full-page screenshot as test-output/ui/<name>.png; with KUBEGLUE_UPDATE_SCREENSHOTS=1 also as the
 * documentation's docs/images/dashboard-<name>.png (the viewport only, to keep committed files small).
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(TEST_OUTPUT, { recursive: true });
  const file = join(TEST_OUTPUT, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true, animations: 'disabled' });
  if (process.env[SETTINGS.tree.ci.updateScreenshots.name] === '1') {
    const docs = join(REPO, 'docs', 'images', `dashboard-${name}.png`);
    await mkdir(join(REPO, 'docs', 'images'), { recursive: true });
    await page.screenshot({ path: docs, animations: 'disabled' });
  }
  return file;
}

/** How far the page is wider than its window, in CSS pixels (≤ 0: no sideways scrolling). */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
}

/** The page fits its window (no sideways scrolling) and axe-core finds nothing serious: a zoomed page's check. */
export async function expectFitsAccessibly(page: Page): Promise<void> {
  expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
  await expectAccessible(page);
}

/** A 1200 × 800 window at 200 % zoom, in CSS pixels. */
export const ZOOMED_200 = { width: 600, height: 400 };

/** How a page is opened: its colour scheme and window. */
type OpenOptions = Parameters<typeof openPage>[1];

export interface Dashboard {
  /** A page at `path` in a fresh context (its own session storage), watched as openPage watches. */
  open(path: string, options?: OpenOptions): Promise<Page>;
  /** Signs in on the sign-in form the page shows, and waits for the navigation. */
  signIn(page: Page, key?: string): Promise<void>;
  /** A page at `path`, signed in with `key` (the admin's unless given): where most tests start. */
  openSignedIn(path: string, options?: OpenOptions & { key?: string }): Promise<Page>;
}

export interface DashboardOptions {
  /** Runs on every page before it navigates: routes to stub, listeners to record what it reads. */
  prepare?: (page: Page, context: BrowserContext) => Promise<void> | void;
}

/**
 * The browser of a block of dashboard tests against the server at `baseUrl()`: launched before them and
 * closed after; after each test, no page it opened may have reported a Content-Security-Policy violation
 * or a console error. Call it inside the block that is skipped without Chromium (browserMissing).
 */
export function useDashboard(baseUrl: () => string, dashboardOptions: DashboardOptions = {}): Dashboard {
  let browser: Browser | undefined;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterEach(() => closeWatchedPages(opened));
  afterAll(async () => {
    await browser?.close();
  });
  const open: Dashboard['open'] = async (path, options = {}) => {
    if (!browser) throw new Error('the browser starts in beforeAll: open pages in tests');
    const { context, page, watch } = await openPage(browser, options);
    opened.push({ context, watch });
    await dashboardOptions.prepare?.(page, context);
    await page.goto(`${baseUrl()}${path}`);
    return page;
  };
  return {
    open,
    signIn: (page, key = TEST_ADMIN_KEY) => signIn(page, key),
    async openSignedIn(path, { key = TEST_ADMIN_KEY, ...options } = {}) {
      const page = await open(path, options);
      await signIn(page, key);
      return page;
    },
  };
}

export interface BrowserTests {
  /** Why these tests cannot run here, or undefined: their block is `describe.skipIf(missing !== undefined)`. */
  missing: string | undefined;
  /** The started embedded server whose dashboard the tests open. */
  api: TestApi;
  /** A call of its /v1 API that must succeed: the answer's body (as the admin unless `key` is given). */
  call<T>(method: string, path: string, body?: unknown, key?: string): Promise<T>;
  /**
   * The file's block of dashboard tests, skipped where they cannot run (`missing`): a `describe` whose
   * `tests` get the dashboard of the file's server (useDashboard), its browser launched for the block.
   */
  describeDashboard: DescribeDashboard;
}

/** A block's `timeout` (as `describe` takes it) and what each of its pages is prepared with. */
export type DashboardBlockOptions = DashboardOptions & { timeout?: number };

interface DescribeDashboard {
  (name: string, tests: (dashboard: Dashboard) => void): void;
  (name: string, options: DashboardBlockOptions, tests: (dashboard: Dashboard) => void): void;
}

/**
 * What a file of dashboard tests starts with: whether they can run here (the browser, and what else
 * `alsoMissing` says they need; the reason is said once on stderr, `<suite> browser tests skipped: …`),
 * an embedded server started with `env` for the file, and `call` to set up what the pages show.
 */
export function useBrowserTests(
  suite: string,
  options: { env?: Record<string, string>; alsoMissing?: () => string | undefined } = {},
): BrowserTests {
  const missing = browserMissing() ?? options.alsoMissing?.();
  if (missing) console.warn(`${suite} browser tests skipped: ${missing}`);
  const api = useTestApi(options.env);
  const describeDashboard: DescribeDashboard = (
    name: string,
    ...rest: [(dashboard: Dashboard) => void] | [DashboardBlockOptions, (dashboard: Dashboard) => void]
  ) => {
    const [{ timeout, ...dashboardOptions }, tests] = rest.length === 1 ? [{}, rest[0]] : rest;
    describe.skipIf(missing !== undefined)(name, timeout === undefined ? {} : { timeout }, () => {
      tests(useDashboard(() => api.url, dashboardOptions));
    });
  };
  return {
    missing,
    api,
    call: <T>(method: string, path: string, body?: unknown, key?: string) =>
      callOk<T>(api, method, path, body, key),
    describeDashboard,
  };
}
