/**
 * The tunnel between the API's endpoint and a real agent process: many concurrent streams with their
 * bytes intact, key checks, one live registration per tunnel id, configuration errors.
 */
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../../api/api-keys.ts';
import { installTunnelEndpoint } from '../../../api/gateway/endpoint.ts';
import { GatewayRegistry } from '../../../api/gateway/registry.ts';
import { openStore, type Store } from '../../../store/index.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';

const ADMIN_KEY = 'kg_gateway-admin-key-0123456789abcdefghij';
const MEMBER_KEY = 'kg_gateway-member-key-0123456789abcdefghi';
const HOST_KEY = 'kg_gateway-hosting-key-0123456789abcdefgh';
const OTHER_HOST_KEY = 'kg_gateway-intruder-key-0123456789abcdef';

/** The keys agents connect with, stored in a real (in-memory) store that also keeps tunnel ownership. */
const KEYS = [
  { key: ADMIN_KEY, id: 'admin', admin: true, scopes: ['gateways:host', 'keys:admin'] },
  { key: MEMBER_KEY, id: 'member', admin: false, scopes: ['tools:read', 'tools:write', 'runs:execute'] },
  { key: HOST_KEY, id: 'host', admin: false, scopes: ['gateways:host'] },
  { key: OTHER_HOST_KEY, id: 'other-host', admin: false, scopes: ['gateways:host'] },
];
let store: Store;
let server: Server;
let echo: TcpServer;
let registry: GatewayRegistry;
let closeEndpoint: () => void;
let serverUrl: string;
const agents: AgentProcess[] = [];

async function agentWith(tunnelId: string, apiKey: string): Promise<AgentProcess> {
  const agent = await startAgent({
    tunnel_id: tunnelId,
    server_url: serverUrl,
    api_key: apiKey,
    targets: { echo: `127.0.0.1:${(echo.address() as AddressInfo).port}` },
  });
  agents.push(agent);
  return agent;
}

/** An agent for the tunnel with the key, once the server has registered its tunnel. */
async function registeredAgent(tunnelId: string, apiKey: string): Promise<AgentProcess> {
  const agent = await agentWith(tunnelId, apiKey);
  await agent.waitFor(`tunnel '${tunnelId}' registered`);
  return agent;
}

/** Writes `payload`, ends, and collects what comes back. */
function roundTrip(stream: Duplex, payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
    stream.end(payload);
  });
}

beforeAll(async () => {
  echo = createTcpServer({ allowHalfOpen: true }, (socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  registry = new GatewayRegistry({ connectWaitMs: 500, openTimeoutMs: 5_000, streamLimit: 150 });
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  for (const { key, id, admin, scopes } of KEYS) {
    await store.insertApiKey({
      id,
      name: id,
      keyHash: hashApiKey(key),
      scopes,
      toolIds: null,
      systemIds: null,
      admin,
      createdAt: new Date(0).toISOString(),
    });
  }
  server = createHttpServer((_req, res) => res.writeHead(404).end());
  closeEndpoint = installTunnelEndpoint(server, {
    registry,
    findApiKeyByHash: (keyHash) => store.findApiKeyByHash(keyHash),
    owners: store.gatewayTunnelOwners,
    log: () => {},
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `ws://localhost:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.kill()));
  closeEndpoint();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => echo.close(resolve));
  await store?.close();
});

describe('the gateway tunnel', () => {
  it('carries 100 concurrent streams through one agent with every byte intact', async () => {
    await registeredAgent('bulk', ADMIN_KEY);
    const payloads = Array.from({ length: 100 }, (_, index) =>
      Buffer.alloc(200_000 + index * 1_000, index % 251),
    );
    const streams = await Promise.all(payloads.map(() => registry.openStream('bulk', 'echo')));
    expect(registry.get('bulk')?.streamsOpen).toBe(100);
    const echoed = await Promise.all(
      streams.map((stream, index) => roundTrip(stream, payloads[index] as Buffer)),
    );
    echoed.forEach((bytes, index) => {
      expect(bytes.equals(payloads[index] as Buffer)).toBe(true);
    });
    const total = payloads.reduce((sum, payload) => sum + payload.length, 0);
    expect(registry.get('bulk')).toMatchObject({ bytesIn: total, bytesOut: total, streamsOpened: 100 });
  }, 60_000);

  it('moves a large transfer with flow control', async () => {
    const stream = await registry.openStream('bulk', 'echo');
    const payload = Buffer.alloc(20 * 1024 * 1024, 7);
    const echoed = await roundTrip(stream, payload);
    expect(echoed.length).toBe(payload.length);
  }, 60_000);

  it('streams 100 MB through the tunnel with the agent process holding a bounded amount of memory', async () => {
    const agent = agents[0] as AgentProcess;
    const pid = agent.child.pid as number;
    const rssMb = async () => {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024;
    };
    const before = await rssMb();
    let peak = before;
    const sampler = setInterval(() => {
      rssMb().then(
        (value) => {
          peak = Math.max(peak, value);
        },
        () => {},
      );
    }, 50);
    const stream = await registry.openStream('bulk', 'echo');
    const chunk = Buffer.alloc(1024 * 1024, 3);
    const total = 100 * chunk.length;
    let received = 0;
    let heldByUs = 0;
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (data: Buffer) => {
        received += data.length;
      });
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    // Written with backpressure: the writer waits for 'drain', as a step's socket does.
    for (let i = 0; i < 100; i++) {
      if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
      heldByUs = Math.max(heldByUs, stream.writableLength);
    }
    stream.end();
    await done;
    clearInterval(sampler);
    expect(received).toBe(total);
    // Flow control keeps each side to a window per stream: neither the agent nor our side buffers the
    // 100 MB (the agent's own baseline is ~50-70 MB of Node). Growth is ~20-40 MB: GC runs late on a
    // loaded machine, so the bound is set well under 100 MB rather than at the quiet figure.
    expect(peak - before).toBeLessThan(60);
    expect(heldByUs).toBeLessThan(8 * 1024 * 1024);
  }, 120_000);

  it('refuses a wrong key and a key without the scope gateways:host', async () => {
    const wrong = await agentWith('wrong', 'kg_not-a-key-that-exists-0123456789abc');
    await wrong.waitFor('the api_key is not accepted');
    const member = await agentWith('member', MEMBER_KEY);
    await member.waitFor('may not host gateways');
    expect(registry.get('wrong')).toBeUndefined();
    expect(registry.get('member')).toBeUndefined();
    await expect(registry.openStream('wrong', 'echo')).rejects.toThrow('gateway wrong is not connected');
    expect(wrong.output()).not.toContain('kg_not-a-key');
  });

  it('opens another port of a target for FTP data connections only, never a privileged one', async () => {
    // 'echo' is a plain TCP target: no data connections to other ports of its host.
    await expect(registry.openStream('bulk', 'echo', undefined, 40_000)).rejects.toThrow(
      "target 'echo' takes no data connections",
    );
    const agent = agents[0] as AgentProcess;
    expect(agent.output()).toContain("a data port of 'echo'");
  });

  it('takes an agent whose key has gateways:host and nothing else', async () => {
    const hosted = await registeredAgent('hosted', HOST_KEY);
    const stream = await registry.openStream('hosted', 'echo');
    expect((await roundTrip(stream, Buffer.from('hosted'))).toString()).toBe('hosted');
    expect(hosted.output()).not.toContain(HOST_KEY);
  }, 30_000);

  it('lets a newer agent with the same tunnel id replace the older, which stops', async () => {
    const first = await registeredAgent('shared', ADMIN_KEY);
    const since = registry.get('shared')?.connectedSince;
    await registeredAgent('shared', ADMIN_KEY);
    await first.waitFor('took it over; this agent stops');
    expect(await first.exited).toBe(0);
    expect(registry.get('shared')?.connectedSince).not.toBe(since);
    const stream = await registry.openStream('shared', 'echo');
    expect((await roundTrip(stream, Buffer.from('still here'))).toString()).toBe('still here');
  }, 30_000);

  it('refuses an agent with another key for a tunnel id a key owns; the owner stays connected', async () => {
    const owner = await registeredAgent('owned', HOST_KEY);
    const since = registry.get('owned')?.connectedSince;
    const intruder = await agentWith('owned', OTHER_HOST_KEY);
    await intruder.waitFor("the server refused tunnel 'owned': another API key owns this tunnel id");
    expect(intruder.output()).not.toContain("tunnel 'owned' registered");
    // The owner's registration is the same one: never replaced, never closed.
    expect(registry.get('owned')?.connectedSince).toBe(since);
    expect(owner.output()).not.toContain('took it over');
    expect(owner.child.exitCode).toBeNull();
    const stream = await registry.openStream('owned', 'echo');
    expect((await roundTrip(stream, Buffer.from('owner'))).toString()).toBe('owner');
    await intruder.kill();
  }, 30_000);

  it('exits with a message naming the key of an invalid configuration', async () => {
    const broken = await startAgent({
      tunnel_id: 'x',
      server_url: 'http://example.com',
      api_key: 'k',
      targets: {},
    });
    agents.push(broken);
    expect(await broken.exited).toBe(2);
    expect(broken.output()).toContain('server_url');
    expect(broken.output()).toContain('targets');
    expect(broken.output()).not.toContain("api_key: 'k'");
  });
});
