/**
 * The README's start command, `bin/start`, installs what is missing or stale, builds what changed, and then
 * replaces itself with the pinned Node 24 running the embedded deployment: the process it leaves is that
 * node itself, with no npm or shell beside it (an `npm start` keeps an npm process of ~35 MiB resident for
 * the server's whole life).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installDifference } from '../../../bin/prepare.ts';
import { callApi, readyUrl, serverProcessEnv, TEST_ADMIN_KEY } from '../../support/embedded.ts';

const REPO = resolve(import.meta.dirname, '../../..');

/**
 * How this machine reaches the npm registry (its CA bundle and proxy), as the user's shell has it: without
 * them every fetch of the copy's `npm ci` fails TLS and is retried for minutes before npm falls back to
 * its cache.
 */
const REGISTRY_ENV = Object.fromEntries(
  ['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy']
    .map((name) => [name, process.env[name]])
    .filter((entry): entry is [string, string] => entry[1] !== undefined),
);

describe('bin/start, the README start command', () => {
  let server: ChildProcess | undefined;
  let dataDir: string | undefined;

  afterAll(async () => {
    server?.kill('SIGKILL');
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('builds, then serves from the pinned node in its own process, leaving no npm or shell running', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-start-'));
    const child = spawn(join(REPO, 'bin/start'), [], {
      cwd: tmpdir(),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: serverProcessEnv(dataDir, { HOME: process.env.HOME ?? '', KUBEGLUE_HOST: '127.0.0.1' }),
    });
    server = child;
    const { url, output } = await readyUrl(child);
    const tools = await callApi(url, TEST_ADMIN_KEY, 'GET', '/v1/tools');
    expect(tools.status, output()).toBe(200);

    // The pid bin/start was started as is now the pinned node, compiled entry point and flags included.
    expect(await realpath(`/proc/${child.pid}/exe`)).toBe(
      await realpath(join(REPO, 'node_modules/.bin/node')),
    );
    const argv = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0');
    expect(argv).toContain('--no-node-snapshot');
    expect(argv).toContain(join(REPO, 'dist/bin/kubeglue.js'));
    expect(argv).toContain('embedded');
  }, 300_000);
});

/**
 * bin/start in a copy of the checkout, as a user meets it over time: the first start installs (its
 * node_modules does not match the lock) and builds; a restart with nothing changed does neither; an edit
 * rebuilds only the part of dist/ it belongs to. node_modules is copied as hard links (npm ci in the copy
 * replaces them; the checkout's own stay as they are).
 */
describe('bin/start in a fresh copy of the checkout', () => {
  let copy: string;
  let dataDir: string;
  let running: ChildProcess | undefined;

  beforeAll(async () => {
    copy = await mkdtemp(join(tmpdir(), 'kubeglue-start-copy-'));
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-start-copy-data-'));
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: REPO,
      encoding: 'utf8',
    })
      .split('\0')
      .filter((file) => file !== '' && existsSync(join(REPO, file)));
    for (const file of files) await cp(join(REPO, file), join(copy, file), { preserveTimestamps: true });
    execFileSync('cp', ['-al', join(REPO, 'node_modules'), join(copy, 'node_modules')]);
    // As if the lock had moved on since this node_modules was installed: npm's record of the install
    // lacks a package. Replaced, not written through: the file is a hard link to the checkout's.
    const record = join(copy, 'node_modules', '.package-lock.json');
    const installed = JSON.parse(await readFile(record, 'utf8')) as { packages: Record<string, unknown> };
    delete installed.packages['node_modules/yaml'];
    await rm(record);
    await writeFile(record, JSON.stringify(installed));
  }, 120_000);

  afterAll(async () => {
    if (running?.pid !== undefined && running.exitCode === null) {
      process.kill(-running.pid, 'SIGKILL');
      await new Promise((resolve) => running?.once('exit', resolve));
    }
    await rm(copy, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  /** bin/start of the copy until it is ready: what it printed before the server's first line, and the server. */
  async function startCopy(): Promise<{ url: string; before: string; readyMs: number }> {
    const started = Date.now();
    const child = spawn(join(copy, 'bin/start'), [], {
      cwd: tmpdir(),
      // Its own process group: a test that gives up stops the npm ci or tsc it started too.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: serverProcessEnv(dataDir, { HOME: process.env.HOME ?? '', ...REGISTRY_ENV }),
    });
    running = child;
    const { url, output } = await readyUrl(child);
    const readyMs = Date.now() - started;
    const tools = await callApi(url, TEST_ADMIN_KEY, 'GET', '/v1/tools');
    expect(tools.status, output()).toBe(200);
    // What bin/start and bin/prepare.ts said: the lines before the server's JSON log.
    const before = output()
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('{'))
      .join('\n');
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    running = undefined;
    return { url, before, readyMs };
  }

  const mtime = async (file: string) => (await stat(join(copy, file))).mtimeMs;
  const DIST = ['dist/bin/kubeglue.js', 'dist/config/server.js', 'dist/ui/index.html'];

  it('installs with npm ci when node_modules does not match package-lock.json, builds, then serves', async () => {
    const first = await startCopy();
    expect(first.before).toContain(
      'node_modules does not match package-lock.json: node_modules/yaml is not installed',
    );
    expect(first.before).toContain('bin/start: installing the dependencies and the pinned Node 24 (npm ci');
    expect(first.before).toContain('compiling the server into dist/');
    expect(first.before).toContain('bundling the dashboard into dist/ui');
    expect(installDifference(copy)).toBeUndefined();
    // npm ci and a whole build: minutes on a loaded 2-core machine.
  }, 1_800_000);

  it('installs and builds nothing when nothing changed', async () => {
    const before = await Promise.all([...DIST, 'node_modules/.package-lock.json'].map(mtime));
    const again = await startCopy();
    expect(again.before).toBe('');
    expect(await Promise.all([...DIST, 'node_modules/.package-lock.json'].map(mtime))).toEqual(before);
    console.log(`bin/start with nothing changed: ready in ${again.readyMs} ms`);
  }, 120_000);

  it('rebuilds the server after a source file changed, the dashboard after one of its files changed', async () => {
    await appendFile(join(copy, 'config', 'server.ts'), '// edited after the last build\n');
    const [ui] = await Promise.all(['dist/ui/index.html'].map(mtime));
    const edited = await startCopy();
    expect(edited.before).toBe('compiling the server into dist/ (tsc, incremental)');
    expect(await readFile(join(copy, 'dist', 'config', 'server.js'), 'utf8')).toContain(
      '// edited after the last build',
    );
    expect(await mtime('dist/ui/index.html')).toBe(ui);

    await appendFile(join(copy, 'ui', 'styles.css'), '/* edited after the last build */\n');
    const [server] = await Promise.all(['dist/config/server.js'].map(mtime));
    const styled = await startCopy();
    expect(styled.before).toMatch(/^bundling the dashboard into dist\/ui\nui: built /);
    expect(await mtime('dist/config/server.js')).toBe(server);
  }, 300_000);
});
