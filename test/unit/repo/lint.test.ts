/**
 * `npm run lint`, the first thing `npm test` and CI run, fails on a Biome warning as on an error: a warning
 * let through prints on every `npm test` of everyone after, until nobody reads the output any more.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');
const BIOME = join(REPO, 'node_modules', '.bin', 'biome');
const run = promisify(execFile);

/** A stylesheet the recommended rules warn about (a selector after a more specific one), and no more. */
const WARNED_CSS = '.form p {\n  color: red;\n}\np {\n  color: blue;\n}\n';

interface Outcome {
  code: number;
  output: string;
}

async function biome(args: string[], cwd: string): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(BIOME, args, { cwd });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('npm run lint', () => {
  let dir: string;
  let lintArgs: string[];

  beforeAll(async () => {
    const scripts = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    const [command, ...args] = (scripts.lint ?? '').split(/\s+/);
    expect(command).toBe('biome');
    lintArgs = args;
    // The project's rules on a folder of its own: Biome's VCS integration takes only paths inside the
    // checkout, and a file there would be the checkout's own.
    dir = await mkdtemp(join(tmpdir(), 'kubeglue-lint-'));
    const config = JSON.parse(await readFile(join(REPO, 'biome.json'), 'utf8')) as Record<string, unknown>;
    delete config.$schema;
    config.vcs = { enabled: false };
    config.files = { includes: ['*.css'] };
    await writeFile(join(dir, 'biome.json'), JSON.stringify(config));
    // Laid out as Biome lays out JSON, so that only the probe is judged.
    expect((await biome(['format', '--write', 'biome.json'], dir)).code).toBe(0);
    await writeFile(join(dir, 'probe.css'), WARNED_CSS);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails on a file that has only a warning', async () => {
    // Plain `biome check` lets the probe through with a warning: it holds a warning and nothing worse.
    const plain = await biome(['check', '.'], dir);
    expect(plain.output).toContain('lint/style/noDescendingSpecificity');
    expect(plain.code).toBe(0);

    const lint = await biome(lintArgs, dir);
    expect(lint.output).toContain('lint/style/noDescendingSpecificity');
    expect(lint.code).not.toBe(0);
  });
});
