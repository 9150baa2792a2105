/**
 * The documentation's examples run as written. In the pages listed in PAGES, every fenced block whose
 * info string is `sh runnable` runs, in page order, in `sh` against a started server (the embedded deployment, fresh for each page) and the example target (examples/target.ts), with
 * `$KEY` and `$API` set as the walkthrough sets them, and the CLI's KUBEGLUE_URL and KUBEGLUE_API_KEY as
 * docs/cli.md sets them. What it prints must match the next fenced block, whose info string holds
 * `output`: there `…` stands for any text and whitespace is free (outputs are shown formatted, curl
 * prints them compact). The target's documented address, http://127.0.0.1:8090, is replaced by the one
 * it got; a page that needs a server of its own (PAGE_SERVERS: docs/smb.md's Samba) gets one started for
 * it, whose documented address is replaced the same way. Pages listed in AFTER run again where another
 * page was followed first. The conventions are described in docs/developers/testing.md.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleTarget } from '../../../examples/target.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi } from '../../support/embedded.ts';
import { sambaMissing, startDocsSamba } from '../../support/samba.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const PAGES = [
  'README.md',
  'docs/tools.md',
  'docs/mcp.md',
  'docs/state.md',
  'docs/schedules.md',
  'docs/cli.md',
  'docs/smb.md',
];
const DOCUMENTED_TARGET = 'http://127.0.0.1:8090';

/** A server a page's examples need besides the example target: the address the page shows, and the real one. */
interface PageServer {
  documented: string;
  actual: string;
  stop(): Promise<void>;
}

/** Pages that need a server of their own, and why they cannot run here when they cannot. */
const PAGE_SERVERS: Record<string, { start(): Promise<PageServer>; missing(): string | undefined }> = {
  'docs/smb.md': { start: startDocsSamba, missing: sambaMissing },
};

interface Fence {
  info: string;
  body: string;
  line: number;
}

interface Example {
  line: number;
  script: string;
  output: string;
}

function fences(markdown: string): Fence[] {
  const found: Fence[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]?.match(/^```(.*)$/);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] as string);
    found.push({ info: (open[1] ?? '').trim(), body: body.join('\n'), line: start + 1 });
  }
  return found;
}

function examples(page: string): Example[] {
  const all = fences(readFileSync(join(REPO, page), 'utf8'));
  const words = (fence: Fence | undefined) => fence?.info.split(/\s+/) ?? [];
  return all.flatMap((fence, index) => {
    if (!words(fence).includes('runnable')) return [];
    const next = all[index + 1];
    if (!words(next).includes('output')) {
      throw new Error(`${page}:${fence.line}: a runnable block must be followed by its output block`);
    }
    return [{ line: fence.line, script: fence.body, output: (next as Fence).body }];
  });
}

/** `…` matches any text, a run of whitespace any whitespace or none; the rest literally. */
function outputPattern(expected: string): RegExp {
  const parts = expected
    .trim()
    .split(/(…|\s+)/)
    .map((part) => {
      if (part === '…') return '[\\s\\S]*?';
      if (/^\s+$/.test(part)) return '\\s*';
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    });
  return new RegExp(`^${parts.join('')}$`);
}

/**
 * Pages whose examples a reader may run on the server where they followed another page first (docs/cli.md
 * says it runs against the walkthrough's system): they must print the same there. The earlier page's
 * examples run first; their own outputs are checked by their page's suite.
 */
const AFTER: ReadonlyArray<readonly [page: string, earlier: string]> = [['docs/cli.md', 'README.md']];

/** A started server and example target for one suite, and how its examples run against them. */
function useExampleServer(page: string) {
  const started: {
    api?: TestApi;
    target?: Awaited<ReturnType<typeof startExampleTarget>>;
    extra?: PageServer | undefined;
  } = {};
  beforeAll(async () => {
    [started.api, started.target, started.extra] = await Promise.all([
      startTestApi(),
      startExampleTarget(0),
      PAGE_SERVERS[page]?.start(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([
      started.api?.stop(),
      started.extra?.stop(),
      new Promise((resolve) => (started.target ? started.target.server.close(resolve) : resolve(undefined))),
    ]);
  });
  const here = (text: string) => {
    const extra = started.extra;
    const local = text.replaceAll(DOCUMENTED_TARGET, started.target?.url ?? DOCUMENTED_TARGET);
    return extra ? local.replaceAll(extra.documented, extra.actual) : local;
  };
  /** Runs an example's script as the page's reader would, and resolves with what it printed. */
  return async (example: Example): Promise<{ printed: string; expected: RegExp }> => {
    const api = started.api as TestApi;
    const { stdout } = await promisify(execFile)('sh', ['-e', '-c', here(example.script)], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        KEY: TEST_ADMIN_KEY,
        API: `${api.url}/v1`,
        KUBEGLUE_URL: `${api.url}/v1`,
        KUBEGLUE_API_KEY: TEST_ADMIN_KEY,
      },
      timeout: 25_000,
    });
    return { printed: stdout.trim(), expected: outputPattern(here(example.output)) };
  };
}

describe.each(PAGES)('the runnable examples of %s', (page) => {
  const list = examples(page);
  if (PAGE_SERVERS[page]?.missing()) {
    it.skip(`needs ${PAGE_SERVERS[page]?.missing()}`, () => {});
    return;
  }
  const run = useExampleServer(page);

  it('has examples', () => {
    expect(list.length).toBeGreaterThan(3);
  });

  it.each(list.map((example) => [`${page}:${example.line}`, example] as const))(
    '%s prints what the page says',
    async (_where, example) => {
      const { printed, expected } = await run(example);
      expect(printed).toMatch(expected);
    },
  );
});

describe.each(AFTER)('the runnable examples of %s, on the server where %s was followed', (page, earlier) => {
  const run = useExampleServer(page);

  beforeAll(async () => {
    for (const example of examples(earlier)) await run(example);
  }, 120_000);

  it.each(examples(page).map((example) => [`${page}:${example.line}`, example] as const))(
    '%s prints what the page says',
    async (_where, example) => {
      const { printed, expected } = await run(example);
      expect(printed).toMatch(expected);
    },
  );
});
