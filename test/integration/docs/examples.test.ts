/**
 * The documentation's examples run as written. In the pages listed in PAGES, every fenced block whose
 * info string is `sh runnable` runs, in page order, in `sh` against a started server (the embedded deployment, fresh for each page) and the example target (examples/target.ts), with
 * `$KEY` and `$API` set as the walkthrough sets them, and the CLI's KUBEGLUE_URL and KUBEGLUE_API_KEY as
 * docs/cli.md sets them. What it prints must match the next fenced block, whose info string holds
 * `output`: there `…` stands for any text and whitespace is free (outputs are shown formatted, curl
 * prints them compact). The target's documented address, http://127.0.0.1:8090, is replaced by the one
 * it got. A page that documents a MySQL server (docs/mysql.md) gets the run's MariaDB with the database and
 * user the page names, and its documented address, 127.0.0.1:3306, is replaced by the server's. The
 * conventions are described in docs/developers/testing.md.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleTarget } from '../../../examples/target.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi } from '../../support/embedded.ts';
import {
  createMariaDbDatabase,
  dropMariaDbDatabase,
  mariadbSkip,
  providedMariaDb,
  type TestMariaDbDatabase,
} from '../../support/mariadb.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const PAGES = [
  'README.md',
  'docs/tools.md',
  'docs/mcp.md',
  'docs/state.md',
  'docs/schedules.md',
  'docs/cli.md',
  'docs/mysql.md',
];
const DOCUMENTED_TARGET = 'http://127.0.0.1:8090';
/** The pages that need a MySQL server, with the database and login they name. */
const MYSQL_PAGES: Record<string, { name: string; user: string; password: string }> = {
  'docs/mysql.md': { name: 'shop', user: 'shop_app', password: 'shop-secret' },
};
const DOCUMENTED_MYSQL = '127.0.0.1:3306';

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

describe.each(PAGES)('the runnable examples of %s', (page) => {
  const list = examples(page);
  const mysql = MYSQL_PAGES[page];
  let api: TestApi;
  let target: Awaited<ReturnType<typeof startExampleTarget>>;
  let database: TestMariaDbDatabase | undefined;

  beforeAll(async () => {
    if (mysql && mariadbSkip()) return;
    [api, target, database] = await Promise.all([
      startTestApi(),
      startExampleTarget(0),
      mysql
        ? createMariaDbDatabase(providedMariaDb() as NonNullable<ReturnType<typeof providedMariaDb>>, mysql)
        : undefined,
    ]);
  });
  afterAll(async () => {
    await Promise.all([
      api?.stop(),
      target && new Promise((resolve) => target.server.close(resolve)),
      database && dropMariaDbDatabase(database),
    ]);
  });

  it('has examples', () => {
    expect(list.length).toBeGreaterThan(3);
  });

  it
    .skipIf(mysql !== undefined && mariadbSkip())
    .each(list.map((example) => [`${page}:${example.line}`, example] as const))(
    '%s prints what the page says',
    async (_where, example) => {
      const here = (text: string) => {
        const local = text.replaceAll(DOCUMENTED_TARGET, target.url);
        return database ? local.replaceAll(DOCUMENTED_MYSQL, `127.0.0.1:${database.server.port}`) : local;
      };
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
      expect(stdout.trim()).toMatch(outputPattern(here(example.output)));
    },
  );
});
