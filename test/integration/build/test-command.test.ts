/**
 * The README's test command, `npm test` (bin/test): it sets up what the suite needs (test/setup.sh), and the
 * run says which suites skip here and why, before the tests and in the summary (test/support/skip-report.ts).
 *
 * The package step is run with a recording `apt-get` first on PATH: the test must see which apt-get
 * commands the setup runs, and installing Debian packages system-wide is no thing for a test to do.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-test-command-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * test/setup.sh's package step with its list replaced by `packages` and an apt-get that records its
 * arguments (one line per call) and fails its first `failFirst` calls; what it printed and the calls.
 */
async function packageStep(packages: string, failFirst = 0): Promise<{ output: string; calls: string[] }> {
  const bin = await mkdtemp(join(dir, 'bin-'));
  const calls = join(bin, 'calls');
  await writeFile(
    join(bin, 'apt-get'),
    `#!/bin/sh\necho "$*" >> ${calls}\n[ "$(wc -l < ${calls})" -gt ${failFirst} ]\n`,
  );
  await chmod(join(bin, 'apt-get'), 0o755);
  const script = `source test/setup.sh; SETUP_DEBIAN_PACKAGES='${packages}'; setup_all packages`;
  const { stderr } = await run('bash', ['-c', script], {
    cwd: REPO,
    env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME ?? '' },
  });
  const recorded = await readFile(calls, 'utf8').catch(() => '');
  return { output: stderr, calls: recorded.split('\n').filter(Boolean) };
}

// apt-get's options that every call carries (never an interactive question, never a lock race).
const APT = '-o DPkg::Lock::Timeout=900 -qq';

describe('the setup of npm test', () => {
  it('runs no apt-get at all, not even an update, when every package is there', async () => {
    const { output, calls } = await packageStep('\nbash  /bin/sh|bash  the shell\ncoreutils  ls  everyone\n');
    expect(calls).toEqual([]);
    expect(output).toMatch(/^test setup: done in \d+ s\n$/);
  });

  it('installs exactly the missing packages in one call, without an update while the lists serve', async () => {
    const { output, calls } = await packageStep(
      '\nbash  /bin/sh  the shell\nredis-server  /nonexistent/redis-server  the Redis tests\nsamba  env:KUBEGLUE_NO_SUCH_VARIABLE|/nonexistent/smbd  the SMB tests\n',
    );
    expect(calls).toEqual([`${APT} install -y --no-install-recommends redis-server samba`]);
    expect(output).toContain('test setup: installing redis-server samba (Debian)');
  });

  it('updates the package lists once when the install fails on them, then installs again', async () => {
    const { calls } = await packageStep('\nmariadb-server  /nonexistent/mariadbd  the MariaDB tests\n', 1);
    expect(calls).toEqual([
      `${APT} install -y --no-install-recommends mariadb-server`,
      `${APT} update`,
      `${APT} install -y --no-install-recommends mariadb-server`,
    ]);
  });

  it('says before the run what it could not install, and goes on', async () => {
    const { output } = await packageStep('\nmariadb-server  /nonexistent/mariadbd  the MariaDB tests\n', 3);
    expect(output).toContain('test setup: not set up here (the run');
    expect(output).toContain('  - apt-get could not install mariadb-server');
  });

  it('is what the README names, npm test runs and .ci/run calls', async () => {
    const readme = await readFile(join(REPO, 'README.md'), 'utf8');
    const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## Walkthrough'));
    const commands = [...quickStart.matchAll(/^(\S+(?: \S+)?)\s+# /gm)].map((m) => m[1]);
    expect(commands).toEqual(['bin/start', 'npm test']);
    const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
      scripts: { test: string };
    };
    expect(pkg.scripts.test).toBe('bin/test');
    const ci = await readFile(join(REPO, '.ci/run'), 'utf8');
    expect(ci.trim().split('\n').at(-1)).toBe('exec npm test');
  });
});

describe("the run's skip report", () => {
  /**
   * vitest on one Kubernetes test file with no control plane: KUBEBUILDER_ASSETS names an empty folder.
   * A file of another suite beside it shows that only the suites that need the part are named.
   */
  async function runWithoutControlPlane(env: Record<string, string> = {}) {
    const vitest = join(REPO, 'node_modules', '.bin', 'vitest');
    const files = ['test/integration/kube/tool-manifest.test.ts', 'test/unit/build/prepare.test.ts'];
    return run(vitest, ['run', ...files], {
      cwd: REPO,
      env: { ...process.env, KUBEBUILDER_ASSETS: dir, CI: '', NO_COLOR: '1', ...env },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      ({ code, stdout, stderr }: { code: number; stdout: string; stderr: string }) => ({
        code,
        stdout,
        stderr,
      }),
    );
  }

  it('names the suites that will skip and why before the tests, and again after the summary', async () => {
    const { code, stdout } = await runWithoutControlPlane();
    expect(code, stdout).toBe(0);
    const line = `  the Kubernetes tests (1 test file): KUBEBUILDER_ASSETS=${dir} has no kube-apiserver`;
    const before = stdout.indexOf('These suites will skip on this machine');
    const summary = stdout.indexOf('Test Files');
    const after = stdout.indexOf('Skipped on this machine:');
    expect(before, stdout).toBeGreaterThanOrEqual(0);
    expect(stdout.indexOf(line, before)).toBeGreaterThan(before);
    expect(stdout.indexOf(line, before)).toBeLessThan(summary);
    expect(after).toBeGreaterThan(summary);
    expect(stdout.indexOf(line, after)).toBeGreaterThan(after);
    // Nothing else skipped, nothing else named.
    expect(stdout.slice(after).trimEnd().split('\n')).toEqual(['Skipped on this machine:', line]);
  }, 180_000);

  it('fails the run instead under CI=true', async () => {
    const { code, stdout, stderr } = await runWithoutControlPlane({ CI: 'true' });
    expect(code).not.toBe(0);
    expect(stdout + stderr).toContain(
      `the Kubernetes tests must run under CI=true: KUBEBUILDER_ASSETS=${dir} has no kube-apiserver`,
    );
  }, 180_000);
});
