/**
 * A real Samba `smbd` for the SMB tests: Debian's binary (`samba` package) run as root in a temporary
 * directory with a private smb.conf (every file, lock and log under that directory), on a free loopback
 * port, NetBIOS off, SMB2 and later only, and its users in a private passdb (`smbpasswd -c`). Two users:
 * `root` (the test user, with a password) and `daemon` (a second account for access-denied cases: the
 * shares' files belong to root). Shares:
 * - `files`: read-write, the test user's;
 * - `readonly`: `read only = yes`;
 * - `private`: only root may connect (`valid users = root`).
 *
 * Without smbd (or without root, which smbd needs to become the logged-on user) the suite is skipped with
 * the reason; with CI=true that is an error. `.ci/run` installs the `samba` package when missing.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readyOrStopped, signalProcessGroup, stopProcessGroup } from './child-process.ts';
import { useStarted } from './fixture.ts';
import { freeLoopbackPort } from './os.ts';
import { SAMBA, skipReason } from './prerequisites.ts';

const exec = promisify(execFile);

const { smbd: SMBD, smbpasswd: SMBPASSWD, smbstatus: SMBSTATUS } = SAMBA;

/** Why smbd cannot run here (undefined: it can); throws under CI, where it must. */
export function sambaMissing(): string | undefined {
  return skipReason('samba');
}

export interface SambaOptions {
  /** The only dialect smbd speaks (its min and max protocol); default: SMB2_10 to SMB3_11. */
  dialect?: 'SMB2_02' | 'SMB2_10' | 'SMB3_00' | 'SMB3_02' | 'SMB3_11';
  /** The server's workgroup (the users' domain); default KGTEST. */
  workgroup?: string;
  /**
   * The test user's name (default root) and password (default SAMBA_PASSWORD). Any name but root is
   * mapped to root (`username map`): smbd needs a Unix account behind each user, and tests make none.
   */
  username?: string;
  password?: string;
}

export interface TestSamba {
  host: string;
  port: number;
  /** `smb://127.0.0.1:<port>`, no share, no credentials. */
  url: string;
  /** The directory behind each share. */
  shares: { files: string; readonly: string; private: string };
  username: string;
  password: string;
  /** The second account (access-denied cases). */
  other: { username: string; password: string };
  workgroup: string;
  /** Sessions smbd holds now (smbstatus). */
  sessionCount(): Promise<number>;
  /** smbd's authentication audit lines so far (`Auth: [SMB2,…] user [DOMAIN]\[user] … with [NTLMv2] …`). */
  authLog(): Promise<string[]>;
  stop(): Promise<void>;
}

/** `@ : / ; %` in the password: it must survive URL user info and credentials alike. */
export const SAMBA_PASSWORD = 'p@ss:w/rd;%20x';

async function waitForPort(port: number, child: ChildProcess, dir: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const log = await readFile(join(dir, 'smbd.out'), 'utf8').catch(() => '');
      throw new Error(`smbd exited at start (${child.exitCode ?? child.signalCode}): ${log.slice(-2000)}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`smbd did not listen on ${port} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startSamba(options: SambaOptions = {}): Promise<TestSamba> {
  const missing = sambaMissing();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(join(tmpdir(), 'kg-samba-'));
  // The second account must reach the shares' directories (mkdtemp makes its directory 0700).
  await chmod(dir, 0o755);
  const port = await freeLoopbackPort();
  const workgroup = options.workgroup ?? 'KGTEST';
  const shares = {
    files: join(dir, 'files'),
    readonly: join(dir, 'readonly'),
    private: join(dir, 'private-share'),
  };
  for (const sub of ['private', 'lock', 'state', 'cache', 'pid', 'logs', ...Object.values(shares)]) {
    await mkdir(sub.startsWith('/') ? sub : join(dir, sub), { recursive: true });
  }
  const username = options.username ?? 'root';
  const password = options.password ?? SAMBA_PASSWORD;
  const conf = join(dir, 'smb.conf');
  if (username !== 'root') await writeFile(join(dir, 'users.map'), `root = ${username}\n`);
  await writeFile(
    conf,
    [
      '[global]',
      '  server role = standalone server',
      `  workgroup = ${workgroup}`,
      `  smb ports = ${port}`,
      '  interfaces = lo',
      '  bind interfaces only = yes',
      `  private dir = ${dir}/private`,
      `  lock directory = ${dir}/lock`,
      `  state directory = ${dir}/state`,
      `  cache directory = ${dir}/cache`,
      `  pid directory = ${dir}/pid`,
      `  ncalrpc dir = ${dir}/lock/ncalrpc`,
      `  passdb backend = tdbsam:${dir}/private/passdb.tdb`,
      `  log file = ${dir}/logs/log.%m`,
      '  log level = 1 auth_audit:3',
      '  disable netbios = yes',
      // An unknown user gets a guest session, as on many NAS boxes: the client must refuse it.
      '  map to guest = bad user',
      ...(username !== 'root' ? [`  username map = ${dir}/users.map`] : []),
      // `SMB2` is SMB2_10 to Samba.
      `  server min protocol = ${options.dialect ?? 'SMB2'}`,
      ...(options.dialect ? [`  server max protocol = ${options.dialect}`] : []),
      '  load printers = no',
      '  printcap name = /dev/null',
      '  disable spoolss = yes',
      '[files]',
      `  path = ${shares.files}`,
      '  read only = no',
      '[readonly]',
      `  path = ${shares.readonly}`,
      '  read only = yes',
      '[private]',
      `  path = ${shares.private}`,
      '  read only = no',
      `  valid users = root${username !== 'root' ? ` ${username}` : ''}`,
      '',
    ].join('\n'),
  );
  // Not `nobody`: Samba's guest account.
  const other = { username: 'daemon', password: 'other-password' };
  for (const [user, secret] of [
    ['root', password],
    [other.username, other.password],
  ] as const) {
    await new Promise<void>((resolve, reject) => {
      const child = execFile(SMBPASSWD, ['-c', conf, '-a', '-s', user], (error) =>
        error ? reject(error) : resolve(),
      );
      child.stdin?.end(`${secret}\n${secret}\n`);
    });
  }
  const out = openSync(join(dir, 'smbd.out'), 'w');
  // Its own process group: stop() ends smbd and the child it forks per connection together.
  const child = spawn(SMBD, ['--foreground', '--no-process-group', '-s', conf], {
    detached: true,
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  // A test process that dies without stopping it must not leave smbd behind.
  const killOnExit = () => signalProcessGroup(child, 'SIGKILL');
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    await stopProcessGroup(child, 5_000);
    await rm(dir, { recursive: true, force: true });
  };
  await readyOrStopped(() => waitForPort(port, child, dir), stop);
  return {
    host: '127.0.0.1',
    port,
    url: `smb://127.0.0.1:${port}`,
    shares,
    username,
    password,
    other,
    workgroup,
    async sessionCount() {
      const { stdout } = await exec(SMBSTATUS, ['-s', conf, '-b']);
      return stdout.split('\n').filter((line) => /^\d+\s.*\((ipv4|ipv6):/.test(line.trim())).length;
    },
    async authLog() {
      const files = (await readdir(join(dir, 'logs'))).filter((file) => file.startsWith('log.'));
      const texts = await Promise.all(files.map((file) => readFile(join(dir, 'logs', file), 'utf8')));
      return texts.flatMap((text) => text.split('\n').filter((line) => line.includes('Auth: [SMB2')));
    },
    stop,
  };
}

/** One smbd for the enclosing file (started in beforeAll, stopped in afterAll). */
export function useSamba(options: SambaOptions = {}): TestSamba {
  return useStarted(
    () => startSamba(options),
    (samba) => samba.stop(),
  );
}

/** What docs/smb.md's examples show: a share `files` at this address, user alice in WORKGROUP. */
export const DOCS_SMB_ADDRESS = 'smb://127.0.0.1:4445';

/**
 * The Samba docs/smb.md's examples run against (test/integration/docs-examples/examples.test.ts): its
 * user, password and workgroup as the page shows them, and the share's files the page reads.
 */
export async function startDocsSamba(): Promise<{
  documented: string;
  actual: string;
  stop(): Promise<void>;
}> {
  const samba = await startSamba({ username: 'alice', password: 'alice-secret', workgroup: 'WORKGROUP' });
  await mkdir(join(samba.shares.files, 'reports'));
  await writeFile(join(samba.shares.files, 'reports/sales.csv'), 'region,amount\nnorth,120\nsouth,80\n');
  return { documented: DOCS_SMB_ADDRESS, actual: samba.url, stop: () => samba.stop() };
}
