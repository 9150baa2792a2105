/**
 * What bin/start does before it starts the server, so that a start with nothing changed is quick:
 *
 * - node_modules must match package-lock.json, as npm itself recorded the install it made
 *   (node_modules/.package-lock.json). When it does not (no install yet, a pulled lock, an install of
 *   another branch), this exits with INSTALL_NEEDED and says why; bin/start then runs `npm ci` and calls
 *   this again. Telling it costs two JSON reads, where `npm ci` would cost a minute.
 * - dist/ is rebuilt only where its inputs changed since the build that made it: the compiled server when
 *   a file tsc reads changed (tsc itself then rebuilds incrementally, from dist/.tsbuildinfo), the
 *   dashboard when a file of its bundle changed. The inputs are fingerprinted by content (a `touch` or a
 *   fresh copy is no change; an edit, an added or a deleted file is) and the fingerprints are written to
 *   dist/.build-inputs.json after each part built. `npm run build` builds everything regardless.
 *
 * `node bin/prepare.ts` (what bin/start runs): both, in that order; `node bin/prepare.ts installed`: the
 * first only. Exit codes: 0 ready, INSTALL_NEEDED, 1 a build failed (its output went to the terminal).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

export const INSTALL_NEEDED = 3;

const ROOT = resolve(import.meta.dirname, '..');

interface LockEntry {
  version?: string;
  optional?: boolean;
  [field: string]: unknown;
}

interface Lockfile {
  packages?: Record<string, LockEntry>;
}

function readLock(path: string): Lockfile | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Lockfile;
  } catch {
    return undefined;
  }
}

/**
 * Why node_modules does not hold what package-lock.json asks for, or undefined when it does. npm records
 * every install it makes in node_modules/.package-lock.json with the lock's own entries; optional packages
 * of other platforms (biome's, esbuild's for macOS) are absent there, any other difference is a change.
 */
export function installDifference(root: string = ROOT): string | undefined {
  const wanted = readLock(join(root, 'package-lock.json'))?.packages;
  if (!wanted) return 'package-lock.json cannot be read';
  const installed = readLock(join(root, 'node_modules', '.package-lock.json'))?.packages;
  if (!installed) return 'nothing is installed yet (no node_modules/.package-lock.json)';
  for (const [path, entry] of Object.entries(wanted)) {
    // '': the project itself, which is never installed into node_modules.
    if (path === '') continue;
    const have = installed[path];
    if (!have) {
      if (entry.optional === true) continue;
      return `${path} is not installed`;
    }
    if (!isDeepStrictEqual(have, entry)) {
      return have.version === entry.version
        ? `${path} is installed differently than package-lock.json says`
        : `${path} is ${have.version ?? 'installed'}, package-lock.json wants ${entry.version ?? 'another'}`;
    }
  }
  const extra = Object.keys(installed).find((path) => !(path in wanted));
  return extra ? `${extra} is installed but not in package-lock.json` : undefined;
}

/** The folders tsc compiles, from tsconfig.build.json (its one source). */
function compiledFolders(root: string): string[] {
  const config = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  return config.include;
}

function filesUnder(root: string, folder: string, keep: (name: string) => boolean): string[] {
  const dir = join(root, folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && keep(entry.name))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

/** A hash of the files' names and contents (sorted: the order readdir gives does not matter). */
function fingerprint(root: string, files: string[]): string {
  const hash = createHash('sha256');
  for (const file of [...new Set(files)].sort()) {
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(root, file)))
      .update('\0');
  }
  return hash.digest('hex');
}

const SOURCE = /\.(ts|tsx|mts|cts|json)$/;

/** The inputs of each part of dist/: what the compiler reads, what the dashboard's bundle reads. */
export function buildInputs(root: string = ROOT): { server: string; dashboard: string } {
  // The lock stands for the compiler's, esbuild's and the type packages' versions.
  const shared = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
  const compiled = compiledFolders(root).flatMap((folder) =>
    filesUnder(root, folder, (name) => SOURCE.test(name) && !name.endsWith('.test.ts')),
  );
  const dashboard = [
    ...filesUnder(root, 'ui', () => true),
    ...filesUnder(root, 'contract', (n) => SOURCE.test(n)),
  ];
  return {
    server: fingerprint(root, [...shared, ...compiled]),
    dashboard: fingerprint(root, [...shared, ...dashboard]),
  };
}

type Built = Partial<Record<keyof ReturnType<typeof buildInputs>, string>>;

const STAMP = join('dist', '.build-inputs.json');

function readStamp(root: string): Built {
  try {
    return JSON.parse(readFileSync(join(root, STAMP), 'utf8')) as Built;
  } catch {
    return {};
  }
}

function run(root: string, args: string[]): boolean {
  return spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' }).status === 0;
}

/**
 * Builds the parts of dist/ whose inputs changed since they were last built; what it builds it says
 * (nothing when nothing changed). The fingerprints are taken before building, so a file edited while
 * the build runs is built again next time. False when a build failed.
 */
export function buildChanged(root: string = ROOT, say: (line: string) => void = console.error): boolean {
  const inputs = buildInputs(root);
  const built = readStamp(root);
  const record = (part: keyof Built) => {
    writeFileSync(join(root, STAMP), `${JSON.stringify({ ...readStamp(root), [part]: inputs[part] })}\n`);
  };
  // A dist/ without the compiled entry point (deleted by hand) is built again whatever the stamp says.
  const serverBuilt = built.server === inputs.server && existsSync(join(root, 'dist', 'bin', 'kubeglue.js'));
  if (!serverBuilt) {
    say('compiling the server into dist/ (tsc, incremental)');
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [
      tsc,
      '-p',
      'tsconfig.build.json',
      '--incremental',
      '--tsBuildInfoFile',
      'dist/.tsbuildinfo',
    ];
    if (!run(root, args)) return false;
    record('server');
  }
  const dashboardBuilt =
    built.dashboard === inputs.dashboard && existsSync(join(root, 'dist', 'ui', 'index.html'));
  if (!dashboardBuilt) {
    say('bundling the dashboard into dist/ui');
    if (!run(root, [join('ui', 'build.ts')])) return false;
    record('dashboard');
  }
  return true;
}

if (import.meta.main) {
  const difference = installDifference();
  if (difference) {
    console.error(`node_modules does not match package-lock.json: ${difference}`);
    process.exit(INSTALL_NEEDED);
  }
  if (process.argv[2] !== 'installed' && !buildChanged()) process.exit(1);
}
