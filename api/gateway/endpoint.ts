/**
 * The tunnel endpoint: `GET /v1/tunnel` upgraded to a WebSocket on the public server. The key is checked
 * before the upgrade (401/403 with the API's error body; the scope is declared in contract/api/routes.ts), then
 * the agent registers its tunnel id and targets and the registry holds the connection until it closes.
 * A tunnel id belongs to the key that first registered it (store/queries/gateway-tunnel-owners.ts): an
 * agent with another key is refused (CLOSE.notOwner) and the owner's connection is left alone.
 * Server pings find dead agents.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type ApiError,
  KG_ERR_INVALID_API_KEY,
  KG_ERR_MISSING_API_KEY,
  KG_ERR_ROUTE_NOT_FOUND,
} from '../../contract/api/errors.ts';
import { TUNNEL_ROUTE } from '../../contract/api/routes.ts';
import { CLOSE, MAX_MESSAGE_BYTES, RegisterMessage, TUNNEL_PATH } from '../../contract/wire/tunnel.ts';
import { TunnelMux } from '../../contract/wire/tunnel-mux.ts';
import type { GatewayTunnelOwnerQueries, StoredApiKey } from '../../store/index.ts';
import { hashApiKey, isPlausibleApiKey } from '../api-keys.ts';
import { accessProblem, toPrincipal } from '../auth.ts';
import type { GatewayRegistry } from './registry.ts';

export interface TunnelEndpointDeps {
  registry: GatewayRegistry;
  findApiKeyByHash(keyHash: string): Promise<StoredApiKey | undefined>;
  /** Which key owns each tunnel id, shared by every replica. */
  owners: Pick<GatewayTunnelOwnerQueries, 'claim'>;
  log(line: string): void;
  /** Server pings; an agent that misses one interval's pong is dropped. */
  pingIntervalMs?: number;
  /** How long an agent has to register after connecting. */
  registerTimeoutMs?: number;
}

const BEARER = /^bearer[ \t]+(\S{1,512})[ \t]*$/i;

function refuse(socket: Duplex, error: ApiError): void {
  const body = JSON.stringify({ error: error.body() });
  const headers = [
    `HTTP/1.1 ${error.statusCode} ${error.statusCode === 401 ? 'Unauthorized' : error.statusCode === 403 ? 'Forbidden' : 'Not Found'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(error.headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * Only keys with gateways:host may host gateways: an agent receives the traffic (and credentials) of
 * private systems, so no other key may.
 */
async function authorize(request: IncomingMessage, deps: TunnelEndpointDeps): Promise<StoredApiKey> {
  const match = BEARER.exec(request.headers.authorization ?? '');
  if (!match?.[1]) throw KG_ERR_MISSING_API_KEY();
  if (!isPlausibleApiKey(match[1])) throw KG_ERR_INVALID_API_KEY();
  const key = await deps.findApiKeyByHash(hashApiKey(match[1]));
  if (!key) throw KG_ERR_INVALID_API_KEY();
  const problem = accessProblem(toPrincipal(key), TUNNEL_ROUTE, `GET /v1${TUNNEL_ROUTE.path}`);
  if (problem) throw problem;
  return key;
}

/** Serves the tunnel endpoint on `server`; returns a function that closes every agent connection. */
export function installTunnelEndpoint(server: Server, deps: TunnelEndpointDeps): () => void {
  const { registry, log } = deps;
  const pingIntervalMs = deps.pingIntervalMs ?? 20_000;
  const registerTimeoutMs = deps.registerTimeoutMs ?? 10_000;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
  });

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    const path = (request.url ?? '').split('?', 1)[0];
    if (path !== TUNNEL_PATH) {
      refuse(socket, KG_ERR_ROUTE_NOT_FOUND(request.method ?? 'GET', path ?? ''));
      return;
    }
    authorize(request, deps).then(
      (key) => wss.handleUpgrade(request, socket, head, (ws) => serve(ws, key)),
      (error: ApiError) => {
        if (typeof error.statusCode !== 'number') log(`tunnel authorization failed: ${String(error)}`);
        refuse(socket, typeof error.statusCode === 'number' ? error : KG_ERR_INVALID_API_KEY());
      },
    );
  });

  function serve(ws: WebSocket, key: StoredApiKey): void {
    const mux = new TunnelMux({
      send: (frame) => {
        if (ws.readyState !== ws.OPEN) return false;
        ws.send(frame, { binary: true });
        return true;
      },
    });
    let registered: { tunnelId: string } | undefined;
    /** A registration being checked against the tunnel's owner: later text messages are ignored. */
    let registering = false;
    let closed = false;
    const registerTimer = setTimeout(
      () => ws.close(CLOSE.invalidRegistration, 'no registration'),
      registerTimeoutMs,
    );
    let alive = true;
    const pinger = setInterval(() => {
      if (!alive) {
        ws.terminate();
        return;
      }
      alive = false;
      ws.ping();
    }, pingIntervalMs);
    ws.on('pong', () => {
      alive = true;
    });
    const connection = {
      mux,
      keyId: key.id,
      close: (code: number, reason: string) => ws.close(code, reason),
    };
    ws.on('message', (data, isBinary) => {
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (isBinary) {
        if (registered) mux.receive(buffer);
        return;
      }
      if (registered || registering) return;
      let parsed: ReturnType<typeof RegisterMessage.safeParse>;
      try {
        parsed = RegisterMessage.safeParse(JSON.parse(buffer.toString('utf8')));
      } catch {
        parsed = RegisterMessage.safeParse(undefined);
      }
      if (!parsed.success) {
        ws.close(CLOSE.invalidRegistration, 'invalid registration');
        return;
      }
      clearTimeout(registerTimer);
      registering = true;
      const { tunnelId, targets } = parsed.data;
      deps.owners.claim(tunnelId, key.id).then(
        (owner) => {
          if (closed) return;
          if (owner !== key.id) {
            // The owner's agent (if connected) keeps the tunnel: nothing about it changes.
            log(`gateway ${tunnelId}: refused an agent with key ${key.name}; another key owns the tunnel id`);
            ws.close(CLOSE.notOwner, 'tunnel id owned by another API key');
            return;
          }
          registered = { tunnelId };
          const previous = registry.register({ ...connection, tunnelId, targets });
          if (previous) {
            log(`gateway ${tunnelId}: a new agent connection replaces the previous one`);
            previous.close(CLOSE.replaced, 'replaced by a newer agent connection');
          }
          log(
            `gateway ${tunnelId}: connected (targets ${targets.map((t) => t.name).join(', ')}; key ${key.name})`,
          );
          ws.send(JSON.stringify({ type: 'registered', tunnelId }));
        },
        (error: unknown) => {
          log(`gateway ${tunnelId}: could not check the tunnel's owner: ${(error as Error).message}`);
          if (!closed) ws.close(CLOSE.tryAgain, 'the server could not register the tunnel; retry');
        },
      );
    });
    ws.on('close', (code) => {
      closed = true;
      clearTimeout(registerTimer);
      clearInterval(pinger);
      mux.close(new Error(registered ? `gateway ${registered.tunnelId} disconnected` : 'tunnel closed'));
      if (registered) {
        registry.unregister({ ...connection, tunnelId: registered.tunnelId, targets: [] });
        log(`gateway ${registered.tunnelId}: disconnected (code ${code})`);
      }
    });
    ws.on('error', () => {});
  }

  return () => {
    for (const client of wss.clients) client.close(CLOSE.goingAway, 'server shutting down');
    wss.close();
  };
}
