/**
 * bin/prepare.ts's two decisions for bin/start: whether node_modules holds what package-lock.json asks for
 * (else `npm ci`), and which part of dist/ its inputs changed (else nothing is built).
 */
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildInputs, installDifference } from '../../../bin/prepare.ts';

const REPO = resolve(import.meta.dirname, '..', '..', '..');
const dirs: string[] = [];

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const LOCK = {
  name: 'app',
  lockfileVersion: 3,
  packages: {
    '': { name: 'app', dependencies: { left: '^1.0.0' } },
    'node_modules/left': { version: '1.0.0', resolved: 'https://r/left-1.0.0.tgz', integrity: 'sha512-a' },
    'node_modules/pad': { version: '2.0.0', resolved: 'https://r/pad-2.0.0.tgz', integrity: 'sha512-b' },
    // Another platform's binary: npm leaves it out here.
    'node_modules/@tool/cli-darwin-arm64': { version: '3.0.0', optional: true, os: ['darwin'] },
  },
};

/** A project with that lock and node_modules as npm recorded its install (without the optional one). */
async function project(installed: Record<string, unknown> | undefined): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-prepare-'));
  dirs.push(dir);
  await writeFile(join(dir, 'package-lock.json'), JSON.stringify(LOCK));
  if (installed) {
    await mkdir(join(dir, 'node_modules'));
    await writeFile(
      join(dir, 'node_modules', '.package-lock.json'),
      JSON.stringify({ name: 'app', lockfileVersion: 3, packages: installed }),
    );
  }
  return dir;
}

const asInstalled = {
  'node_modules/left': LOCK.packages['node_modules/left'],
  'node_modules/pad': LOCK.packages['node_modules/pad'],
};

describe('whether node_modules matches package-lock.json', () => {
  it('matches what npm installed from the lock, other platforms left out', async () => {
    expect(installDifference(await project(asInstalled))).toBeUndefined();
  });

  it('needs an install when nothing was installed', async () => {
    expect(installDifference(await project(undefined))).toMatch(/^nothing is installed yet/);
  });

  it('needs an install when the lock moved a package to another version', async () => {
    const dir = await project({
      ...asInstalled,
      'node_modules/pad': { ...asInstalled['node_modules/pad'], version: '1.9.0' },
    });
    expect(installDifference(dir)).toBe('node_modules/pad is 1.9.0, package-lock.json wants 2.0.0');
  });

  it('needs an install when the lock added a package, or dropped one', async () => {
    expect(installDifference(await project({ 'node_modules/left': asInstalled['node_modules/left'] }))).toBe(
      'node_modules/pad is not installed',
    );
    expect(
      installDifference(await project({ ...asInstalled, 'node_modules/gone': { version: '1.0.0' } })),
    ).toBe('node_modules/gone is installed but not in package-lock.json');
  });

  it('matches in this checkout, where npm ci installed node_modules', () => {
    expect(installDifference(REPO)).toBeUndefined();
  });
});

describe('what a build depends on', () => {
  async function copyOfInputs(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-prepare-inputs-'));
    dirs.push(dir);
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      await writeFile(join(dir, file), await readFile(join(REPO, file)));
    }
    await mkdir(join(dir, 'runs'));
    await writeFile(join(dir, 'runs', 'a.ts'), 'export const a = 1;\n');
    await mkdir(join(dir, 'contract'));
    await writeFile(join(dir, 'contract', 'shape.ts'), 'export type Shape = { a: number };\n');
    await mkdir(join(dir, 'ui'));
    await writeFile(join(dir, 'ui', 'styles.css'), 'body { margin: 0 }\n');
    return dir;
  }

  it('changes with the content of a source file, not with its time stamp', async () => {
    const dir = await copyOfInputs();
    const before = buildInputs(dir);
    await utimes(join(dir, 'runs', 'a.ts'), new Date(), new Date(Date.now() + 60_000));
    expect(buildInputs(dir)).toEqual(before);
    await writeFile(join(dir, 'runs', 'a.ts'), 'export const a = 2;\n');
    const edited = buildInputs(dir);
    expect(edited.server).not.toBe(before.server);
    // The dashboard's bundle reads ui/ and contract/ only.
    expect(edited.dashboard).toBe(before.dashboard);
  });

  it('changes when a source file is added or deleted, and the dashboard with its files and contract/', async () => {
    const dir = await copyOfInputs();
    const before = buildInputs(dir);
    await writeFile(join(dir, 'runs', 'b.ts'), 'export const b = 1;\n');
    expect(buildInputs(dir).server).not.toBe(before.server);
    await rm(join(dir, 'runs', 'b.ts'));
    expect(buildInputs(dir)).toEqual(before);
    // A test file is not compiled.
    await writeFile(join(dir, 'runs', 'a.test.ts'), 'export {};\n');
    expect(buildInputs(dir)).toEqual(before);
    await writeFile(join(dir, 'ui', 'styles.css'), 'body { margin: 1px }\n');
    const styled = buildInputs(dir);
    expect(styled.dashboard).not.toBe(before.dashboard);
    expect(styled.server).toBe(before.server);
    await writeFile(join(dir, 'contract', 'shape.ts'), 'export type Shape = { a: string };\n');
    const reshaped = buildInputs(dir);
    expect(reshaped.dashboard).not.toBe(styled.dashboard);
    expect(reshaped.server).not.toBe(styled.server);
  });
});
