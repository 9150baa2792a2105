/**
 * A TCP relay between a client under test and a real server on loopback: it forwards both ways and lets a
 * test see and steer the bytes on the way back (hold them once a number has passed, or change them), to
 * prove what a client does when a transfer stalls or an answer was tampered with. It never answers in the
 * server's place.
 */
import { createServer, type Server, Socket } from 'node:net';

export interface RelayOptions {
  /** Changes a chunk the server sent before the client gets it. */
  alterFromServer?: (chunk: Buffer) => Buffer;
  /** Stops forwarding from the server (and reading from it) once this many bytes have passed. */
  holdAfterBytes?: number;
}

export interface TcpRelay {
  port: number;
  /** Bytes forwarded from the server to the client so far. */
  readonly fromServer: number;
  /** Resolves once the relay holds the server's bytes (holdAfterBytes reached). */
  held: Promise<void>;
  /** Connections whose client side is still open. */
  readonly openClients: number;
  close(): Promise<void>;
}

export async function startTcpRelay(target: { host: string; port: number }, options: RelayOptions = {}) {
  let fromServer = 0;
  let openClients = 0;
  let markHeld: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    markHeld = resolve;
  });
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    openClients++;
    const upstream = new Socket();
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.once('close', () => {
      openClients--;
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.once('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', end);
    upstream.on('error', end);
    upstream.connect(target.port, target.host);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      const limit = options.holdAfterBytes;
      let out = options.alterFromServer ? options.alterFromServer(chunk) : chunk;
      if (limit !== undefined && fromServer + out.length >= limit) {
        out = out.subarray(0, Math.max(0, limit - fromServer));
        upstream.pause();
        markHeld();
      }
      fromServer += out.length;
      if (out.length > 0) client.write(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const relay: TcpRelay = {
    port,
    get fromServer() {
      return fromServer;
    },
    held,
    get openClients() {
      return openClients;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return relay;
}
