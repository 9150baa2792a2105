/**
 * The gateway relay: a loopback TCP port of the API process through which its engine workers reach the
 * tunnels (runner/protocols/gateway-socket.ts has the client and the handshake). A connection proves it
 * comes from a worker with the relay token (random per process, handed to workers in their environment),
 * names a tunnel and target, and is then piped to a tunnel stream with backpressure both ways.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  type GatewayRelayAddress,
  RELAY_MAX_LINE_BYTES,
  type RelayReply,
  RelayRequest,
} from '../../runner/protocols/gateway-socket.ts';
import type { GatewayRegistry } from './registry.ts';

export interface GatewayRelay {
  address: GatewayRelayAddress;
  close(): Promise<void>;
}

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

export async function startGatewayRelay(
  registry: GatewayRegistry,
  options: { host?: string; log(line: string): void },
): Promise<GatewayRelay> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(token);
  const sockets = new Set<Socket>();

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
    if (!tokenMatches(request.token, expected)) {
      socket.destroy();
      return;
    }
    const abort = new AbortController();
    socket.once('close', () => abort.abort());
    let stream: Duplex;
    try {
      stream = await registry.openStream(request.tunnelId, request.target, abort.signal);
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
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    address: { host, port, token },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
