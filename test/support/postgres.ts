import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freeLoopbackPort } from './os.ts';

const run = promisify(execFile);

export interface TestPostgres {
  /** Superuser connection URL (database `postgres`). */
  url: string;
  stop(): Promise<void>;
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

const HOW_TO_PROVIDE =
  'No PostgreSQL server for the tests: install the PostgreSQL server package (e.g. `apt-get install postgresql`, ' +
  'which provides initdb and pg_ctl) or set DATABASE_URL to a superuser connection URL.';

/**
 * Starts a throwaway PostgreSQL server (initdb + pg_ctl on a free loopback port) when the server binaries
 * are installed, else hands out DATABASE_URL. Durability settings are off: the data dir is deleted on stop.
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const binDir = await findPostgresBinDir();
  if (binDir) return startThrowawayServer(binDir);
  const url = process.env.DATABASE_URL;
  if (url) return { url, stop: async () => {} };
  throw new Error(HOW_TO_PROVIDE);
}

/** Creates a fresh database on the server behind adminUrl, so test files never see each other's rows. */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `kg_test_${randomBytes(6).toString('hex')}`;
  await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () =>
      withAdminClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

/** The database's URL without a login (no user, no password): what a system with its own credentials names. */
export function urlWithoutLogin(database: TestDatabase): string {
  const url = new URL(database.url);
  return `postgres://${url.host}${url.pathname}`;
}

export interface TestRole {
  name: string;
  /** Connection URL of the database as this role, with its password in the userinfo. */
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a login role with `password` and makes the server check it for this role's connections to
 * `database`, so a wrong password fails as on a real server. The throwaway server trusts every loopback
 * connection (initdb -A trust); for it a pg_hba.conf line for exactly this role and database goes first
 * in the file (lines match in order), so no other test's connections are affected. drop() removes the
 * line and the role; drop the database first.
 */
export async function createPasswordRole(database: TestDatabase, password: string): Promise<TestRole> {
  const adminUrl = new URL(database.url);
  const dbName = adminUrl.pathname.slice(1);
  adminUrl.pathname = '/postgres';
  const name = `kg_role_${randomBytes(6).toString('hex')}`;
  const hbaLine = `host ${dbName} ${name} all scram-sha-256`;
  const url = new URL(database.url);
  url.username = name;
  url.password = encodeURIComponent(password);
  const wrong = new URL(url);
  wrong.password = 'certainly-not-the-password';
  let hbaFile: string | undefined;
  await withAdminClient(adminUrl.toString(), async (client) => {
    await client.query(
      `CREATE ROLE ${client.escapeIdentifier(name)} LOGIN PASSWORD ${client.escapeLiteral(password)}`,
    );
    if (!(await connects(wrong.toString()))) return;
    hbaFile = String((await client.query('SHOW hba_file')).rows[0]?.hba_file);
    await rewriteHba(client, hbaFile, (lines) => [hbaLine, ...lines]);
  });
  if (hbaFile !== undefined) await until(async () => !(await connects(wrong.toString())));
  return {
    name,
    url: url.toString(),
    drop: () =>
      withAdminClient(adminUrl.toString(), async (client) => {
        if (hbaFile !== undefined)
          await rewriteHba(client, hbaFile, (lines) => lines.filter((line) => line !== hbaLine));
        await client.query(`DROP ROLE IF EXISTS ${client.escapeIdentifier(name)}`);
      }),
  };
}

async function connects(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Rewrites pg_hba.conf through the server (a superuser may write server files) and reloads it. */
async function rewriteHba(
  client: pg.Client,
  file: string,
  change: (lines: string[]) => string[],
): Promise<void> {
  const current = String((await client.query('SELECT pg_read_file($1) AS text', [file])).rows[0]?.text);
  const text = change(current.split('\n')).join('\n');
  // lo_export writes the bytes as they are (COPY … TO would escape tabs and backslashes).
  const { oid } = (await client.query("SELECT lo_from_bytea(0, convert_to($1, 'UTF8')) AS oid", [text]))
    .rows[0] as { oid: number };
  try {
    await client.query('SELECT lo_export($1, $2)', [oid, file]);
  } finally {
    await client.query('SELECT lo_unlink($1)', [oid]);
  }
  await client.query('SELECT pg_reload_conf()');
}

/** pg_reload_conf only signals the server: wait until the new rules apply. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('pg_hba.conf change did not take effect within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function withAdminClient(adminUrl: string, fn: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, 1);
    return true;
  } catch {
    return false;
  }
}

async function findPostgresBinDir(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    if ((await isExecutable(join(dir, 'initdb'))) && (await isExecutable(join(dir, 'pg_ctl')))) return dir;
  }
  const root = '/usr/lib/postgresql';
  let versions: string[];
  try {
    versions = await readdir(root);
  } catch {
    return undefined;
  }
  const byVersionDesc = versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  for (const version of byVersionDesc) {
    const dir = join(root, version, 'bin');
    if ((await isExecutable(join(dir, 'initdb'))) && (await isExecutable(join(dir, 'pg_ctl')))) return dir;
  }
  return undefined;
}

interface OsUser {
  uid: number;
  gid: number;
}

/** initdb refuses to run as root; as root we run the server binaries as the `postgres` system user. */
async function postgresSystemUser(): Promise<OsUser> {
  try {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'The tests run as root and initdb refuses to run as root, but there is no `postgres` system user to run it as. ' +
        'Install the PostgreSQL server package (it creates that user), run the tests as a normal user, or set DATABASE_URL.',
    );
  }
}

async function startThrowawayServer(binDir: string): Promise<TestPostgres> {
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-pg-'));
  const dataDir = join(dir, 'data');
  const exec = async (bin: string, args: string[]) => {
    const path = join(binDir, bin);
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
    return run(file, argv, { cwd: dir });
  };
  try {
    if (asRoot) {
      const user = await postgresSystemUser();
      await chown(dir, user.uid, user.gid);
    }
    await exec('initdb', [
      '-D',
      dataDir,
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '-U',
      'postgres',
      '--no-sync',
    ]);
    const port = await startOnFreePort(exec, dir, dataDir);
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    await waitUntilReady(url);
    return {
      url,
      stop: async () => {
        try {
          await exec('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
        } finally {
          await rm(dir, { recursive: true, force: true, maxRetries: 3 });
        }
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    throw error;
  }
}

type Exec = (bin: string, args: string[]) => Promise<{ stdout: string; stderr: string }>;

async function startOnFreePort(exec: Exec, dir: string, dataDir: string): Promise<number> {
  const logFile = join(dir, 'server.log');
  let lastError: unknown;
  // Another process may grab the port between probing and binding it; try a few ports.
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freeLoopbackPort();
    const serverOptions = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=300',
    ].join(' ');
    try {
      await exec('pg_ctl', ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', serverOptions]);
      return port;
    } catch (error) {
      lastError = error;
    }
  }
  const log = await readFile(logFile, 'utf8').catch(() => '');
  throw new Error(`pg_ctl could not start the test PostgreSQL server: ${String(lastError)}\n${log}`);
}

async function waitUntilReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end().catch(() => {});
    }
  }
}
