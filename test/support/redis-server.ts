/**
 * A real Redis server for the tests: Debian's `redis-server` (REDIS_SERVER names another binary) started as
 * a plain process in a temporary directory, on free loopback ports, with nothing persisted. It has
 * - a password for the `default` user,
 * - ACL users: `alice` (every command) and `reader` (read commands only, no COMMAND: it cannot read the
 *   command table),
 * - a TLS port whose certificate (for 127.0.0.1 and localhost) is signed by a throwaway CA made with
 *   openssl at start; clients trust `ca`.
 * Start one per test file (`useRedisServer`); without the binary the suite is skipped with the reason,
 * except under CI=true, where that is an error (`.ci/run` installs the package).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { readyOrStopped } from './child-process.ts';
import { useStarted } from './fixture.ts';
import { freeLoopbackPort } from './os.ts';
import { redisServerPath, skipReason } from './prerequisites.ts';

const exec = promisify(execFile);

export const REDIS_PASSWORD = 'redis-default-SECRET-pw';
export const REDIS_USERS = {
  alice: { password: 'alice-SECRET-pw' },
  reader: { password: 'reader-SECRET-pw' },
} as const;

export interface TestRedisServer {
  port: number;
  tlsPort: number;
  /** `redis://127.0.0.1:<port>` without credentials; `/db` may be appended. */
  url: string;
  tlsUrl: string;
  /** The throwaway CA (PEM) that signed the TLS port's certificate. */
  ca: string;
  /** A client of the test's own (default user, database `db`), closed with the server. */
  admin(db?: number): Redis;
  /** Blocks until `predicate` holds for CLIENT LIST's entries (polls; fails after `timeoutMs`). */
  waitForClients(
    predicate: (clients: Array<Record<string, string>>) => boolean,
    timeoutMs?: number,
  ): Promise<Array<Record<string, string>>>;
  stop(): Promise<void>;
}

export { redisServerPath };

/** Why Redis tests cannot run here (undefined: they can); throws under CI, where they must. */
export function redisServerMissing(): string | undefined {
  return skipReason('redis');
}

/** A throwaway CA and a server certificate it signed, for 127.0.0.1 and localhost (EC keys: fast). */
async function makeCertificates(
  dir: string,
): Promise<{ ca: string; cert: string; key: string; caFile: string }> {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => exec('openssl', args);
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', file('ca.key'));
  await openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    file('ca.key'),
    '-days',
    '2',
    '-subj',
    '/CN=kubeglue test Redis CA',
    '-out',
    file('ca.pem'),
  );
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', file('server.key'));
  await openssl(
    'req',
    '-new',
    '-key',
    file('server.key'),
    '-subj',
    '/CN=localhost',
    '-out',
    file('server.csr'),
  );
  await writeFile(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('server.ext'),
    '-out',
    file('server.pem'),
  );
  return {
    ca: await readFile(file('ca.pem'), 'utf8'),
    cert: file('server.pem'),
    key: file('server.key'),
    caFile: file('ca.pem'),
  };
}

export async function startRedisServer(): Promise<TestRedisServer> {
  const binary = redisServerPath();
  if (!binary) throw new Error('no redis-server (see redisServerMissing)');
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-redis-'));
  const certificates = await makeCertificates(dir);
  const [port, tlsPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  let output = '';
  const child: ChildProcess = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--requirepass',
      REDIS_PASSWORD,
      '--user',
      'alice',
      'on',
      `>${REDIS_USERS.alice.password}`,
      '~*',
      '&*',
      '+@all',
      '--user',
      'reader',
      'on',
      `>${REDIS_USERS.reader.password}`,
      '~*',
      '+@read',
      '+hello',
      '+client|setname',
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      certificates.cert,
      '--tls-key-file',
      certificates.key,
      '--tls-ca-cert-file',
      certificates.caFile,
      '--tls-auth-clients',
      'no',
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const clients: Redis[] = [];
  const admin = (db = 0) => {
    const client = new Redis({ port, host: '127.0.0.1', password: REDIS_PASSWORD, db, lazyConnect: false });
    clients.push(client);
    return client;
  };
  const stop = async () => {
    await Promise.allSettled(clients.map((client) => client.quit()));
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      process.kill(-child.pid, 'SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const probe = admin();
  probe.on('error', () => {});
  const started = Date.now();
  await readyOrStopped(async () => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${output}`);
      if ((await probe.ping().catch(() => '')) === 'PONG') return;
      if (Date.now() - started > 20_000)
        throw new Error(`redis-server did not answer within 20 s: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }, stop);
  const waitForClients: TestRedisServer['waitForClients'] = async (predicate, timeoutMs = 10_000) => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const list = String(await probe.client('LIST'))
        .trim()
        .split('\n')
        .map((line) =>
          Object.fromEntries(line.split(' ').map((pair) => pair.split('=', 2) as [string, string])),
        );
      if (predicate(list)) return list;
      if (Date.now() > until) throw new Error(`CLIENT LIST never matched: ${JSON.stringify(list)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return {
    port,
    tlsPort,
    url: `redis://127.0.0.1:${port}`,
    tlsUrl: `rediss://localhost:${tlsPort}`,
    ca: certificates.ca,
    admin,
    waitForClients,
    stop,
  };
}

/** One Redis server for the tests of the enclosing block (a file's), stopped after them. */
export function useRedisServer(): TestRedisServer {
  return useStarted(startRedisServer, (server) => server.stop());
}
