/**
 * ui.*: the dashboard as a browser meets it, in Debian's Chromium driven by playwright-core
 * (test/support/browser.ts; skipped without one).
 * - ui.first_load: the compressed JavaScript and CSS a first visit fetches (the budget: 200 KiB of JS).
 * - ui.runs_list_ms: from navigation to the runs list on screen and usable (the page's performance mark
 *   `kubeglue:runs-list-ready`), signed in, on the million runs api.list_runs seeded: bench/api.ts
 *   measures it beside its own figure, on the same server.
 * - ui.run_page: a run of 200 steps (a tool's most) fetching 1 000 pages: the longest frame while its
 *   events stream in live, then its finished page: ready, all steps shown page by page, and the frames
 *   while scrolling through it.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { chromiumPath, launchBrowser } from '../test/support/browser.ts';
import { buildUi, FIRST_LOAD_JS_BUDGET_KIB } from '../ui/build.ts';
import { ADMIN_KEY, startBenchServer } from './api.ts';
import { emit, percentile, progress, round } from './stats.ts';

const SAMPLES = 7;
/** A tool's most steps; each fetches PAGES_PER_STEP pages (bench/api.ts's target): 1 000 pages. */
const STEPS = 200;
const PAGES_PER_STEP = 5;

const kib = (bytes: number) => round(bytes / 1024, 1);

export async function benchUiFirstLoad(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-ui-'));
  try {
    const built = await buildUi(join(dir, 'ui'));
    const sizes = async (files: string[]) => {
      const total = { raw: 0, gzip: 0, brotli: 0 };
      for (const file of files) {
        const body = await readFile(join(built.outDir, file));
        total.raw += body.length;
        total.gzip += gzipSync(body, { level: 9 }).length;
        total.brotli += brotliCompressSync(body, {
          params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
        }).length;
      }
      return total;
    };
    const js = await sizes(built.firstLoadScripts);
    const css = await sizes([built.stylesheet]);
    emit({
      bench: 'ui.first_load',
      jsGzipKiB: kib(js.gzip),
      jsBrotliKiB: kib(js.brotli),
      jsRawKiB: kib(js.raw),
      cssGzipKiB: kib(css.gzip),
      scripts: built.firstLoadScripts.length,
      budgetJsKiB: FIRST_LOAD_JS_BUDGET_KIB,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A fresh tab (empty cache) already holding the key, as after signing in, at url. */
async function openSignedIn(browser: Browser, url: string): Promise<{ page: Page; close(): Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(`sessionStorage.setItem('kubeglue.apiKey', ${JSON.stringify(ADMIN_KEY)})`);
  const page = await context.newPage();
  await page.goto(url);
  return { page, close: () => context.close() };
}

/** When the page set the mark, in ms from the start of its navigation. */
async function markTime(page: Page, mark: string): Promise<number> {
  // Polled with evaluate: waitForFunction evaluates a string in the page, which its CSP forbids.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const at = await page.evaluate<number | null>(
      `performance.getEntriesByName(${JSON.stringify(mark)})[0]?.startTime ?? null`,
    );
    if (at !== null) return at;
    if (Date.now() > deadline) throw new Error(`the page never set the mark ${mark}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** ui.runs_list_ms on a server whose store holds `runs` runs (of tools tool-0 … tool-49). */
export async function benchUiRunsList(url: string, runs: number): Promise<void> {
  if (!chromiumPath()) {
    progress('ui: no Chromium, ui.runs_list_ms skipped');
    return;
  }
  const browser = await launchBrowser();
  try {
    const figure: Record<string, unknown> = { bench: 'ui.runs_list_ms', runs };
    for (const [name, query] of [
      ['all', ''],
      ['filtered', '?toolId=tool-7&status=failed'],
    ] as const) {
      const samples: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const { page, close } = await openSignedIn(browser, `${url}/runs${query}`);
        samples.push(await markTime(page, 'kubeglue:runs-list-ready'));
        await close();
      }
      figure[`${name}P50Ms`] = round(percentile(samples, 50), 0);
      figure[`${name}MaxMs`] = round(Math.max(...samples), 0);
    }
    figure.targetMs = 1000;
    emit(figure);
  } finally {
    await browser.close();
  }
}

/**
 * Frame gaps (ms) while `each` (in-page code, run once a frame) returns true: the longest is how long the
 * page could not answer. The code is text: the bench is type-checked without the DOM's types.
 */
function frameGaps(page: Page, each: string): Promise<number[]> {
  return page.evaluate<number[]>(`new Promise((resolve) => {
    const gaps = [];
    let last = performance.now();
    const more = () => { ${each} };
    const tick = (now) => {
      gaps.push(now - last);
      last = now;
      if (more() && gaps.length < 20000) requestAnimationFrame(tick);
      else resolve(gaps.slice(1));
    };
    requestAnimationFrame(tick);
  })`);
}

/** While the page scrolls from top to bottom, a screen a frame. */
const scrollFrames = (page: Page) =>
  frameGaps(
    page,
    'window.scrollBy(0, window.innerHeight); return window.scrollY + window.innerHeight < document.documentElement.scrollHeight;',
  );

/** Until the run's page shows its outcome. */
const framesUntilFinished = (page: Page) =>
  frameGaps(page, "return /running|^$/.test(document.querySelector('.facts .status')?.textContent ?? '');");

export async function benchUiRunPage(): Promise<void> {
  if (!chromiumPath()) {
    progress('ui: no Chromium, ui.run_page skipped');
    return;
  }
  const { target, server, call, stop } = await startBenchServer('ui-run');
  const browser = await launchBrowser();
  try {
    progress(`ui: a run of ${STEPS} steps of ${PAGES_PER_STEP} pages each`);
    // A tool has at most 200 steps: 200 paginated steps make the thousand pages.
    await call('POST', '/tools', {
      id: 'many-pages',
      steps: Array.from({ length: STEPS }, (_, i) => ({
        id: `step-${i}`,
        config: {
          url: `${target.url}/items`,
          queryParams: { offset: '<<offset>>', limit: '<<limit>>' },
          pagination: { type: 'offsetBased', pageSize: '10' },
        },
      })),
    });
    // Live: the events of all steps and pages stream into the page while the run goes.
    const liveWorst: number[] = [];
    const ready: number[] = [];
    const showAll: number[] = [];
    const worstFrame: number[] = [];
    const p95Frame: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = (await call('POST', '/tools/many-pages/run', { options: { async: true } })) as {
        runId: string;
      };
      const live = await openSignedIn(browser, `${server.url}/runs/${started.runId}`);
      liveWorst.push(Math.max(0, ...(await framesUntilFinished(live.page))));
      await live.close();

      // Stored: the finished run's page, every step shown, scrolled from top to bottom.
      const { page, close } = await openSignedIn(browser, `${server.url}/runs/${started.runId}`);
      ready.push(await markTime(page, 'kubeglue:run-page-ready'));
      const clicked = Date.now();
      const more = page.getByRole('button', { name: /more steps of/ });
      while ((await more.count()) > 0) await more.first().click();
      await page
        .locator('.step')
        .nth(STEPS - 1)
        .waitFor();
      showAll.push(Date.now() - clicked);
      const frames = await scrollFrames(page);
      worstFrame.push(Math.max(...frames));
      p95Frame.push(percentile(frames, 95));
      await close();
    }
    emit({
      bench: 'ui.run_page',
      steps: STEPS,
      pages: STEPS * PAGES_PER_STEP,
      liveWorstFrameMs: round(percentile(liveWorst, 50), 1),
      readyP50Ms: round(percentile(ready, 50), 0),
      allStepsShownP50Ms: round(percentile(showAll, 50), 0),
      scrollFrameP95Ms: round(percentile(p95Frame, 50), 1),
      scrollWorstFrameMs: round(percentile(worstFrame, 50), 1),
    });
  } finally {
    await browser.close();
    await stop();
  }
}

export async function benchUi(): Promise<void> {
  await benchUiFirstLoad();
  await benchUiRunPage();
}

if (import.meta.main) await benchUi();
