/**
 * The gateway relay: a TCP port of the API process through which its engine workers and the runner Pods
 * reach the tunnels (engine/protocols/gateway-socket.ts has the client and the handshake). A connection
 * proves it comes from a worker with the relay token (random per process, handed to workers in their
 * environment), from a runner Pod with its run's token (runner-access.ts decides which tunnels that
 * opens), or from another replica with the peer token (derived from the master key all replicas share),
 * names a tunnel and target, and is then piped to a tunnel stream with backpressure both ways. A tunnel held by
 * another replica (the store's directory says which) is reached by forwarding the connection to that
 * replica's relay: one hop, never more.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  type GatewayRelayAddress,
  RELAY_MAX_LINE_BYTES,
  RelayReply,
  RelayRequest,
} from '../../engine/protocols/gateway-socket.ts';
import type { GatewayDirectory } from './directory.ts';
import { type GatewayRegistry, GatewayStreamError } from './registry.ts';
import type { RunnerStreamCheck } from './runner-access.ts';

export interface GatewayRelay {
  /** Where this process's workers dial (loopback when the relay listens on every address). */
  address: GatewayRelayAddress;
  /** The port the relay listens on. */
  port: number;
  close(): Promise<void>;
}

export interface GatewayRelayOptions {
  /** Listen address: loopback unless other replicas must reach it. */
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** Accepted from other replicas, and sent to them when forwarding. */
  peerToken?: string;
  /** Which replica holds the tunnels this process does not (several replicas on one store). */
  directory?: Pick<GatewayDirectory, 'remote'>;
  /** Runner Pods' streams (a request with `runId`); without it they are refused. */
  runners?: RunnerStreamCheck;
  log(line: string): void;
}

/** How often a stream waiting for its tunnel looks again (locally and in the directory). */
const LOCATE_POLL_MS = 200;

/** The handshake must arrive promptly; the stream itself may idle as long as the library likes. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

function tokenMatches(given: string, expected: Buffer): boolean {
  const buffer = Buffer.from(given);
  return buffer.length === expected.length && timingSafeEqual(buffer, expected);
}

function readLine(socket: Socket): Promise<{ line: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline >= 0) {
        cleanup();
        socket.pause();
        resolve({
          line: buffered.subarray(0, newline).toString('utf8'),
          rest: buffered.subarray(newline + 1),
        });
      } else if (buffered.length > RELAY_MAX_LINE_BYTES) {
        cleanup();
        reject(new Error('handshake too long'));
      }
    };
    const onEnd = () => {
      cleanup();
      reject(new Error('closed before the handshake'));
    };
    const cleanup = () => {
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('error', onEnd);
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('error', onEnd);
  });
}

function answer(socket: Socket, reply: RelayReply): void {
  socket.write(`${JSON.stringify(reply)}\n`);
}

/** Pipes the worker's socket and the tunnel stream into each other; an error on either closes both. */
function splice(socket: Socket, stream: Duplex, rest: Buffer): void {
  socket.on('error', (error) => stream.destroy(error));
  stream.on('error', () => socket.destroy());
  socket.on('close', () => stream.destroy());
  stream.on('close', () => socket.destroy());
  if (rest.length > 0) stream.write(rest);
  socket.pipe(stream);
  stream.pipe(socket);
  socket.resume();
}

/** Connects to another replica's relay for the tunnel; resolves with the socket once the holder agreed. */
function forward(address: string, request: RelayRequest, signal: AbortSignal): Promise<Socket> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(colon + 1));
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, allowHalfOpen: true });
    const fail = (error: Error) => {
      socket.destroy();
      reject(new GatewayStreamError(`gateway ${request.tunnelId}: ${error.message}`));
    };
    const onAbort = () => fail(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => fail(new Error('the replica holding it did not answer')),
      HANDSHAKE_TIMEOUT_MS,
    );
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.setNoDelay(true);
      socket.write(`${JSON.stringify(request)}\n`);
      readLine(socket)
        .then(({ line, rest }) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          socket.removeListener('error', fail);
          const reply = RelayReply.parse(JSON.parse(line));
          if (!reply.ok) {
            socket.destroy();
            reject(new GatewayStreamError(reply.error));
            return;
          }
          if (rest.length > 0) socket.unshift(rest);
          resolve(socket);
        })
        .catch((error: unknown) => {
          clearTimeout(timer);
          fail(error as Error);
        });
    });
  });
}

export async function startGatewayRelay(
  registry: GatewayRegistry,
  options: GatewayRelayOptions,
): Promise<GatewayRelay> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(token);
  const peerExpected = options.peerToken ? Buffer.from(options.peerToken) : undefined;
  const sockets = new Set<Socket>();
  const { directory } = options;

  /**
   * The tunnel's stream: from this process's tunnels, else forwarded to the replica holding it, waiting
   * up to connectWaitMs for an agent that is reconnecting (to any replica).
   */
  async function openTunnel(request: RelayRequest, signal: AbortSignal): Promise<Duplex> {
    const peerToken = options.peerToken;
    // A forwarded request is served from this replica's tunnels only (one hop); without a directory
    // there is no other replica: the registry waits for a reconnecting agent itself.
    if (!directory || !peerToken || request.hop !== undefined) {
      return registry.openStream(request.tunnelId, request.target, signal, request.dataPort);
    }
    const deadline = Date.now() + registry.settings.connectWaitMs;
    for (;;) {
      if (registry.holds(request.tunnelId)) {
        return registry.openStream(request.tunnelId, request.target, signal, request.dataPort);
      }
      const holder = await directory.remote(request.tunnelId);
      if (holder) {
        const hop: RelayRequest = {
          token: peerToken,
          tunnelId: request.tunnelId,
          target: request.target,
          hop: 1,
          ...(request.dataPort !== undefined ? { dataPort: request.dataPort } : {}),
        };
        return forward(holder.relayAddress, hop, signal);
      }
      if (Date.now() >= deadline || signal.aborted) {
        throw new GatewayStreamError(`gateway ${request.tunnelId} is not connected`);
      }
      await new Promise((resolve) => setTimeout(resolve, LOCATE_POLL_MS));
    }
  }

  async function serve(socket: Socket): Promise<void> {
    socket.setNoDelay(true);
    const timer = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS);
    let request: RelayRequest;
    let rest: Buffer;
    try {
      const read = await readLine(socket);
      rest = read.rest;
      request = RelayRequest.parse(JSON.parse(read.line));
    } catch {
      socket.destroy();
      return;
    } finally {
      clearTimeout(timer);
    }
    const abort = new AbortController();
    socket.once('close', () => abort.abort());
    let stream: Duplex;
    try {
      if (request.runId !== undefined) {
        // A runner Pod: its run's token, never forwarded as such (the hop carries the peer token).
        if (request.hop !== undefined) throw new GatewayStreamError('a runner stream is never a hop');
        const refusal = options.runners
          ? await options.runners({ ...request, runId: request.runId })
          : 'this API does not serve runner Pods';
        if (refusal !== undefined) throw new GatewayStreamError(`gateway ${request.tunnelId}: ${refusal}`);
      } else {
        const fromWorker = tokenMatches(request.token, expected);
        const fromPeer = peerExpected !== undefined && tokenMatches(request.token, peerExpected);
        if (!(fromWorker || fromPeer) || (request.hop !== undefined && !fromPeer)) {
          socket.destroy();
          return;
        }
      }
      stream = await openTunnel(request, abort.signal);
    } catch (error) {
      if (!socket.destroyed) {
        answer(socket, { ok: false, error: (error as Error).message });
        socket.end();
      }
      return;
    }
    if (socket.destroyed) {
      stream.destroy();
      return;
    }
    answer(socket, { ok: true });
    splice(socket, stream, rest);
  }

  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    serve(socket).catch((error: unknown) => {
      options.log(`gateway relay: ${(error as Error).message}`);
      socket.destroy();
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const workerHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return {
    address: { host: workerHost, port, token },
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
