/**
 * The README's start command, `bin/start`, builds and then replaces itself with the pinned Node 24 running
 * the embedded deployment: the process it leaves is that node itself, with no npm or shell beside it
 * (an `npm start` keeps an npm process of ~35 MiB resident for the server's whole life).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callApi, readyUrl, TEST_ADMIN_KEY } from '../../support/embedded.ts';

const REPO = resolve(import.meta.dirname, '../../..');

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
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        KUBEGLUE_HOST: '127.0.0.1',
        KUBEGLUE_PORT: '0',
        KUBEGLUE_DATA_DIR: dataDir,
        KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
        KUBEGLUE_WORKERS: '1',
      },
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
