/**
 * A throwaway MariaDB server for the tests: Debian's `mariadb-install-db` and `mariadbd` in a temporary
 * directory on a free loopback port, TLS on with the test-only certificate (tls.ts), deleted on stop. One
 * server serves the whole run (mariadb-setup.ts, vitest's globalSetup); each test file makes its own
 * database and user on it (useMariaDb). Without the binaries the MariaDB tests are skipped with the reason,
 * except with CI=true, where that is an error; `.ci/run` installs the `mariadb-server` package.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { inject } from 'vitest';
import { readyOrStopped, stopProcessGroup } from './child-process.ts';
import { useStarted } from './fixture.ts';
import { freeLoopbackPort } from './os.ts';
import { MARIADB, skipReason } from './prerequisites.ts';
import { testTlsMaterial } from './tls.ts';

const run = promisify(execFile);

const { server: SERVER, installDb: INSTALL_DB } = MARIADB;

/** What the tests need to reach the run's server (plain data: it crosses from the global setup). */
export interface MariaDbServer {
  host: string;
  port: number;
  /** The root account's unix socket (root has no password and connects only through it). */
  socket: string;
  /** The PEM a client trusts the server's certificate with. */
  ca: string;
}

export interface TestMariaDbProcess extends MariaDbServer {
  stop(): Promise<void>;
}

/** Why MariaDB tests cannot run here (undefined: they can); throws under CI, where they must. */
export function mariadbMissing(): string | undefined {
  return skipReason('mariadb');
}

/**
 * Installs a data directory and starts mariadbd on it; resolves once root can run a query. `tls: false`
 * starts it without TLS (what a client that prefers TLS must cope with).
 */
export async function startTestMariaDb(options: { tls?: boolean } = {}): Promise<TestMariaDbProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'kg-mariadb-'));
  const data = join(dir, 'data');
  const socket = join(dir, 'sock');
  const tls = testTlsMaterial();
  await writeFile(join(dir, 'cert.pem'), tls.cert);
  await writeFile(join(dir, 'key.pem'), tls.key, { mode: 0o600 });
  // Small redo log and buffer pool: a test server holds little data, and starts faster so.
  const sizes = ['--innodb-buffer-pool-size=16M', '--innodb-log-file-size=4M'];
  const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
  await cp(await installedTemplate(sizes), data, { recursive: true });
  const port = await freeLoopbackPort();
  const log = join(dir, 'server.log');
  const server = spawn(
    SERVER,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      ...asRoot,
      '--skip-log-bin',
      '--skip-name-resolve',
      `--log-error=${log}`,
      ...(options.tls === false
        ? []
        : [`--ssl-cert=${join(dir, 'cert.pem')}`, `--ssl-key=${join(dir, 'key.pem')}`]),
      ...sizes,
    ],
    { detached: true, stdio: 'ignore' },
  );
  const stop = async (): Promise<void> => {
    await stopProcessGroup(server, 20_000);
    await rm(dir, { recursive: true, force: true });
  };
  await readyOrStopped(() => untilReady(socket, server, log), stop);
  return { host: '127.0.0.1', port, socket, ca: tls.ca, stop };
}

/**
 * A freshly installed data directory (system tables only, root without a password), made once per machine,
 * MariaDB version and user, then copied for every server: `mariadb-install-db` takes 5–7 s on a loaded
 * machine, a copy a fraction of one. Made under a temporary name and renamed, so concurrent runs never
 * see half of one.
 */
async function installedTemplate(sizes: string[]): Promise<string> {
  const { stdout } = await run(SERVER, ['--version']);
  const version = /Ver (\S+)/.exec(stdout)?.[1] ?? 'unknown';
  const template = join(tmpdir(), `kubeglue-mariadb-template-${version}-${process.getuid?.() ?? 'user'}`);
  if (existsSync(join(template, 'mysql'))) return template;
  const making = await mkdtemp(`${template}.making-`);
  await run(INSTALL_DB, [
    '--no-defaults',
    `--datadir=${making}`,
    ...(process.getuid?.() === 0 ? ['--user=root'] : []),
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    ...sizes,
  ]);
  try {
    await rename(making, template);
  } catch {
    // Another run made it first: theirs is as good.
    await rm(making, { recursive: true, force: true });
  }
  return template;
}

async function untilReady(socket: string, server: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (server.exitCode !== null) {
      const text = await readFile(log, 'utf8').catch(() => '');
      throw new Error(`mariadbd exited (${server.exitCode}): ${text.slice(-2000)}`);
    }
    try {
      const connection = await mysql.createConnection({ socketPath: socket, user: 'root' });
      await connection.end();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`mariadbd did not answer within 60 s: ${String(error)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The run's server as the global setup provided it, or undefined when MariaDB tests are skipped. */
export function providedMariaDb(): MariaDbServer | undefined {
  return inject('mariadb') ?? undefined;
}

/** A root connection over the server's unix socket. */
export function rootConnection(server: MariaDbServer, database?: string): Promise<mysql.Connection> {
  return mysql.createConnection({
    socketPath: server.socket,
    user: 'root',
    ...(database ? { database } : {}),
    multipleStatements: true,
  });
}

export interface TestMariaDbDatabase {
  server: MariaDbServer;
  name: string;
  user: string;
  password: string;
  /** `mysql://user:password@127.0.0.1:port/name`. */
  url: string;
  /** The same URL without its userinfo (the credentials go in the system). */
  bareUrl: string;
  /** Root, connected to the database (multipleStatements on, for setting tables up). */
  admin: mysql.Connection;
}

/**
 * Makes a database and a user with all rights on it (and only on it); names are random unless given (a
 * page of the documentation names its own), and given ones are dropped first if an earlier run left them.
 */
export async function createMariaDbDatabase(
  server: MariaDbServer,
  names: { name: string; user: string; password: string } | undefined = undefined,
): Promise<TestMariaDbDatabase> {
  const suffix = randomBytes(5).toString('hex');
  const name = names?.name ?? `kg_${suffix}`;
  const user = names?.user ?? `kg_user_${suffix}`;
  const password = names?.password ?? `pw-${randomBytes(9).toString('hex')}`;
  const root = await rootConnection(server);
  try {
    if (names) {
      await root.query(`DROP DATABASE IF EXISTS ${name}`);
      await root.query('DROP USER IF EXISTS ?@?', [user, '%']);
    }
    await root.query(`CREATE DATABASE ${name}`);
    await root.query('CREATE USER ?@? IDENTIFIED BY ?', [user, '%', password]);
    await root.query(`GRANT ALL ON ${name}.* TO ?@?`, [user, '%']);
  } finally {
    await root.end();
  }
  const bareUrl = `mysql://${server.host}:${server.port}/${name}`;
  return {
    server,
    name,
    user,
    password,
    url: `mysql://${user}:${encodeURIComponent(password)}@${server.host}:${server.port}/${name}`,
    bareUrl,
    admin: await rootConnection(server, name),
  };
}

export async function dropMariaDbDatabase(database: TestMariaDbDatabase): Promise<void> {
  await database.admin.query(`DROP DATABASE IF EXISTS ${database.name}`);
  await database.admin.query('DROP USER IF EXISTS ?@?', [database.user, '%']);
  await database.admin.end();
}

/**
 * A fresh database and user on the run's MariaDB for the tests of the enclosing block, dropped after
 * them. Wrap the block in `describe.skipIf(mariadbSkip)`: without a server the hooks never run.
 */
export function useMariaDb(): TestMariaDbDatabase {
  return useStarted(
    async () => {
      const server = providedMariaDb();
      if (!server) throw new Error('no MariaDB server in this run (skip the block with mariadbSkip)');
      return createMariaDbDatabase(server);
    },
    (database) => dropMariaDbDatabase(database),
  );
}

/** True when this run has no MariaDB server: `describe.skipIf(mariadbSkip())(…)`. */
export function mariadbSkip(): boolean {
  return providedMariaDb() === undefined;
}
