/**
 * Which Node runs what. A checkout's commands run on the Node 24 that `npm ci` installs (the `node` dev
 * dependency): `npx kubeglue` and npm scripts put node_modules/.bin first on PATH. The machine's own Node
 * only runs npm, and may be older (Node 20 here). Played with that older Node, found on PATH outside
 * node_modules, as a user's shell finds it; skipped where the machine has none older.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPILE_CACHE_DIR } from '../../support/cli.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  bin: { kubeglue: string };
  devDependencies: { node: string };
};
const PINNED_MAJOR = Number(/\d+/.exec(manifest.devDependencies.node)?.[0]);

/** PATH as a shell has it without the checkout's node_modules/.bin (which npm scripts put first). */
const HOST_PATH = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => !dir.includes('node_modules'))
  .join(delimiter);

function hostNode(): { path: string; version: string } | undefined {
  for (const dir of HOST_PATH.split(delimiter)) {
    const path = join(dir, 'node');
    if (!existsSync(path)) continue;
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    return { path, version };
  }
  return undefined;
}

const host = hostNode();
const OLDER = host && Number(/^v(\d+)/.exec(host.version)?.[1]) < PINNED_MAJOR ? host : undefined;

describe.skipIf(!OLDER)(`under an older Node than the pinned one (${host?.version ?? 'none found'})`, () => {
  it('`npx kubeglue` runs the CLI without a warning about engines, also at its first call', async () => {
    // A fresh npm cache: the first call links the checkout into npx's cache, where npm checks engines.
    const home = await mkdtemp(join(tmpdir(), 'kubeglue-npx-'));
    try {
      const npx = spawnSync('npx', ['kubeglue', '--version'], {
        cwd: REPO,
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: HOST_PATH,
          HOME: home,
          npm_config_cache: join(home, 'npm-cache'),
          npm_config_offline: 'true',
          npm_config_update_notifier: 'false',
        },
      });
      expect(npx.stderr).toBe('');
      expect(npx.stdout).toBe(`kubeglue ${manifest.version}\n`);
      expect(npx.status).toBe(0);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('the command npx starts, run by that Node, says in one line which Node it needs', () => {
    const run = spawnSync(OLDER?.path as string, [join(REPO, manifest.bin.kubeglue), 'tools'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: HOST_PATH, KUBEGLUE_API_KEY: 'kg_never-sent' },
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `kubeglue needs Node.js ${PINNED_MAJOR}, and this is Node.js ${OLDER?.version}: \`npm ci\` installs ` +
        `Node.js ${PINNED_MAJOR} into node_modules, and \`npx kubeglue\` runs on it (docs/cli.md#installing)\n`,
    );
  });
});

describe('on the pinned Node', () => {
  it('the command npx starts runs the CLI', () => {
    const run = spawnSync(process.execPath, [join(REPO, manifest.bin.kubeglue), '--version'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(`kubeglue ${manifest.version}\n`);
  });

  /** `kubeglue --version` through the command npx starts, with env beside PATH; what the run printed. */
  function versionWith(env: Record<string, string>) {
    return spawnSync(process.execPath, [join(REPO, manifest.bin.kubeglue), '--version'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env.PATH ?? '', ...env },
    });
  }

  it("keeps the compiled sources in Node's compile cache for the next start, unless it is turned off", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-compile-cache-'));
    try {
      const cache = join(dir, 'cache');
      const cached = versionWith({ NODE_COMPILE_CACHE: cache });
      expect(cached.stderr).toBe('');
      expect(cached.stdout).toBe(`kubeglue ${manifest.version}\n`);
      // One folder per Node version, holding an entry per compiled module.
      const [versionDir, ...others] = readdirSync(cache);
      expect(others).toEqual([]);
      expect(readdirSync(join(cache, versionDir as string)).length).toBeGreaterThan(10);

      // Without NODE_COMPILE_CACHE: in the checkout, not in a temp folder other users share (Node's own
      // debug output names the folder; the test run shares that cache, so it is not removed to look).
      const checkout = versionWith({ NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
      expect(checkout.stdout).toBe(`kubeglue ${manifest.version}\n`);
      expect(checkout.stderr).toContain(`resolved path ${COMPILE_CACHE_DIR} + `);

      const off = join(dir, 'off');
      const uncached = versionWith({ NODE_COMPILE_CACHE: off, NODE_DISABLE_COMPILE_CACHE: '1' });
      expect(uncached.stdout).toBe(`kubeglue ${manifest.version}\n`);
      expect(existsSync(off)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
