/**
 * gateway.http_step_overhead: a one-step tool on a private system (its step goes engine worker → the
 * API's relay → the agent's WebSocket → a real `kubeglue agent` process → the target) against the same
 * tool calling the target directly, sequential sync runs through the embedded server, p50 difference.
 *
 * gateway.throughput_mib_s: a large download through one tunnel stream (the agent reading the target,
 * the WebSocket with its flow control, the API-side stream), against the same bytes over a direct
 * loopback TCP connection measured in the same run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { ensureAdminKey } from '../api/api-keys.ts';
import { installTunnelEndpoint } from '../api/gateway/endpoint.ts';
import { GatewayRegistry } from '../api/gateway/registry.ts';
import { loadSettings } from '../config/config.ts';
import { openStore } from '../store/index.ts';
import { startAgent } from '../test/support/gateway-agent.ts';
import { ADMIN_KEY, client, startServer } from './api.ts';
import { emit, interleaved, overheadFigures, progress, round, timed } from './stats.ts';

const { bench } = loadSettings('bench');
const SEQUENTIAL = bench.gatewayCalls;
const DOWNLOAD_MIB = bench.gatewayMib;
const TUNNEL = 'bench';

/** A TCP server that sends DOWNLOAD_MIB MiB to whoever connects, then closes. */
async function startSource() {
  const chunk = Buffer.alloc(256 * 1024, 0x5a);
  const server = createTcpServer((socket) => {
    let left = DOWNLOAD_MIB * 4;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
      socket.end();
    };
    socket.on('error', () => {});
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** Reads a stream to its end; resolves with the bytes read. */
function drain(stream: Duplex | Socket): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    stream.on('data', (data: Buffer) => {
      bytes += data.length;
    });
    stream.on('end', () => resolve(bytes));
    stream.on('error', reject);
    stream.resume();
  });
}

async function throughputFigure(): Promise<void> {
  const source = await startSource();
  const registry = new GatewayRegistry({ connectWaitMs: 5_000, openTimeoutMs: 10_000, streamLimit: 10 });
  // The endpoint's key lookup and tunnel ownership come from a real (in-memory) store.
  const store = await openStore({ driver: 'sqlite', path: ':memory:' });
  await ensureAdminKey(store, { presetKey: ADMIN_KEY, log: () => {} });
  const endpointServer = createHttpServer((_req, res) => res.writeHead(404).end());
  const closeEndpoint = installTunnelEndpoint(endpointServer, {
    registry,
    findApiKeyByHash: (hash) => store.findApiKeyByHash(hash),
    owners: store.gatewayTunnelOwners,
    log: () => {},
  });
  await new Promise<void>((resolve) => endpointServer.listen(0, '127.0.0.1', resolve));
  const agent = await startAgent(
    {
      tunnel_id: TUNNEL,
      server_url: `ws://localhost:${(endpointServer.address() as AddressInfo).port}`,
      api_key: ADMIN_KEY,
      targets: { source: `127.0.0.1:${source.port}` },
    },
    [],
  );
  try {
    await agent.waitFor(`tunnel '${TUNNEL}' registered`).catch(async () => {
      // Without -debug the agent says less; wait for the registry instead.
      const until = Date.now() + 15_000;
      while (!registry.get(TUNNEL) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    });
    progress(`gateway: ${DOWNLOAD_MIB} MiB through one tunnel stream, and directly`);
    let tunnelBytes = 0;
    const tunnelMs = await timed(async () => {
      tunnelBytes = await drain(await registry.openStream(TUNNEL, 'source'));
    });
    let directBytes = 0;
    const directMs = await timed(async () => {
      directBytes = await drain(connect(source.port, '127.0.0.1'));
    });
    const mib = (bytes: number, ms: number) => bytes / 1024 / 1024 / (ms / 1000);
    emit({
      bench: 'gateway.throughput_mib_s',
      mib: DOWNLOAD_MIB,
      value: round(mib(tunnelBytes, tunnelMs), 0),
      directMibS: round(mib(directBytes, directMs), 0),
      complete: tunnelBytes === DOWNLOAD_MIB * 1024 * 1024,
    });
  } finally {
    await agent.kill();
    closeEndpoint();
    await new Promise((resolve) => endpointServer.close(resolve));
    await store.close();
    source.close();
  }
}

async function stepOverheadFigure(): Promise<void> {
  const target = createHttpServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  target.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const targetPort = (target.address() as AddressInfo).port;
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-gateway-'));
  const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir });
  const { agent: http, call } = client(`${server.url}/v1`);
  const agent = await startAgent({
    tunnel_id: TUNNEL,
    server_url: server.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
    api_key: ADMIN_KEY,
    targets: { web: `127.0.0.1:${targetPort}` },
  });
  try {
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);
    await call('POST', '/systems', {
      id: 'private-web',
      url: 'http://web.corp.internal',
      gateway: { tunnelId: TUNNEL, target: 'web' },
    });
    await call('POST', '/tools', {
      id: 'via-gateway',
      steps: [{ id: 'get', config: { url: '/ok', systemId: 'private-web' } }],
    });
    await call('POST', '/tools', {
      id: 'direct',
      steps: [{ id: 'get', config: { url: `http://127.0.0.1:${targetPort}/ok` } }],
    });
    const run = async (tool: string) => {
      const result = await call('POST', `/tools/${tool}/run`, {});
      if (result.status !== 'success') throw new Error(`${tool}: ${JSON.stringify(result).slice(0, 300)}`);
    };
    progress('gateway: warming up');
    for (let i = 0; i < 200; i++) {
      await run('via-gateway');
      await run('direct');
    }
    progress(`gateway: ${SEQUENTIAL} sequential runs through the tunnel vs direct, interleaved`);
    const samples = await interleaved(
      SEQUENTIAL,
      () => run('via-gateway'),
      () => run('direct'),
    );
    emit({ bench: 'gateway.http_step_overhead', calls: SEQUENTIAL, ...overheadFigures('gateway', samples) });
  } finally {
    await agent.kill();
    await http.close();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
    await new Promise((resolve) => target.close(resolve));
  }
}

export async function benchGateway(): Promise<void> {
  await stepOverheadFigure();
  await throughputFigure();
}
