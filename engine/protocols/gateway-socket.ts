/**
 * Sockets to a private system behind a gateway agent. The engine runs in worker processes or runner
 * Pods; the tunnel lives in an API process. So a step connects to the API's gateway relay (a loopback
 * TCP port for workers, the internal Service for runner Pods), sends one JSON line naming the tunnel and
 * target with its credential (the relay token of a worker, the run's token of a runner Pod), and after a
 * `{"ok":true}` line the socket carries the target's bytes. Whatever host and port the library asks for, the stream goes to
 * the agent's configured target: a tool cannot turn it toward another host. TLS runs on top of this
 * socket from the engine to the target (SNI and certificate checks use the URL's host name).
 *
 * These sockets do not pass the egress guard: the relay is on loopback and the address behind the
 * agent is private on purpose (DESIGN.md "Security": gateway targets are the deliberate exception).
 */
import { Socket } from 'node:net';
import { z } from 'zod';
import type { GatewayRoute } from '../types.ts';

/**
 * Code of the relay's refusals (gateway not connected after its wait, a target it does not have, the
 * stream limit): the step's retry policy does not retry them, the wait for a reconnecting agent is done.
 */
export const GATEWAY_REFUSED = 'KG_GATEWAY_REFUSED';

/**
 * Where the API's relay listens, and the token that proves who calls: one of its workers (the relay
 * token), or the runner Pod of `runId` (that run's token).
 */
export interface GatewayRelayAddress {
  host: string;
  port: number;
  token: string;
  runId?: string | undefined;
}

export const RelayRequest = z.strictObject({
  token: z.string().min(16).max(256),
  tunnelId: z.string().min(1).max(63),
  target: z.string().min(1).max(63),
  /** Set by a replica forwarding to the tunnel's holder: the holder serves it from its own tunnels only. */
  hop: z.literal(1).optional(),
  /** A passive FTP data connection: this port of the target's host (the agent allows it for FTP targets only). */
  dataPort: z.number().int().min(1024).max(65535).optional(),
  /** A runner Pod: `token` is this run's token, and only the gateways of the run's systems open. */
  runId: z.string().min(1).max(128).optional(),
});
export type RelayRequest = z.infer<typeof RelayRequest>;

export const RelayReply = z.union([
  z.strictObject({ ok: z.literal(true) }),
  z.strictObject({ ok: z.literal(false), error: z.string().max(1000) }),
]);
export type RelayReply = z.infer<typeof RelayReply>;

/** The longest handshake line either side accepts. */
export const RELAY_MAX_LINE_BYTES = 4096;

/** `host:port` or `[v6]:port` as a host net.connect takes and a port; undefined when malformed. */
export function parseRelayAddress(address: string): { host: string; port: number } | undefined {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  if (colon <= 0 || !host || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

/** The relay of a runner Pod: the address the operator gave it, entered with the run's own token. */
export function relayForRun(
  address: string | undefined,
  run: { runId: string; token: string },
): GatewayRelayAddress | undefined {
  const parsed = address ? parseRelayAddress(address) : undefined;
  return parsed ? { ...parsed, token: run.token, runId: run.runId } : undefined;
}

/**
 * A net.Socket whose connect() goes to the relay and completes the handshake before anyone sees the
 * 'connect' event, so libraries that take a socket factory (pg's `stream`) or a connected socket (ssh2's
 * `sock`, TLS's `socket`) use it unchanged.
 */
export class TunnelSocket extends Socket {
  readonly #relay: GatewayRelayAddress | undefined;
  readonly #route: GatewayRoute;
  #handshaken = false;

  readonly #dataPort: number | undefined;

  constructor(relay: GatewayRelayAddress | undefined, route: GatewayRoute, dataPort?: number) {
    super({ allowHalfOpen: false });
    this.#relay = relay;
    this.#route = route;
    this.#dataPort = dataPort;
  }

  // The arguments name the system's host and port; the route decides where the bytes go.
  override connect(...args: unknown[]): this {
    const listener = args.find((arg): arg is () => void => typeof arg === 'function');
    if (listener) this.once('connect', listener);
    const relay = this.#relay;
    if (!relay) {
      process.nextTick(() =>
        this.destroy(
          new Error(
            `gateway ${this.#route.tunnelId} cannot be reached from this process ` +
              '(no gateway relay: KUBEGLUE_GATEWAY_RELAY is not set)',
          ),
        ),
      );
      return this;
    }
    return super.connect({ host: relay.host, port: relay.port });
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    // A system error before the relay answered (refused, unresolvable, reset) is about the relay, not
    // the target: say so, or "connect ECONNREFUSED 10.0.3.7:8082" reads like the private system's.
    if (event === 'error' && !this.#handshaken && isSystemError(args[0])) {
      const relay = this.#relay as GatewayRelayAddress;
      const error = args[0];
      error.message = `gateway ${this.#route.tunnelId}: cannot reach the gateway relay at ${relay.host}:${relay.port}: ${error.message}`;
    }
    // Node emits 'ready' right after 'connect': both wait for the relay's answer.
    if ((event === 'connect' || event === 'ready') && !this.#handshaken) {
      if (event === 'connect') this.#handshake();
      return true;
    }
    // A library that listened for 'data' before connecting (pg) keeps the socket flowing: the relay's
    // answer arrives here and must not reach it.
    if (event === 'data' && this.#onHandshakeData) {
      this.#onHandshakeData(asBuffer(args[0] as Buffer | string));
      return true;
    }
    return super.emit(event, ...args);
  }

  #onHandshakeData: ((chunk: Buffer) => void) | undefined;

  #handshake(): void {
    const onEnd = () => this.destroy(new Error('the gateway relay closed the connection'));
    const relay = this.#relay as GatewayRelayAddress;
    const request: RelayRequest = {
      token: relay.token,
      tunnelId: this.#route.tunnelId,
      target: this.#route.target,
      ...(this.#dataPort !== undefined ? { dataPort: this.#dataPort } : {}),
      ...(relay.runId !== undefined ? { runId: relay.runId } : {}),
    };
    this.write(`${JSON.stringify(request)}\n`);
    let buffered = Buffer.alloc(0);
    if (this.readableFlowing === true) {
      this.#onHandshakeData = (chunk) => {
        buffered = Buffer.concat([buffered, chunk]);
        const newline = buffered.indexOf(10);
        if (newline < 0) {
          if (buffered.length > RELAY_MAX_LINE_BYTES)
            this.destroy(new Error('the gateway relay answered garbage'));
          return;
        }
        this.#onHandshakeData = undefined;
        this.removeListener('end', onEnd);
        this.#finish(buffered.subarray(0, newline).toString('utf8'));
        const rest = buffered.subarray(newline + 1);
        if (rest.length > 0 && !this.destroyed) super.emit('data', this.#asRead(rest));
      };
      this.once('end', onEnd);
      // net.Socket starts reading on its own 'connect' event, which is held back until the answer.
      this._read(0);
      return;
    }
    const onReadable = () => {
      for (
        let chunk = this.read() as Buffer | string | null;
        chunk !== null;
        chunk = this.read() as Buffer | string | null
      ) {
        buffered = Buffer.concat([buffered, asBuffer(chunk)]);
        const newline = buffered.indexOf(10);
        if (newline < 0) {
          if (buffered.length > RELAY_MAX_LINE_BYTES)
            this.destroy(new Error('the gateway relay answered garbage'));
          continue;
        }
        this.removeListener('readable', onReadable);
        this.removeListener('end', onEnd);
        // Bytes the target sent right away (an SSH banner) belong to the library.
        const rest = buffered.subarray(newline + 1);
        if (rest.length > 0) this.unshift(this.#asRead(rest));
        this.#finish(buffered.subarray(0, newline).toString('utf8'));
        return;
      }
    };
    this.on('readable', onReadable);
    this.once('end', onEnd);
  }

  /** Bytes as the library reads them: text when it set an encoding (basic-ftp's control connection). */
  #asRead(bytes: Buffer): Buffer | string {
    return this.readableEncoding ? bytes.toString(this.readableEncoding) : bytes;
  }

  #finish(line: string): void {
    let reply: RelayReply;
    try {
      reply = RelayReply.parse(JSON.parse(line));
    } catch {
      this.destroy(new Error('the gateway relay answered garbage'));
      return;
    }
    if (!reply.ok) {
      this.destroy(Object.assign(new Error(reply.error), { code: GATEWAY_REFUSED }));
      return;
    }
    this.#handshaken = true;
    super.emit('connect');
    super.emit('ready');
  }
}

function isSystemError(value: unknown): value is NodeJS.ErrnoException {
  return value instanceof Error && typeof (value as NodeJS.ErrnoException).syscall === 'string';
}

function asBuffer(chunk: Buffer | string): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
}

/**
 * How a step opens its connections when its system is behind a gateway: unconnected sockets for
 * libraries that connect themselves (pg), `key` to keep their pools apart from direct connections.
 */
export interface GatewayDial {
  key: string;
  route: GatewayRoute;
  socket(): TunnelSocket;
  /** An unconnected socket to another port of the target's host (FTP passive data). */
  dataSocket(port: number): TunnelSocket;
  connect(timeoutMs: number): Promise<TunnelSocket>;
}

export function gatewayDial(relay: GatewayRelayAddress | undefined, route: GatewayRoute): GatewayDial {
  return {
    key: `gateway ${route.tunnelId}/${route.target}`,
    route,
    socket: () => new TunnelSocket(relay, route),
    dataSocket: (port) => new TunnelSocket(relay, route, port),
    connect: (timeoutMs) => dialGateway(relay, route, timeoutMs),
  };
}

/** Opens a stream to the route's target; resolves once the relay said yes. */
export function dialGateway(
  relay: GatewayRelayAddress | undefined,
  route: GatewayRoute,
  timeoutMs: number,
): Promise<TunnelSocket> {
  return new Promise((resolve, reject) => {
    const socket = new TunnelSocket(relay, route);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`gateway ${route.tunnelId}: no stream to '${route.target}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const onError = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', onError);
    socket.connect(route.port, route.host, () => {
      clearTimeout(timer);
      socket.removeListener('error', onError);
      resolve(socket);
    });
  });
}
