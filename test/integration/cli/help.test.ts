/**
 * Every role and command of `kubeglue` answers --help (and -h) as a new user tries it: at once, exit
 * code 0, and without side effects (no data directory created, no server started, no API called).
 * `--version` prints the package's version; an unknown name or argument is a usage error (exit 2).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';
import { useTempDir } from '../../support/fixture.ts';

const ROLES = ['embedded', 'api', 'operator', 'runner', 'agent'];
const COMMANDS = ['run', 'runs', 'logs', 'tools', 'schedules'];
const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../../../package.json'), 'utf8')) as {
    version: string;
  }
).version;
/** Longer than any help takes, far shorter than a server that would keep running. */
const PROMPTLY_MS = 10_000;

describe('kubeglue --help', () => {
  const scratch = useTempDir('kubeglue-help-');

  it.each(['--help', '-h'])('`kubeglue %s` lists every role and command and exits 0', async (flag) => {
    const { code, stdout, stderr } = await runCli([flag]);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    for (const name of [...ROLES, ...COMMANDS]) expect(stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
    expect(stdout).toContain('docs/cli.md');
  });

  it('`kubeglue` alone prints the usage on stderr and exits 2', async () => {
    const { code, stdout, stderr } = await runCli([]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('usage: kubeglue <role> [options]');
  });

  it.each(['--version', '-v'])('`kubeglue %s` prints the package version', async (flag) => {
    const { code, stdout } = await runCli([flag]);
    expect(code).toBe(0);
    expect(stdout).toBe(`kubeglue ${VERSION}\n`);
  });

  it.each(ROLES.flatMap((role) => [[role, '--help'] as const, [role, '-h'] as const]))(
    '`kubeglue %s %s` describes the role without starting it',
    async (role, flag) => {
      const dataDir = join(scratch.path, `${role}${flag}`);
      const { code, stdout, stderr, ms } = await runCli([role, flag], {
        KUBEGLUE_DATA_DIR: dataDir,
        // Set as a user of the role would have them: still nothing may be opened or reached.
        KUBEGLUE_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        KUBEGLUE_KUBECONFIG: join(scratch.path, 'no-kubeconfig'),
      });
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(ms).toBeLessThan(PROMPTLY_MS);
      expect(stdout).toMatch(new RegExp(`^usage: kubeglue ${role}`));
      expect(stdout).not.toContain('ready on');
      expect(existsSync(dataDir)).toBe(false);
    },
  );

  it("lists a role's settings with their defaults and points to the configuration page", async () => {
    const embedded = await runCli(['embedded', '--help']);
    expect(embedded.stdout).toMatch(/^ {4}KUBEGLUE_PORT=8080 +port of the \/v1 API$/m);
    expect(embedded.stdout).toContain('docs/configuration.md');
    const runner = await runCli(['runner', '--help']);
    expect(runner.stdout).toContain('KUBEGLUE_RUN_ID');
    expect(runner.stdout).not.toContain('KUBEGLUE_PORT');
    const agent = await runCli(['agent', '--help']);
    expect(agent.stdout).toContain('usage: kubeglue agent -config <path> [-debug]');
    expect(agent.stdout).toContain('settings: none');
  });

  it.each(COMMANDS.flatMap((name) => [[name, '--help'] as const, [name, '-h'] as const]))(
    '`kubeglue %s %s` describes the command without calling an API',
    async (name, flag) => {
      // No key and an address nothing listens on: a call would fail with exit 1 or 2.
      const { code, stdout, stderr } = await runCli([name, flag], { KUBEGLUE_URL: 'http://127.0.0.1:9' });
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toMatch(new RegExp(`^usage: kubeglue ${name}`));
      expect(stdout).toContain('--output <text|json>');
    },
  );

  it('refuses an argument a role does not take, before starting it', async () => {
    const dataDir = join(scratch.path, 'refused');
    const { code, stderr } = await runCli(['embedded', '--port', '3000'], { KUBEGLUE_DATA_DIR: dataDir });
    expect(code).toBe(2);
    expect(stderr).toContain("unknown argument '--port'");
    expect(stderr).toContain('KUBEGLUE_* environment variables');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('names the closest role or command to an unknown one and exits 2', async () => {
    const { code, stderr } = await runCli(['tool']);
    expect(code).toBe(2);
    expect(stderr).toContain("unknown role or command 'tool' (did you mean 'tools'?)");
  });
});
