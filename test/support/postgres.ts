import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

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

async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
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
