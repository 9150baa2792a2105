/**
 * The documentation's examples run as written. In the pages listed in PAGES, every fenced block whose
 * info string is `sh runnable` runs, in page order, in `sh` against a started server (the embedded deployment, fresh for each page) and the example target (examples/target.ts), with
 * `$KEY` and `$API` set as the walkthrough sets them, and the CLI's KUBEGLUE_URL and KUBEGLUE_API_KEY as
 * docs/cli.md sets them. What it prints must match the next fenced block, whose info string holds
 * `output`: there `…` stands for any text and whitespace is free (outputs are shown formatted, curl
 * prints them compact). The target's documented address, http://127.0.0.1:8090, is replaced by the one
 * it got, and so are the documented addresses of the data servers some pages call (PAGE_SERVERS: Redis,
 * the run's MariaDB with the database and user the page names, the GraphQL server, docs/smb.md's Samba). Pages listed in AFTER run again where
 * another page was followed first. The conventions are described in docs/developers/testing.md.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleTarget } from '../../../examples/target.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi } from '../../support/embedded.ts';
import { startGraphqlServer } from '../../support/graphql-server.ts';
import { createMariaDbDatabase, dropMariaDbDatabase, providedMariaDb } from '../../support/mariadb.ts';
import { startOtlpCollector } from '../../support/otlp-collector.ts';
import { REDIS_PASSWORD, redisServerMissing, startRedisServer } from '../../support/redis-server.ts';
import { sambaMissing, startDocsSamba } from '../../support/samba.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const PAGES = [
  'README.md',
  'docs/tools.md',
  'docs/authoring.md',
  'docs/mcp.md',
  'docs/state.md',
  'docs/schedules.md',
  'docs/cli.md',
  'docs/redis.md',
  'docs/mysql.md',
  'docs/graphql.md',
  'docs/smb.md',
  'docs/operations.md',
];
const DOCUMENTED_TARGET = 'http://127.0.0.1:8090';
/** docs/redis.md's server, replaced by a started one's address and password. */
const DOCUMENTED_REDIS = { address: '127.0.0.1:6379', password: 'cache-password' };
/** docs/mysql.md's server, replaced by the run's MariaDB; the database and login the page names. */
const DOCUMENTED_MYSQL = {
  address: '127.0.0.1:3306',
  name: 'shop',
  user: 'shop_app',
  password: 'shop-secret',
};
/** docs/graphql.md's server (`npm run example-graphql`), replaced by a started one's address. */
const DOCUMENTED_GRAPHQL = 'http://127.0.0.1:8091';
/** docs/operations.md's trace receiver (`npm run example-otlp`), replaced by a started one's address. */
const DOCUMENTED_OTLP = 'http://127.0.0.1:4318';

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

/** A data server a page's examples call, started for that page's suite. */
interface PageServer {
  /** The page's documented address (and password) replaced by the started server's. */
  substitute(text: string): string;
  /** Settings the page starts kubeglue with to use the server, if any. */
  env?: Record<string, string>;
  stop(): Promise<void>;
}

/** Pages whose examples need a data server besides the example target: why it cannot start, and how it does. */
const PAGE_SERVERS: Record<string, { missing(): string | undefined; start(): Promise<PageServer> }> = {
  'docs/redis.md': {
    missing: redisServerMissing,
    async start() {
      const redis = await startRedisServer();
      return {
        substitute: (text) =>
          text
            .replaceAll(DOCUMENTED_REDIS.address, `127.0.0.1:${redis.port}`)
            .replaceAll(DOCUMENTED_REDIS.password, REDIS_PASSWORD),
        stop: () => redis.stop(),
      };
    },
  },
  'docs/mysql.md': {
    missing: () =>
      providedMariaDb() ? undefined : 'no MariaDB server in this run (test/support/mariadb.ts)',
    async start() {
      const { address, ...login } = DOCUMENTED_MYSQL;
      const database = await createMariaDbDatabase(
        providedMariaDb() as NonNullable<ReturnType<typeof providedMariaDb>>,
        login,
      );
      return {
        substitute: (text) => text.replaceAll(address, `127.0.0.1:${database.server.port}`),
        stop: () => dropMariaDbDatabase(database),
      };
    },
  },
  'docs/graphql.md': {
    missing: () => undefined,
    async start() {
      const graphql = await startGraphqlServer();
      return {
        substitute: (text) => text.replaceAll(DOCUMENTED_GRAPHQL, graphql.url),
        stop: () => graphql.stop(),
      };
    },
  },
  'docs/operations.md': {
    missing: () => undefined,
    async start() {
      const collector = await startOtlpCollector(0);
      return {
        substitute: (text) => text.replaceAll(DOCUMENTED_OTLP, collector.url),
        // As the page starts kubeglue for its traces example.
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '200' },
        stop: () => collector.stop(),
      };
    },
  },
  'docs/smb.md': {
    missing: sambaMissing,
    async start() {
      const samba = await startDocsSamba();
      return {
        substitute: (text) => text.replaceAll(samba.documented, samba.actual),
        stop: () => samba.stop(),
      };
    },
  },
};

/** Why the page's data server cannot start here (its suite skips), or undefined. */
const serverMissing = (page: string) => PAGE_SERVERS[page]?.missing();

/** A started server, example target and the page's data server for one suite, and how its examples run. */
function useExampleServer(page: string) {
  const started: {
    api?: TestApi;
    target?: Awaited<ReturnType<typeof startExampleTarget>>;
    data?: PageServer | undefined;
  } = {};
  const needs = serverMissing(page) === undefined ? PAGE_SERVERS[page] : undefined;
  beforeAll(async () => {
    started.data = await needs?.start();
    [started.api, started.target] = await Promise.all([
      startTestApi(started.data?.env),
      startExampleTarget(0),
    ]);
  });
  afterAll(async () => {
    await Promise.all([
      started.api?.stop(),
      new Promise((resolve) => (started.target ? started.target.server.close(resolve) : resolve(undefined))),
      started.data?.stop(),
    ]);
  });
  const here = (text: string) => {
    const local = text.replaceAll(DOCUMENTED_TARGET, started.target?.url ?? DOCUMENTED_TARGET);
    return started.data ? started.data.substitute(local) : local;
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
  const run = useExampleServer(page);

  it('has examples', () => {
    expect(list.length).toBeGreaterThan(3);
  });

  it.skipIf(serverMissing(page)).each(list.map((example) => [`${page}:${example.line}`, example] as const))(
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
