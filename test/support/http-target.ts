/**
 * A local HTTP server for tests: routes configured per test, every request logged.
 *
 *   const target = await startHttpTarget();
 *   target.route('GET', '/items', { body: [{ id: 1 }] });
 *   target.route('POST', '/echo', (req) => ({ status: 201, body: req.json }));
 *   target.route('GET', '/slow', (_req, res) => { setTimeout(() => res.end('late'), 5000); });
 *   ... target.url + '/items' ...
 *   target.count('/items'); target.requests; await target.stop();
 *
 * Unrouted requests get 404 `{"error":"no route for GET /x"}`.
 */

import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { beforeEach } from 'vitest';
import { parseJsonOrUndefined } from '../../contract/json.ts';
import { useStarted } from './fixture.ts';

export interface TargetRequest {
  method: string;
  /** The request target exactly as received: path and query string, percent-encoding untouched. */
  url: string;
  /** Path without the query string. */
  path: string;
  /** Query parameters in order (repeated keys kept). */
  query: Array<[string, string]>;
  /** Lower-case names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body as UTF-8 text. */
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** `Date.now()` when the request's headers arrived. */
  receivedAt: number;
  /** Identifies the TCP connection: equal ids mean a reused keep-alive socket. */
  socketId: number;
}

export interface TargetResponse {
  status?: number;
  headers?: Record<string, string | string[]>;
  /** A string or bytes are sent as is; anything else as JSON (with a JSON content type unless given). */
  body?: unknown;
  /** Wait this long before answering (the wait ends early when the client goes away). */
  delayMs?: number;
}

/**
 * Returns the response to send, or undefined when it wrote to `res` itself (streaming, hanging,
 * destroying the socket…).
 */
export type TargetHandler = (
  req: TargetRequest,
  res: ServerResponse,
) => TargetResponse | undefined | Promise<TargetResponse | undefined>;

export interface HttpTarget {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Every request received, in arrival order. */
  requests: TargetRequest[];
  /** Adds or replaces the route for `method` (`*` = any method) and exact `path`. */
  route(method: string, path: string, handler: TargetHandler | TargetResponse): void;
  /**
   * Answers nothing to GET `path`: each request's response is added to the returned list, for the test to
   * end or destroy (stop() closes what is left).
   */
  hold(path: string): ServerResponse[];
  /** Requests received for `path`, any method. */
  count(path: string): number;
  /** Forgets logged requests and counters; routes stay. */
  reset(): void;
  stop(): Promise<void>;
}

function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

function waitUnlessClosed(ms: number, res: ServerResponse, timers: Set<NodeJS.Timeout>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    timers.add(timer);
    res.once('close', done);
    function done(): void {
      clearTimeout(timer);
      timers.delete(timer);
      res.off('close', done);
      resolve();
    }
  });
}

function send(res: ServerResponse, response: TargetResponse): void {
  if (res.destroyed || res.writableEnded) return;
  const headers: Record<string, string | string[]> = { ...response.headers };
  const hasContentType = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
  let payload: string | Uint8Array | undefined;
  if (typeof response.body === 'string' || response.body instanceof Uint8Array) payload = response.body;
  else if (response.body !== undefined) {
    payload = JSON.stringify(response.body);
    if (!hasContentType) headers['content-type'] = 'application/json';
  }
  res.writeHead(response.status ?? 200, headers);
  res.end(payload);
}

export async function startHttpTarget(): Promise<HttpTarget> {
  const routes = new Map<string, TargetHandler>();
  const requests: TargetRequest[] = [];
  const counts = new Map<string, number>();
  const socketIds = new WeakMap<Socket, number>();
  const timers = new Set<NodeJS.Timeout>();
  let nextSocketId = 1;

  const server = createServer((incoming, res) => {
    const receivedAt = Date.now();
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://target');
      const body = Buffer.concat(chunks);
      const text = body.toString('utf8');
      const req: TargetRequest = {
        method: incoming.method ?? 'GET',
        url: incoming.url ?? '/',
        path: url.pathname,
        query: [...url.searchParams],
        headers: incoming.headers,
        body,
        text,
        json: parseJsonOrUndefined(text),
        receivedAt,
        socketId: socketIds.get(incoming.socket) ?? 0,
      };
      requests.push(req);
      counts.set(req.path, (counts.get(req.path) ?? 0) + 1);
      const handler = routes.get(routeKey(req.method, req.path)) ?? routes.get(routeKey('*', req.path));
      void respond(handler, req, res);
    });
  });
  server.on('connection', (socket) => socketIds.set(socket, nextSocketId++));

  async function respond(handler: TargetHandler | undefined, req: TargetRequest, res: ServerResponse) {
    try {
      if (!handler) {
        send(res, { status: 404, body: { error: `no route for ${req.method} ${req.path}` } });
        return;
      }
      const response = await handler(req, res);
      if (response === undefined) return;
      if (response.delayMs) await waitUnlessClosed(response.delayMs, res, timers);
      send(res, response);
    } catch (error) {
      send(res, { status: 500, body: { error: error instanceof Error ? error.message : String(error) } });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const route: HttpTarget['route'] = (method, path, handler) => {
    routes.set(routeKey(method, path), typeof handler === 'function' ? handler : () => handler);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    route,
    hold(path) {
      const held: ServerResponse[] = [];
      route('GET', path, (_req, res) => {
        held.push(res);
        return undefined;
      });
      return held;
    },
    count(path) {
      return counts.get(path) ?? 0;
    },
    reset() {
      requests.length = 0;
      counts.clear();
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * A target for the tests of the enclosing block, started before them and stopped after them; with
 * resetBeforeEach, each test sees only its own requests.
 */
export function useHttpTarget(options: { resetBeforeEach?: boolean } = {}): HttpTarget {
  const target = useStarted(startHttpTarget, (started) => started.stop());
  if (options.resetBeforeEach) beforeEach(() => target.reset());
  return target;
}
