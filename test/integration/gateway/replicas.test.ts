/**
 * Two API processes on one Postgres: a gateway tunnel is held by the one its agent connected to, and a
 * run on the other reaches the private target through the holder (the store's directory names it, the
 * relays forward one hop). A newer agent on the other replica takes the tunnel over; a holder whose
 * agent left leaves nothing behind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import { startTestApi, TEST_ADMIN_KEY, type TestApi, useTestApi } from '../../support/embedded.ts';
import { putThenGetTool } from '../../support/file-transfer.ts';
import { useFtpServer } from '../../support/ftp-server.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const TUNNEL = 'two-replicas';

interface GatewayList {
  data: {
    tunnelId: string;
    heldHere: boolean;
    replica: string;
    targets: { name: string }[];
    bytesIn: number;
    bytesOut: number;
    streamsOpened: number;
    countersAt: string;
  }[];
}

const env = (url: string, replica: string) => ({
  KUBEGLUE_DATABASE_URL: url,
  KUBEGLUE_POD_NAME: replica,
  // The target listens on loopback: only the agent may reach it.
  KUBEGLUE_EGRESS_PRIVATE: 'deny',
  KUBEGLUE_GATEWAY_HEARTBEAT_MS: '300',
  KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1500',
});

const database = useTestDatabase();
const http = useHttpTarget();
const ftp = useFtpServer({ username: 'ftp-user', password: 'ftp-secret-password' });
const first = useTestApi(() => env(database.url, 'api-first'));
let second: TestApi;
const agents: AgentProcess[] = [];

async function agentOn(api: TestApi): Promise<AgentProcess> {
  const agent = await startAgent({
    tunnel_id: TUNNEL,
    server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
    api_key: TEST_ADMIN_KEY,
    targets: { web: new URL(http.url).host, files: { address: `127.0.0.1:${ftp.port}`, protocol: 'ftp' } },
  });
  agents.push(agent);
  await agent.waitFor(`tunnel '${TUNNEL}' registered`);
  return agent;
}

async function run(api: TestApi, tool = 'private-hello'): Promise<Run> {
  return (await api.call<Run>('POST', `/v1/tools/${tool}/run`, { body: {} })).body;
}

async function gateways(api: TestApi): Promise<GatewayList['data']> {
  return (await api.call<GatewayList>('GET', '/v1/gateways')).body.data;
}

beforeAll(async () => {
  http.route('GET', '/hello', (req) => ({ body: { hello: 'private', host: req.headers.host ?? null } }));
  await first.call('POST', '/v1/systems', {
    body: {
      id: 'private-ftp',
      url: 'ftp://files.corp.internal',
      gateway: { tunnelId: TUNNEL, target: 'files' },
      credentials: { username: 'ftp-user', password: 'ftp-secret-password' },
    },
  });
  await first.call('POST', '/v1/tools', {
    body: putThenGetTool('private-ftp-roundtrip', 'private-ftp', '/relayed.txt', 'one hop away'),
  });
  await first.call('POST', '/v1/systems', {
    body: {
      id: 'private-web',
      url: 'http://billing.corp.internal',
      gateway: { tunnelId: TUNNEL, target: 'web' },
    },
  });
  await first.call('POST', '/v1/tools', {
    body: {
      id: 'private-hello',
      steps: [{ id: 'call', config: { url: '/hello', systemId: 'private-web' } }],
    },
  });
  // Started after the system and tool exist, so its caches hold them from the start.
  second = await startTestApi(env(database.url, 'api-second'));
}, 60_000);

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.kill()));
  await second?.stop();
});

describe('a gateway tunnel and two API replicas', () => {
  it('serves a run on the replica that does not hold the tunnel, through the holder', async () => {
    await agentOn(first);
    const onSecond = await run(second);
    expect(onSecond, onSecond.error).toMatchObject({
      status: 'success',
      data: { hello: 'private', host: 'billing.corp.internal' },
    });
    expect(await run(first)).toMatchObject({ status: 'success' });
    // FTP's passive data connections are forwarded to the holder too, to the port the server announced.
    const files = await run(second, 'private-ftp-roundtrip');
    expect(files, files.error).toMatchObject({ status: 'success' });
    expect(JSON.stringify(files.data)).toContain('one hop away');
    expect(await gateways(first)).toMatchObject([
      { tunnelId: TUNNEL, heldHere: true, targets: [{ name: 'web' }, { name: 'files' }] },
    ]);
    expect(await gateways(second)).toMatchObject([
      { tunnelId: TUNNEL, heldHere: false, targets: [{ name: 'web' }, { name: 'files' }] },
    ]);
    const one = await second.call<{ heldHere: boolean }>('GET', `/v1/gateways/${TUNNEL}`);
    expect(one.status).toBe(200);
    expect(one.body.heldHere).toBe(false);
  }, 60_000);

  it("lists the tunnel on every replica with the replica holding it and the holder's byte counts", async () => {
    const [held] = await gateways(first);
    expect(held).toMatchObject({ tunnelId: TUNNEL, replica: 'api-first', heldHere: true });
    expect(held?.bytesIn).toBeGreaterThan(0);
    expect(held?.bytesOut).toBeGreaterThan(0);
    // The other replica shows what the holder counted at its latest heartbeat (every 300 ms here).
    await expect
      .poll(async () => (await gateways(second))[0], { timeout: 5_000 })
      .toMatchObject({
        tunnelId: TUNNEL,
        replica: 'api-first',
        heldHere: false,
        bytesIn: held?.bytesIn,
        bytesOut: held?.bytesOut,
        streamsOpened: held?.streamsOpened,
      });
    const remote = (await gateways(second))[0];
    expect(Date.now() - Date.parse(remote?.countersAt ?? '')).toBeLessThan(5_000);
  }, 30_000);

  it('lets a newer agent on the other replica take the tunnel over; the older agent stops', async () => {
    const [older] = agents;
    const newer = await agentOn(second);
    await older?.waitFor('took it over; this agent stops', 10_000);
    expect(await older?.exited).toBe(0);
    expect(await gateways(second)).toMatchObject([{ tunnelId: TUNNEL, heldHere: true }]);
    expect(await gateways(first)).toMatchObject([{ tunnelId: TUNNEL, heldHere: false }]);
    const onFirst = await run(first);
    expect(onFirst, onFirst.error).toMatchObject({ status: 'success', data: { hello: 'private' } });
    expect(newer.output()).not.toContain(TEST_ADMIN_KEY);
  }, 60_000);

  it('says the gateway is not connected on every replica once its agent left', async () => {
    await agents.at(-1)?.kill();
    for (const api of [first, second]) {
      const result = await run(api);
      expect(result.status).toBe('failed');
      expect(result.error).toContain(`gateway ${TUNNEL} is not connected`);
    }
    expect(await gateways(first)).toEqual([]);
    expect(await gateways(second)).toEqual([]);
  }, 60_000);
});
