/**
 * Issue 7, item 2: every outbound connection of a step passes the egress guard at connect time. Real
 * engine, real servers (HTTP targets, the throwaway Postgres, FTP and SFTP servers); metadata addresses
 * are IP literals or a faked DNS answer (there is no network here).
 */
import type { LookupAddress } from 'node:dns';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FtpSrv } from 'ftp-srv';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EgressPolicy } from '../../../engine/protocols/egress-policy.ts';
import type { ResolveAll } from '../../../engine/protocols/egress-socket.ts';
import type { EngineResult } from '../../../engine/types.ts';
import { type FtpTestServer, silentLogger, startFtpServer } from '../../support/ftp-server.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { DENY_PRIVATE, useTestEngine } from '../../support/security-engine.ts';
import { type SftpTestServer, startSftpServer } from '../../support/sftp-server.ts';

const first = useHttpTarget();
const second = useHttpTarget();
const engine = useTestEngine();

function errorOf(result: EngineResult): string {
  return result.stepResults[0]?.error ?? `(no step error; run: ${result.status} ${result.error ?? ''})`;
}

const metadataDns: ResolveAll = (hostname, _options, callback) => {
  const answers: LookupAddress[] =
    hostname === 'metadata.internal' ? [{ address: '169.254.169.254', family: 4 }] : [];
  setImmediate(() =>
    answers.length > 0
      ? callback(null, answers)
      : callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []),
  );
};

describe('HTTP steps', () => {
  it('refuses the metadata address at once, without retrying, even in the permissive embedded policy', async () => {
    const started = Date.now();
    const result = await engine.run({
      steps: [{ id: 'meta', config: { url: 'http://169.254.169.254/latest/meta-data/iam/' } }],
    });
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toBe(
      'HTTP GET http://169.254.169.254/latest/meta-data/iam/ failed: refused to connect to 169.254.169.254: the cloud metadata address',
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it.each(['[::169.254.169.254]', '[::ffff:0:169.254.169.254]', '[64:ff9b:1::a9fe:a9fe]'])(
    'refuses the metadata address spelt %s (IPv4 embedded in IPv6)',
    async (host) => {
      const result = await engine.run({ steps: [{ id: 'meta', config: { url: `http://${host}/latest/` } }] });
      expect(result.status).toBe('failed');
      expect(errorOf(result)).toMatch(
        /refused to connect to .*: the cloud metadata address \(IPv4 embedded in IPv6\)/,
      );
    },
  );

  it('refuses a host name that resolves to the metadata address, naming host, address and class', async () => {
    const result = await engine.run(
      { steps: [{ id: 'meta', config: { url: 'http://metadata.internal/computeMetadata/v1/' } }] },
      { resolve: metadataDns },
    );
    expect(errorOf(result)).toContain(
      'refused to connect to metadata.internal (169.254.169.254): the cloud metadata address',
    );
  });

  it('refuses metadata even when every allow list names it', async () => {
    const egress: EgressPolicy = {
      privateDefault: 'deny',
      allow: ['169.254.169.254', '0.0.0.0/0'],
      deny: [],
    };
    const result = await engine.run(
      {
        steps: [{ id: 'meta', config: { url: 'http://169.254.169.254/latest/', systemId: 'cloud' } }],
      },
      {
        egress,
        systems: [
          {
            id: 'cloud',
            url: 'http://169.254.169.254',
            credentials: {},
            allowedNetworks: ['169.254.0.0/16'],
          },
        ],
      },
    );
    expect(errorOf(result)).toContain('refused to connect to 169.254.169.254: the cloud metadata address');
  });

  it('refuses private targets under privateDefault deny and lets a system allowlist reach them', async () => {
    first.route('GET', '/private', { body: { reached: true } });
    const refused = await engine.run(
      { steps: [{ id: 'p', config: { url: `${first.url}/private` } }] },
      { egress: DENY_PRIVATE },
    );
    expect(errorOf(refused)).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(first.count('/private')).toBe(0);

    const system = { id: 'local', url: first.url, credentials: {}, allowedNetworks: ['127.0.0.0/8'] };
    const allowed = await engine.run(
      { steps: [{ id: 'p', config: { url: '/private', systemId: 'local' } }] },
      { egress: DENY_PRIVATE, systems: [system] },
    );
    expect(allowed.status).toBe('success');
    expect(first.count('/private')).toBe(1);
  });

  it('checks every redirect hop: an allowed host cannot redirect to a refused one', async () => {
    const port = new URL(first.url).port;
    first.route('GET', '/hop', { status: 302, headers: { location: `${second.url}/internal` } });
    second.route('GET', '/internal', { body: { secret: 'internal data' } });
    // Only the first target, by its name, is allowed; the redirect goes to the second by IP.
    const egress: EgressPolicy = { privateDefault: 'deny', allow: ['localhost'], deny: [] };
    const result = await engine.run(
      { steps: [{ id: 'r', config: { url: `http://localhost:${port}/hop` } }] },
      { egress },
    );
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(first.count('/hop')).toBe(1);
    expect(second.count('/internal')).toBe(0);

    first.route('GET', '/to-metadata', {
      status: 307,
      headers: { location: 'http://169.254.169.254/latest/' },
    });
    const toMetadata = await engine.run({
      steps: [{ id: 'r', config: { url: `${first.url}/to-metadata` } }],
    });
    expect(errorOf(toMetadata)).toContain(
      'refused to connect to 169.254.169.254: the cloud metadata address',
    );
  });
});

describe('Postgres steps', () => {
  let database: TestDatabase;
  let socketDir: string;
  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'));
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    socketDir = (await client.query('SHOW unix_socket_directories')).rows[0].unix_socket_directories.split(
      ',',
    )[0];
    await client.end();
  });
  afterAll(async () => {
    await database.drop();
  });

  const select = { method: 'POST' as const, body: { query: 'SELECT 1 AS one' } };

  it('judges the host pg really connects to: ?host= cannot lead to a refused address', async () => {
    const url = new URL(database.url);
    const port = url.port;
    url.hostname = 'db.example.test';
    url.searchParams.set('host', '127.0.0.1');
    const egress: EgressPolicy = { privateDefault: 'deny', allow: ['db.example.test'], deny: [] };
    const result = await engine.run(
      { steps: [{ id: 'q', config: { url: url.toString(), ...select } }] },
      { egress },
    );
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toContain(`Postgres connection to 127.0.0.1:${port}`);
    expect(errorOf(result)).toContain('refused to connect to 127.0.0.1: a loopback address');

    const allowed = await engine.run(
      { steps: [{ id: 'q', config: { url: database.url, ...select } }] },
      { egress: { privateDefault: 'deny', allow: ['127.0.0.1'], deny: [] } },
    );
    expect(allowed.status).toBe('success');
    expect(allowed.data).toEqual([{ one: 1 }]);
  });

  it('refuses a unix socket path under privateDefault deny', async () => {
    const url = new URL(database.url);
    url.searchParams.set('host', socketDir);
    const result = await engine.run(
      { steps: [{ id: 'q', config: { url: url.toString(), ...select } }] },
      { egress: DENY_PRIVATE },
    );
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toContain(
      `refused to connect to ${socketDir}/.s.PGSQL.${url.port}: a local (unix) socket`,
    );
  });
});

describe('FTP steps', () => {
  let server: FtpTestServer;
  beforeAll(async () => {
    server = await startFtpServer();
    await writeFile(join(server.root, 'report.txt'), 'quarterly numbers');
  });
  afterAll(async () => {
    await server.stop();
  });

  const get = { method: 'POST' as const, body: { operation: 'get', path: '/report.txt' } };

  it('refuses the control connection to a private address under deny', async () => {
    const result = await engine.run(
      { steps: [{ id: 'f', config: { url: server.url, ...get, systemId: 'files' } }] },
      {
        egress: DENY_PRIVATE,
        systems: [
          {
            id: 'files',
            url: server.url,
            credentials: { username: server.username, password: server.password },
          },
        ],
      },
    );
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(server.stats.connections).toBe(0);
  });

  it('judges data connections under the control host name, so a host allowlist covers both', async () => {
    const url = `ftp://localhost:${server.port}`;
    const result = await engine.run(
      { steps: [{ id: 'f', config: { url, ...get, systemId: 'files' } }] },
      {
        egress: DENY_PRIVATE,
        systems: [
          {
            id: 'files',
            url,
            credentials: { username: server.username, password: server.password },
            allowedNetworks: ['localhost'],
          },
        ],
      },
    );
    expect(result.status).toBe('success');
    expect(result.data).toMatchObject({ content: 'quarterly numbers' });
  });

  describe('a server whose PASV reply names the metadata address', () => {
    let root: string;
    let ftp: FtpSrv;
    let port: number;
    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'kubeglue-pasv-'));
      await writeFile(join(root, 'data.txt'), 'from the server itself');
      const pasvMin = 20_000 + Math.floor(Math.random() * 40_000);
      const signals = new Map(
        (['SIGTERM', 'SIGINT', 'SIGQUIT'] as const).map((s) => [s, new Set(process.listeners(s))]),
      );
      ftp = new FtpSrv({
        url: 'ftp://127.0.0.1:0',
        // A function: ftp-srv would otherwise answer local clients with their own address.
        pasv_url: (() => '169.254.169.254') as unknown as string,
        pasv_min: pasvMin,
        pasv_max: pasvMin + 500,
        anonymous: false,
        // Without EPSV the client has to use PASV and its address.
        blacklist: ['EPSV'],
        log: silentLogger(),
      });
      for (const [signal, before] of signals) {
        for (const listener of process.listeners(signal))
          if (!before.has(listener)) process.removeListener(signal, listener);
      }
      ftp.on('login', (_data, resolve) => resolve({ root }));
      ftp.on('client-error', () => {});
      await ftp.listen();
      port = ((ftp as unknown as { server: Server }).server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      await ftp.close();
      await rm(root, { recursive: true, force: true });
    });

    it('opens the data connection to the control peer, never to the address in the reply', async () => {
      const result = await engine.run({
        steps: [
          {
            id: 'f',
            config: {
              url: `ftp://u:p@127.0.0.1:${port}`,
              method: 'POST',
              body: { operation: 'get', path: '/data.txt' },
            },
          },
        ],
      });
      expect(result.stepResults[0]?.error).toBeUndefined();
      expect(result.data).toMatchObject({ content: 'from the server itself' });
    });
  });
});

describe('SFTP steps', () => {
  let server: SftpTestServer;
  beforeAll(async () => {
    server = await startSftpServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  const list = { method: 'POST' as const, body: { operation: 'list', path: '/' } };

  it('refuses the metadata address at once', async () => {
    const started = Date.now();
    const result = await engine.run(
      { steps: [{ id: 's', config: { url: 'sftp://u:p@169.254.169.254:22/', ...list } }] },
      { timeoutMs: 10_000 },
    );
    expect(result.status).toBe('failed');
    expect(errorOf(result)).toContain('refused to connect to 169.254.169.254: the cloud metadata address');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('refuses a private server under deny unless the system allows its network', async () => {
    const system = {
      id: 'files',
      url: server.url,
      credentials: { username: server.username, password: server.password ?? '' },
    };
    const refused = await engine.run(
      { steps: [{ id: 's', config: { url: server.url, ...list, systemId: 'files' } }] },
      { egress: DENY_PRIVATE, systems: [system] },
    );
    expect(errorOf(refused)).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(server.stats.connections).toBe(0);

    const allowed = await engine.run(
      { steps: [{ id: 's', config: { url: server.url, ...list, systemId: 'files' } }] },
      { egress: DENY_PRIVATE, systems: [{ ...system, allowedNetworks: ['127.0.0.1/32'] }] },
    );
    expect(allowed.status).toBe('success');
  });
});
