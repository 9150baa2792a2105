/**
 * The gateway agent: one outbound WebSocket to the API's tunnel endpoint, kept alive with pings and
 * re-established with exponential backoff and jitter; each stream the server opens is dialed to a
 * configured target (nothing else) and piped both ways. Logs never carry payloads or the API key.
 */
import { connect as netConnect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { parseJsonOrUndefined } from '../contract/json.ts';
import {
  CLOSE,
  decodeOpen,
  isDataPort,
  MAX_MESSAGE_BYTES,
  RegisteredMessage,
  type RegisterMessage,
} from '../contract/wire/tunnel.ts';
import { TunnelMux, type TunnelStream } from '../contract/wire/tunnel-mux.ts';
import type { AgentConfig, AgentTarget } from './config.ts';

export interface AgentOptions {
  log(line: string): void;
  /** Connections, streams and byte counts (`-debug`). */
  debug?: ((line: string) => void) | undefined;
  /** Reconnect delays: the first, the largest (ms). */
  backoffMs?: { initial: number; max: number };
  /** A ping every this many ms; no pong by the next one drops the connection. */
  pingIntervalMs?: number;
  /** How long dialing a target may take. */
  dialTimeoutMs?: number;
  random?: () => number;
}

const AGENT_VERSION = 'kubeglue-agent/1';

/** How one connection ended, which decides what the agent does next. */
type Ended = { registered: boolean; replaced: boolean };

/** `initial · 2^attempt`, capped, with full jitter over its upper half (so agents spread out). */
export function backoffDelay(attempt: number, initial: number, max: number, random: () => number): number {
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export class GatewayAgent {
  readonly #config: AgentConfig;
  readonly #options: Required<Omit<AgentOptions, 'debug'>> & Pick<AgentOptions, 'debug'>;
  #socket: WebSocket | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  #nextConnection = 1;

  constructor(config: AgentConfig, options: AgentOptions) {
    this.#config = config;
    this.#options = {
      backoffMs: { initial: 500, max: 30_000 },
      pingIntervalMs: 15_000,
      dialTimeoutMs: 10_000,
      random: Math.random,
      ...options,
    };
  }

  /** Runs until stop() or until a newer agent replaced this one; resolves then. */
  run(): Promise<void> {
    this.#loop ??= this.#connectLoop();
    return this.#loop;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    this.#socket?.close(CLOSE.goingAway, 'agent shutting down');
    await this.#loop;
  }

  async #connectLoop(): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      const ended = await this.#connectOnce();
      if (this.#stopping) break;
      if (ended.replaced) {
        this.#options.log(
          `another agent registered tunnel '${this.#config.tunnelId}' and took it over; this agent stops`,
        );
        return;
      }
      failures = ended.registered ? 0 : failures + 1;
      const { initial, max } = this.#options.backoffMs;
      const delay = backoffDelay(failures, initial, max, this.#options.random);
      this.#options.log(`reconnecting in ${delay} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  #connectOnce(): Promise<Ended> {
    const { log, debug } = this.#options;
    const connection = this.#nextConnection++;
    const url = this.#config.serverUrl;
    debug?.(`connection ${connection}: connecting to ${url}`);
    return new Promise((resolve) => {
      const ended: Ended = { registered: false, replaced: false };
      const socket = new WebSocket(url, {
        headers: { authorization: `Bearer ${this.#config.apiKey}` },
        handshakeTimeout: 15_000,
        maxPayload: MAX_MESSAGE_BYTES,
        perMessageDeflate: false,
      });
      this.#socket = socket;
      const mux = new TunnelMux({
        send: (frame) => {
          if (socket.readyState !== WebSocket.OPEN) return false;
          socket.send(frame, { binary: true });
          return true;
        },
        onOpen: (streamId, target) => this.#openStream(mux, connection, streamId, target),
      });
      let alive = true;
      const pinger = setInterval(() => {
        if (!alive) {
          log('the server did not answer a ping; dropping the connection');
          socket.terminate();
          return;
        }
        alive = false;
        socket.ping();
      }, this.#options.pingIntervalMs);
      socket.on('pong', () => {
        alive = true;
      });
      socket.on('unexpected-response', (_request, response) => {
        const status = response.statusCode ?? 0;
        const why =
          status === 401
            ? 'the api_key is not accepted'
            : status === 403
              ? 'the api_key may not host gateways (it needs the scope gateways:host)'
              : `HTTP ${status}`;
        log(`the server refused the connection: ${why}`);
        response.resume();
        socket.terminate();
      });
      socket.on('open', () => {
        debug?.(`connection ${connection}: open, registering tunnel '${this.#config.tunnelId}'`);
        const register: RegisterMessage = {
          type: 'register',
          tunnelId: this.#config.tunnelId,
          targets: [...this.#config.targets.values()].map(({ name, protocol }) => ({ name, protocol })),
          agentVersion: AGENT_VERSION,
        };
        socket.send(JSON.stringify(register));
      });
      socket.on('message', (data, isBinary) => {
        const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        if (isBinary) {
          mux.receive(buffer);
          return;
        }
        const parsed = RegisteredMessage.safeParse(parseJsonOrUndefined(buffer.toString('utf8')));
        if (parsed.success) {
          ended.registered = true;
          const names = [...this.#config.targets.keys()].join(', ');
          log(`connected: tunnel '${parsed.data.tunnelId}' registered with targets ${names}`);
        }
      });
      socket.on('error', (error) => {
        log(`connection error: ${error.message}`);
      });
      socket.on('close', (code, reason) => {
        clearInterval(pinger);
        ended.replaced = code === CLOSE.replaced;
        const text = reason.toString('utf8');
        if (code === CLOSE.notOwner) {
          // Retried with backoff like a refused key: an admin releasing the id (or revoking the owner
          // key) lets this agent in without a restart.
          log(
            `the server refused tunnel '${this.#config.tunnelId}': another API key owns this tunnel id. ` +
              'Only the key that first registered a tunnel id may register it again; use that key, or ask an ' +
              'admin to release the id (DELETE /v1/gateways/{tunnelId}/owner) or revoke the old key',
          );
        } else if (ended.registered || code === CLOSE.invalidRegistration)
          log(`disconnected (code ${code}${text ? `: ${text}` : ''})`);
        mux.close(new Error('the tunnel connection closed'));
        if (this.#socket === socket) this.#socket = undefined;
        resolve(ended);
      });
    });
  }

  #openStream(mux: TunnelMux, connection: number, streamId: number, payload: string): void {
    const { log, debug } = this.#options;
    const { target: targetName, dataPort } = decodeOpen(payload);
    const target = this.#config.targets.get(targetName);
    if (!target) {
      log(`refused stream ${streamId}: '${targetName}' is not a configured target`);
      mux.refuse(streamId, `target '${targetName}' is not configured on the agent of this tunnel`);
      return;
    }
    // A passive FTP data connection: the target's own host, an unprivileged port, FTP targets only.
    if (
      dataPort !== undefined &&
      !((target.protocol === 'ftp' || target.protocol === 'ftps') && isDataPort(dataPort))
    ) {
      log(
        `refused stream ${streamId}: a data port of '${targetName}' (FTP/FTPS targets only, ports 1024-65535)`,
      );
      mux.refuse(
        streamId,
        `target '${targetName}' takes no data connections (FTP/FTPS targets only, ports 1024-65535)`,
      );
      return;
    }
    const port = dataPort ?? target.port;
    debug?.(`connection ${connection}: stream ${streamId} → ${target.name} (${target.host}:${port})`);
    this.#dial(target, port).then(
      (socket) => {
        const stream = mux.accept(streamId);
        pipeBothWays(socket, stream, (error) => {
          debug?.(
            `connection ${connection}: stream ${streamId} → ${target.name} closed` +
              `${error ? ` (${error.message})` : ''}: ${stream.bytesOut} bytes to the server, ` +
              `${stream.bytesIn} bytes from it`,
          );
        });
      },
      (error: Error) => {
        log(`stream ${streamId} → ${target.name}: ${error.message}`);
        mux.refuse(streamId, `the agent could not connect to target '${target.name}': ${error.message}`);
      },
    );
  }

  #dial(target: AgentTarget, port: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const socket = netConnect({ host: target.host, port, allowHalfOpen: true });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connecting timed out after ${this.#options.dialTimeoutMs} ms`));
      }, this.#options.dialTimeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        resolve(socket);
      });
      const onError = (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new Error(error.code ?? error.message));
      };
      socket.once('error', onError);
    });
  }
}

/**
 * Pipes a TCP socket and a tunnel stream into each other with backpressure (pipe pauses a source whose
 * destination's buffer is full) and half-close (an end on one side ends the other's writing side). An
 * error on either side destroys both. `done` is called once, when both are closed.
 */
export function pipeBothWays(socket: Socket, stream: TunnelStream, done: (error?: Error) => void): void {
  let failure: Error | undefined;
  let open = 2;
  const closed = () => {
    open -= 1;
    if (open === 0) done(failure);
  };
  socket.on('error', (error) => {
    failure ??= error;
    stream.destroy(error);
  });
  stream.on('error', (error) => {
    failure ??= error;
    socket.destroy();
  });
  socket.once('close', closed);
  stream.once('close', closed);
  socket.pipe(stream);
  stream.pipe(socket);
}
