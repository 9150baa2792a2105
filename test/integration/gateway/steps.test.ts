/**
 * Steps on private systems reach their servers only through a real gateway agent process: the engine is
 * told not to connect to private addresses (KUBEGLUE_EGRESS_PRIVATE=deny), the systems' host names do not
 * resolve, and the agent dials the real HTTP, HTTPS, Postgres and SFTP servers on loopback.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { putThenGetTool } from '../../support/file-transfer.ts';
import { useFtpServer } from '../../support/ftp-server.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { useSftpServer } from '../../support/sftp-server.ts';
import { testTlsMaterial } from '../../support/tls.ts';

const TUNNEL = 'corp';
// Pool workers read NODE_EXTRA_CA_CERTS at start: the HTTPS target's certificate is then trusted.
beforeAll(() => {
  process.env.NODE_EXTRA_CA_CERTS = fileURLToPath(
    new URL('../../support/fixtures/test-only-tls.cert.pem', import.meta.url),
  );
});
const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' });
const http = useHttpTarget();
const database = useTestDatabase();
const sftp = useSftpServer({ password: 'sftp-secret-password' });
const ftp = useFtpServer({ username: 'ftp-user', password: 'ftp-secret-password' });
const ftps = useFtpServer({ username: 'ftp-user', password: 'ftp-secret-password', tls: 'explicit' });
let https: HttpsServer;
let agent: AgentProcess;
let targets: Record<string, unknown>;

function hostPort(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port}`;
}

async function connectAgent(): Promise<AgentProcess> {
  const started = await startAgent({
    tunnel_id: TUNNEL,
    server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
    api_key: TEST_ADMIN_KEY,
    targets,
  });
  await started.waitFor(`tunnel '${TUNNEL}' registered`);
  return started;
}

async function run(toolId: string): Promise<Run> {
  const response = await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: {} });
  return response.body;
}

beforeAll(async () => {
  http.route('GET', '/hello', (req) => ({ body: { host: req.headers.host ?? null } }));
  http.route('GET', '/slow', async () => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    return { body: { late: true } };
  });
  const tls = testTlsMaterial();
  https = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ secure: true, host: req.headers.host }));
  });
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  targets = {
    web: hostPort(http.url),
    secure: { address: `127.0.0.1:${(https.address() as AddressInfo).port}`, protocol: 'https' },
    db: { address: hostPort(database.url), protocol: 'postgres' },
    files: { address: `127.0.0.1:${sftp.port}`, protocol: 'sftp' },
    plainftp: { address: `127.0.0.1:${ftp.port}`, protocol: 'ftp' },
    secureftp: { address: `127.0.0.1:${ftps.port}`, protocol: 'ftps' },
  };
  agent = await connectAgent();

  const systems = [
    { id: 'web', url: 'http://billing.corp.internal:8080', gateway: { tunnelId: TUNNEL, target: 'web' } },
    // The certificate is issued to localhost; the agent dials 127.0.0.1.
    { id: 'secure', url: 'https://localhost:9443', gateway: { tunnelId: TUNNEL, target: 'secure' } },
    { id: 'misnamed', url: 'https://secure.corp.internal', gateway: { tunnelId: TUNNEL, target: 'secure' } },
    { id: 'files', url: 'sftp://files.corp.internal', gateway: { tunnelId: TUNNEL, target: 'files' } },
    { id: 'ftp-files', url: 'ftp://ftp.corp.internal', gateway: { tunnelId: TUNNEL, target: 'plainftp' } },
    // The FTPS test certificate names localhost: TLS (control and data) is checked against that name.
    { id: 'ftps-files', url: 'ftps://localhost', gateway: { tunnelId: TUNNEL, target: 'secureftp' } },
    { id: 'unknown', url: 'http://nowhere.corp.internal', gateway: { tunnelId: TUNNEL, target: 'nope' } },
    { id: 'offline', url: 'http://x.corp.internal', gateway: { tunnelId: 'elsewhere', target: 'web' } },
  ];
  for (const system of systems) {
    const created = await api.call('POST', '/v1/systems', { body: system });
    expect(created.status, created.text).toBe(201);
  }
  const db = new URL(database.url);
  db.hostname = 'db.corp.internal';
  const dbHome = new URL(db);
  dbHome.username = '';
  dbHome.password = '';
  const dbSystem = await api.call('POST', '/v1/systems', {
    body: { id: 'db', url: dbHome.toString(), gateway: { tunnelId: TUNNEL, target: 'db' } },
  });
  expect(dbSystem.status, dbSystem.text).toBe(201);

  const tools = [
    { id: 'web-hello', steps: [{ id: 'call', config: { url: '/hello', systemId: 'web' } }] },
    { id: 'web-slow', steps: [{ id: 'call', config: { url: '/slow', systemId: 'web' } }] },
    { id: 'secure-hello', steps: [{ id: 'call', config: { url: '/', systemId: 'secure' } }] },
    { id: 'misnamed-hello', steps: [{ id: 'call', config: { url: '/', systemId: 'misnamed' } }] },
    { id: 'unknown-hello', steps: [{ id: 'call', config: { url: '/', systemId: 'unknown' } }] },
    { id: 'offline-hello', steps: [{ id: 'call', config: { url: '/', systemId: 'offline' } }] },
    {
      id: 'db-query',
      steps: [{ id: 'q', config: { url: db.toString(), systemId: 'db', body: 'SELECT 41 + 1 AS answer' } }],
    },
    putThenGetTool('files-roundtrip', 'files', '/hello.txt', 'through the tunnel'),
  ];
  const roundtrip = (id: string, systemId: string) =>
    putThenGetTool(id, systemId, '/hello.txt', `through the tunnel by ${systemId}`, [
      { operation: 'list', path: '/' },
    ]);
  tools.push(roundtrip('ftp-roundtrip', 'ftp-files'), roundtrip('ftps-roundtrip', 'ftps-files'));
  for (const tool of tools) {
    const created = await api.call('POST', '/v1/tools', { body: tool });
    expect(created.status, created.text).toBe(201);
  }
  const credentials = await api.call('PUT', '/v1/systems/files', {
    body: { credentials: { username: sftp.username, password: 'sftp-secret-password' } },
  });
  expect(credentials.status, credentials.text).toBe(200);
  for (const id of ['ftp-files', 'ftps-files']) {
    const set = await api.call('PUT', `/v1/systems/${id}`, {
      body: { credentials: { username: 'ftp-user', password: 'ftp-secret-password' } },
    });
    expect(set.status, set.text).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await agent?.kill();
  await new Promise((resolve) => https?.close(resolve));
});

describe('a private system behind a gateway agent', () => {
  it('is listed as a connected gateway with its targets', async () => {
    const listed = await api.call<{ data: Array<{ tunnelId: string; targets: Array<{ name: string }> }> }>(
      'GET',
      '/v1/gateways',
    );
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((g) => g.tunnelId)).toEqual([TUNNEL]);
    expect(listed.body.data[0]?.targets.map((t) => t.name).sort()).toEqual([
      'db',
      'files',
      'plainftp',
      'secure',
      'secureftp',
      'web',
    ]);
    const one = await api.call<{ connectedSince: string }>('GET', `/v1/gateways/${TUNNEL}`);
    expect(one.status).toBe(200);
    expect((await api.call('GET', '/v1/gateways/elsewhere')).status).toBe(404);
  });

  it.each([
    [
      'answers an HTTP step with the Host header of the system URL',
      'web-hello',
      ['billing.corp.internal:8080'],
    ],
    ['runs a Postgres query through the tunnel', 'db-query', ['42']],
    ['runs SFTP operations through the tunnel', 'files-roundtrip', ['through the tunnel']],
    [
      'runs FTP operations through the tunnel, passive data connections included',
      'ftp-roundtrip',
      ['through the tunnel by ftp-files', 'hello.txt'],
    ],
    [
      'runs FTPS with the certificate of control and data connections checked against the URL host',
      'ftps-roundtrip',
      ['through the tunnel by ftps-files'],
    ],
  ])('%s', async (_behaviour, toolId, expected) => {
    const result = await run(toolId);
    expect(result.status, result.error).toBe('success');
    for (const text of expected) expect(JSON.stringify(result.data)).toContain(text);
  });

  it('runs HTTPS end to end: the certificate is checked against the system URL host name', async () => {
    const ok = await run('secure-hello');
    expect(ok.status, ok.error).toBe('success');
    expect(JSON.stringify(ok.data)).toContain('"secure":true');
    const misnamed = await run('misnamed-hello');
    expect(misnamed.status).toBe('failed');
    expect(misnamed.error).toMatch(/certificate|altnames|secure\.corp\.internal/i);
  });

  it('refuses a target the agent does not have', async () => {
    const result = await run('unknown-hello');
    expect(result.status).toBe('failed');
    expect(result.error).toContain(`gateway ${TUNNEL} has no target 'nope'`);
  });

  it('fails a step whose gateway is not connected after a short wait', async () => {
    const result = await run('offline-hello');
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/failed: gateway elsewhere is not connected$/);
  });

  it('fails the run in flight when the agent dies and succeeds again once it reconnects', async () => {
    const inFlight = run('web-slow');
    await new Promise((resolve) => setTimeout(resolve, 700));
    await agent.kill('SIGKILL');
    const failed = await inFlight;
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/gateway corp (disconnected|is not connected)/);
    agent = await connectAgent();
    const again = await run('web-hello');
    expect(again.status, again.error).toBe('success');
  }, 30_000);

  it('never prints the API key or payloads in the agent debug log', () => {
    const log = agent.output();
    expect(log).toContain('stream');
    expect(log).not.toContain(TEST_ADMIN_KEY);
    expect(log).not.toContain('through the tunnel');
  });
});
