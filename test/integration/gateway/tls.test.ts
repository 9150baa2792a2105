/**
 * The server with TLS on its /v1 port (KUBEGLUE_TLS_CERT_FILE / KUBEGLUE_TLS_KEY_FILE): a real agent
 * process connects with wss:// trusting a test CA, and an HTTPS target reachable only through it
 * answers a step whose certificate is checked against the system URL's host name.
 */
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../config/config.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { testTlsMaterial } from '../../support/tls.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../../support/fixtures/${name}`, import.meta.url));
const CERT_FILE = fixture('test-only-tls.cert.pem');
const KEY_FILE = fixture('test-only-tls.key.pem');
const TUNNEL = 'tls-site';

let api: TestApi;
let target: HttpsServer;
let agent: AgentProcess | undefined;
let client: Agent;

/** A call to the API over HTTPS, trusting the test CA only. */
async function call(method: string, path: string, body?: unknown) {
  const response = await request(`${api.url}${path}`, {
    method: method as 'GET' | 'POST',
    dispatcher: client,
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  // The agent process and the engine workers start after this and trust the test CA through it.
  process.env.NODE_EXTRA_CA_CERTS = CERT_FILE;
  api = await startTestApi({
    KUBEGLUE_TLS_CERT_FILE: CERT_FILE,
    KUBEGLUE_TLS_KEY_FILE: KEY_FILE,
    KUBEGLUE_HOST: 'localhost',
    KUBEGLUE_EGRESS_PRIVATE: 'deny',
    KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000',
  });
  client = new Agent({ connect: { ca: testTlsMaterial().ca } });
  const tls = testTlsMaterial();
  target = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ secure: true, host: req.headers.host ?? null }));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
}, 60_000);

afterAll(async () => {
  await agent?.kill();
  await api?.stop();
  await client?.close();
  await new Promise((resolve) => target?.close(resolve));
});

describe('TLS on the API port', () => {
  it('listens on https:// and refuses a client that does not trust its certificate', async () => {
    expect(api.url.startsWith('https://localhost:')).toBe(true);
    const me = await call('GET', '/v1/me');
    expect(me.status).toBe(200);
    const untrusting = new Agent({ connect: { ca: [] as string[] } });
    await expect(request(`${api.url}/healthz`, { dispatcher: untrusting })).rejects.toThrow();
    await untrusting.close();
  });

  it('takes a gateway agent over wss:// and runs an HTTPS step through it, certificate checked', async () => {
    agent = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('https://', 'wss://'),
      api_key: TEST_ADMIN_KEY,
      targets: {
        secure: { address: `127.0.0.1:${(target.address() as AddressInfo).port}`, protocol: 'https' },
      },
    });
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);
    const port = (target.address() as AddressInfo).port;
    const system = await call('POST', '/v1/systems', {
      id: 'tls-secure',
      url: `https://localhost:${port}`,
      gateway: { tunnelId: TUNNEL, target: 'secure' },
    });
    expect(system.status, JSON.stringify(system.body)).toBe(201);
    const tool = await call('POST', '/v1/tools', {
      id: 'tls-secure-hello',
      steps: [{ id: 'call', config: { url: '/', systemId: 'tls-secure' } }],
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    const run = await call('POST', '/v1/tools/tls-secure-hello/run', {});
    expect(run.body, JSON.stringify(run.body)).toMatchObject({
      status: 'success',
      data: { secure: true, host: `localhost:${port}` },
    });
    expect(agent.output()).not.toContain(TEST_ADMIN_KEY);
  }, 60_000);
});

describe('TLS configuration', () => {
  it('refuses a certificate without its key, naming both variables', () => {
    expect(() => loadSettings('embedded', { KUBEGLUE_TLS_CERT_FILE: CERT_FILE })).toThrow(
      'KUBEGLUE_TLS_CERT_FILE and KUBEGLUE_TLS_KEY_FILE go together',
    );
  });
});
