import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { Agent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { KubeConnection } from './client.ts';
import { type RequestInfo, requestInfo } from './request-info.ts';

/** Knobs read on every request, so a test may change them at any time. 0 / undefined means off. */
export interface Faults {
  /** Answer every Nth POST/PUT/PATCH with 409 Conflict instead of forwarding it. */
  conflictEveryNthWrite?: number;
  /** Answer every Nth request with 429 Too Many Requests and a Retry-After header. */
  tooManyRequestsEveryNth?: number;
  /** Retry-After of the injected 429s (default 1). */
  retryAfterSeconds?: number;
  /** Added before every forwarded request. */
  latencyMs?: number;
  /**
   * How many of the next watch requests that carry a resourceVersion (other than "0", which never
   * expires) are answered as expired. Counts down; Infinity means all of them until reset.
   */
  goneOnWatch?: number;
  /** 'event' (default): a 200 watch stream with one ERROR event, like the API server; 'http': a plain 410. */
  goneMode?: 'event' | 'http';
  /** Cut all open watch connections this often. */
  dropWatchesEveryMs?: number;
}

/** How a dropped watch ends: 'reset' destroys the connection mid-stream; 'end' closes the stream cleanly. */
export type DropMode = 'reset' | 'end';

export interface ProxiedRequest extends Omit<RequestInfo, 'isResourceRequest'> {
  method: string;
  path: string;
  query: string;
  /** From the bearer token; '' when the token is unknown or missing. */
  user: string;
  /** Final status code, undefined while the response has not started. */
  status?: number;
  /** Which fault answered instead of the API server. */
  injected?: 'conflict' | 'tooManyRequests' | 'gone';
  watch: boolean;
}

export interface FaultProxyOptions {
  /** The API server, https://127.0.0.1:<port>. */
  target: string;
  /** CA the API server's cert chains to. */
  caPem: string;
  /**
   * Serve HTTPS with this cert (e.g. the control plane's loopbackTls, so a kubeconfig with the cluster CA
   * works unchanged). Without it the proxy speaks plain HTTP, which @kubernetes/client-node 2 refuses
   * unless the kubeconfig sets insecure-skip-tls-verify.
   */
  tls?: { certPem: string; keyPem: string };
  /** Static users' tokens by user name (ControlPlane.tokens), to tell who sent a request. */
  tokens?: Record<string, string>;
  faults?: Faults;
}

export interface FaultProxy {
  url: string;
  /** Mutable: change knobs at any time. */
  faults: Faults;
  /** Every request seen, in arrival order. */
  requests: ProxiedRequest[];
  /** Cuts every open watch (WebSocket watches included) now; returns how many were cut. */
  dropWatches(mode?: DropMode): number;
  /** Open watch connections right now. */
  openWatches(): number;
  stop(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** An open watch, streamed or over WebSocket, and how to cut it. */
interface OpenWatch {
  cut(mode: DropMode): void;
}

/** The proxy in front of the test control plane: serves with its loopback cert and tells its users apart. */
export function startKubeFaultProxy(kube: KubeConnection, faults?: Faults): Promise<FaultProxy> {
  return startFaultProxy({
    target: kube.url,
    caPem: kube.caPem,
    tls: kube.loopbackTls,
    tokens: kube.tokens,
    faults,
  });
}

/**
 * Starts the proxy. Upgraded connections (WebSocket watches, exec/attach) are relayed byte for byte and
 * recorded; of the faults only dropWatches applies to them.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  const agent = new Agent({ ca: options.caPem, keepAlive: true });
  const userByToken = new Map(Object.entries(options.tokens ?? {}).map(([user, token]) => [token, user]));
  const faults: Faults = { ...options.faults };
  const requests: ProxiedRequest[] = [];
  const watches = new Set<OpenWatch>();
  const upgraded = new Set<Duplex>();
  const counters = { writes: new Counter(), all: new Counter() };

  const dropWatches = (mode: DropMode = 'reset') => {
    const open = [...watches];
    watches.clear();
    for (const watch of open) watch.cut(mode);
    return open.length;
  };

  const record = (req: IncomingMessage): { entry: ProxiedRequest; info: RequestInfo; url: URL } => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const info = requestInfo(req.method ?? 'GET', url.pathname, url.searchParams);
    const { isResourceRequest: _, ...derived } = info;
    const entry: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.slice(1),
      user: userOf(req.headers, userByToken),
      ...derived,
      watch: info.verb === 'watch',
    };
    requests.push(entry);
    return { entry, info, url };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const { entry, info, url } = record(req);
    res.on('finish', () => {
      entry.status ??= res.statusCode;
    });
    const injected = injectedFault(faults, counters, req.method ?? 'GET', info, url);
    if (injected) {
      entry.injected = injected.kind;
      entry.status = injected.status;
      req.resume();
      injected.send(res);
      return;
    }
    if (faults.latencyMs) await new Promise((resolve) => setTimeout(resolve, faults.latencyMs));
    const upstream = httpsRequest({
      agent,
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req.headers, target.host),
    });
    if (entry.watch) {
      const watch: OpenWatch = {
        cut: (mode) => {
          if (mode === 'end') res.end();
          else res.destroy();
          upstream.destroy();
        },
      };
      watches.add(watch);
      res.on('close', () => watches.delete(watch));
    }
    upstream.on('response', (answer) => {
      if (res.destroyed) {
        answer.destroy();
        return;
      }
      entry.status = answer.statusCode ?? 502;
      res.writeHead(entry.status, forwardHeaders(answer.headers));
      // Watch events must reach the client as they come, not when a buffer fills.
      res.flushHeaders();
      answer.pipe(res);
      // A watch dropped with mode 'end' has already been ended cleanly; don't turn that into a reset.
      answer.on('error', () => {
        if (!res.writableEnded) res.destroy();
      });
    });
    upstream.on('error', (error) => {
      if (res.headersSent) res.destroy();
      else sendStatus(res, 502, 'ServiceUnavailable', `fault proxy: ${error.message}`);
    });
    // The client went away: stop the upstream request too, or a watch would live on at the API server.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    if (info.verb === 'create' && !info.name) nameFromBody(req, entry);
    req.pipe(upstream);
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const { entry } = record(req);
    upgraded.add(socket);
    const cutSocket: OpenWatch = { cut: () => socket.destroy() };
    if (entry.watch) watches.add(cutSocket);
    socket.on('close', () => {
      upgraded.delete(socket);
      watches.delete(cutSocket);
    });
    socket.on('error', () => socket.destroy());
    const upstream = httpsRequest({
      agent: false,
      ca: options.caPem,
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: {
        ...forwardHeaders(req.headers, target.host),
        connection: 'Upgrade',
        upgrade: req.headers.upgrade,
      },
    });
    upstream.on('upgrade', (answer, upstreamSocket, upstreamHead) => {
      entry.status = answer.statusCode;
      upgraded.add(upstreamSocket);
      upstreamSocket.on('close', () => {
        upgraded.delete(upstreamSocket);
        socket.destroy();
      });
      socket.write(rawHead(answer.statusCode ?? 101, answer.statusMessage ?? '', answer.rawHeaders));
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.pipe(socket).on('error', () => socket.destroy());
      socket.pipe(upstreamSocket).on('error', () => upstreamSocket.destroy());
      upstreamSocket.on('error', () => socket.destroy());
    });
    // The API server refused to switch protocols: relay its answer, framed by closing the connection.
    upstream.on('response', (answer) => {
      entry.status = answer.statusCode;
      const head = rawHead(answer.statusCode ?? 502, answer.statusMessage ?? '', answer.rawHeaders, true);
      socket.write(head);
      answer.pipe(socket);
    });
    upstream.on('error', () => socket.destroy());
    upstream.end();
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => res.destroy());
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }, listener)
    : createHttpServer(listener);
  server.on('upgrade', onUpgrade);
  // Long watches must not be cut by Node's default request timeout.
  server.requestTimeout = 0;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  let lastDrop = Date.now();
  let dropInterval = 0;
  const ticker = setInterval(() => {
    const every = faults.dropWatchesEveryMs ?? 0;
    if (every !== dropInterval) {
      dropInterval = every;
      lastDrop = Date.now();
    }
    if (every > 0 && Date.now() - lastDrop >= every) {
      lastDrop = Date.now();
      dropWatches();
    }
  }, 10);
  ticker.unref();

  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    faults,
    requests,
    dropWatches,
    openWatches: () => watches.size,
    stop: async () => {
      clearInterval(ticker);
      dropWatches();
      for (const socket of upgraded) socket.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
      agent.destroy();
    },
  };
}

/** Counts requests for an "every Nth" knob, restarting when the knob changes so N=2 means the 2nd from now. */
class Counter {
  private n = 0;
  private every = 0;
  hit(every: number | undefined): boolean {
    const current = every ?? 0;
    if (current !== this.every) {
      this.every = current;
      this.n = 0;
    }
    if (current <= 0) return false;
    this.n++;
    return this.n % current === 0;
  }
}

interface Injected {
  kind: NonNullable<ProxiedRequest['injected']>;
  status: number;
  send(res: ServerResponse): void;
}

function injectedFault(
  faults: Faults,
  counters: { writes: Counter; all: Counter },
  method: string,
  info: RequestInfo,
  url: URL,
): Injected | undefined {
  if (counters.all.hit(faults.tooManyRequestsEveryNth)) {
    const retryAfter = faults.retryAfterSeconds ?? 1;
    return {
      kind: 'tooManyRequests',
      status: 429,
      send: (res) =>
        sendStatus(res, 429, 'TooManyRequests', 'Too many requests, please try again later.', {
          headers: { 'retry-after': String(retryAfter) },
          details: { retryAfterSeconds: retryAfter },
        }),
    };
  }
  if (
    ['POST', 'PUT', 'PATCH'].includes(method.toUpperCase()) &&
    counters.writes.hit(faults.conflictEveryNthWrite)
  ) {
    const what = info.name ? `${resourceLabel(info)} "${info.name}"` : resourceLabel(info);
    return {
      kind: 'conflict',
      status: 409,
      send: (res) =>
        sendStatus(
          res,
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`,
          { details: { name: info.name || undefined, group: info.apiGroup, kind: info.resource } },
        ),
    };
  }
  const resourceVersion = url.searchParams.get('resourceVersion') ?? '';
  if (info.verb === 'watch' && resourceVersion && resourceVersion !== '0' && (faults.goneOnWatch ?? 0) > 0) {
    faults.goneOnWatch = (faults.goneOnWatch ?? 1) - 1;
    const message = `too old resource version: ${resourceVersion} (${Number(resourceVersion) + 1000 || 1})`;
    return {
      kind: 'gone',
      status: faults.goneMode === 'http' ? 410 : 200,
      send: (res) => {
        if (faults.goneMode === 'http') return sendStatus(res, 410, 'Expired', message);
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: statusBody(410, 'Expired', message) })}\n`);
      },
    };
  }
  return undefined;
}

function resourceLabel(info: RequestInfo): string {
  const resource = info.apiGroup ? `${info.resource}.${info.apiGroup}` : info.resource;
  return resource || 'the object';
}

function statusBody(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    details,
    code,
  };
}

function sendStatus(
  res: ServerResponse,
  code: number,
  reason: string,
  message: string,
  extra: { headers?: Record<string, string>; details?: Record<string, unknown> } = {},
): void {
  const body = JSON.stringify(statusBody(code, reason, message, extra.details));
  res.writeHead(code, {
    'content-type': 'application/json',
    ...extra.headers,
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** The audit log names a created object after its body; record the same, without holding the body back. */
function nameFromBody(req: IncomingMessage, entry: ProxiedRequest): void {
  if (!/json/.test(req.headers['content-type'] ?? '')) return;
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= 1024 * 1024) chunks.push(chunk);
  });
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { metadata?: { name?: unknown } };
      if (typeof body.metadata?.name === 'string') entry.name ||= body.metadata.name;
    } catch {
      // Not JSON after all, or larger than we keep: leave the name empty.
    }
  });
}

function forwardHeaders(headers: IncomingHttpHeaders, host?: string): IncomingHttpHeaders {
  const forwarded: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP.has(name) && name !== 'host' && value !== undefined) forwarded[name] = value;
  }
  if (host) forwarded.host = host;
  return forwarded;
}

function userOf(headers: IncomingHttpHeaders, userByToken: Map<string, string>): string {
  const match = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '');
  return (match?.[1] && userByToken.get(match[1].trim())) || '';
}

/** With closeFraming the body is the rest of the (then closed) connection, so framing headers must go. */
function rawHead(status: number, message: string, rawHeaders: string[], closeFraming = false): string {
  let head = `HTTP/1.1 ${status} ${message}\r\n`;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? '';
    if (closeFraming && /^(transfer-encoding|content-length|connection)$/i.test(name)) continue;
    head += `${name}: ${rawHeaders[i + 1]}\r\n`;
  }
  return `${head}${closeFraming ? 'Connection: close\r\n' : ''}\r\n`;
}
