/**
 * Sockets that pass the egress guard at connect time: every DNS answer is judged before a connection is
 * attempted (all of them: a name answering one public and one internal address is refused), IP literals and
 * unix socket paths are judged before connecting, and the connected socket's remote address is judged once
 * more before anyone sees the 'connect' event. A DNS answer that changes between a check and the connection
 * (rebinding) therefore cannot slip through: the addresses judged are the ones connected to.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { isIP, Socket, type SocketConstructorOpts, type TcpSocketConnectOpts } from 'node:net';
import { buildConnector } from 'undici';
import type { EgressGuard } from './egress-policy.ts';

export type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** node:dns lookup with `all: true` (injectable for tests: no DNS server is needed to fake an answer). */
export type ResolveAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolve: ResolveAll = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * A `lookup` for net/tls.connect that refuses the connection when any resolved address is refused. It
 * answers in the form the caller asked for (`all` is what Happy Eyeballs uses).
 */
export function guardedLookup(guard: EgressGuard, resolve: ResolveAll = systemResolve) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, []);
        return;
      }
      for (const { address } of addresses) {
        const refusal = guard.judge(hostname, address);
        if (refusal) {
          callback(refusal, []);
          return;
        }
      }
      if (options.all) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (!first)
        callback(Object.assign(new Error(`${hostname} resolves to no address`), { code: 'ENOTFOUND' }), []);
      else callback(null, first.address, first.family);
    });
  };
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

interface ConnectRequest {
  options: TcpSocketConnectOpts | { path: string };
  listener: (() => void) | undefined;
}

/** net.Socket#connect's overloads: (options, cb), (port, host?, cb), (path, cb). */
function connectRequest(args: unknown[]): ConnectRequest {
  const [first, second, third] = args;
  const listener = [second, third].find((arg): arg is () => void => typeof arg === 'function');
  if (typeof first === 'object' && first !== null)
    return { options: first as TcpSocketConnectOpts, listener };
  if (typeof first === 'string' && !/^\d+$/.test(first)) return { options: { path: first }, listener };
  const host = typeof second === 'string' ? second : 'localhost';
  return { options: { port: Number(first), host }, listener };
}

export interface GuardedSocketOptions extends SocketConstructorOpts {
  /** Resolver used for host names (tests inject one). */
  resolve?: ResolveAll;
  /**
   * The host name host-name rules see when the socket connects to an IP: an FTP data connection goes to the
   * IP of the control connection, which was judged under the name the URL gave.
   */
  nameFor?: (address: string) => string | undefined;
}

/**
 * A net.Socket whose connect() passes the egress guard. Libraries that create or accept their own socket
 * (pg's `stream`, basic-ftp's socket factory, ssh2's `sock`) use it in place of a plain one, so their
 * connections are judged without changing how they speak or verify TLS.
 */
export class GuardedSocket extends Socket {
  readonly #guard: EgressGuard;
  readonly #resolve: ResolveAll | undefined;
  readonly #nameFor: GuardedSocketOptions['nameFor'];
  #host = '';
  #checked = false;

  constructor(guard: EgressGuard, options: GuardedSocketOptions = {}) {
    const { resolve, nameFor, ...socketOptions } = options;
    super(socketOptions);
    this.#guard = guard;
    this.#resolve = resolve;
    this.#nameFor = nameFor;
  }

  // net.Socket#connect is overloaded; connectRequest handles every form.
  override connect(...args: unknown[]): this {
    const { options, listener } = connectRequest(args);
    if ('path' in options) {
      this.#host = options.path;
      const refusal = this.#guard.judge(options.path, options.path);
      if (refusal) return this.#refuse(refusal);
      this.#checked = true;
      return super.connect(options, listener);
    }
    const host = unbracket(options.host ?? 'localhost');
    this.#host = host;
    if (isIP(host)) {
      const refusal = this.#guard.judge(this.#nameFor?.(host) ?? host, host);
      if (refusal) return this.#refuse(refusal);
      return super.connect(options, listener);
    }
    return super.connect({ ...options, lookup: guardedLookup(this.#guard, this.#resolve) }, listener);
  }

  /** Refused before any packet was sent; the error arrives like a connection error would. */
  #refuse(error: Error): this {
    process.nextTick(() => this.destroy(error));
    return this;
  }

  // The remote address is judged before any 'connect' listener (the library's, which may start writing) runs.
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'connect' && !this.#checked) {
      this.#checked = true;
      const remote = this.remoteAddress;
      const name = isIP(this.#host) ? (this.#nameFor?.(this.#host) ?? this.#host) : this.#host;
      const refusal =
        remote === undefined
          ? new Error('the connected address is unknown')
          : this.#guard.judge(name, remote);
      if (refusal) {
        this.destroy(refusal);
        return false;
      }
    }
    return super.emit(event, ...args);
  }
}

/** Opens a guarded TCP connection; resolves once connected, rejects with the refusal or the socket error. */
export function connectGuarded(
  guard: EgressGuard,
  target: { host: string; port: number; timeoutMs: number; resolve?: ResolveAll },
): Promise<GuardedSocket> {
  return new Promise((resolve, reject) => {
    const socket = new GuardedSocket(guard, target.resolve ? { resolve: target.resolve } : {});
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connecting to ${target.host}:${target.port} timed out after ${target.timeoutMs} ms`));
    }, target.timeoutMs);
    const onError = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    // Stays attached: a later error must not be unhandled before the caller adds its own listener.
    socket.on('error', onError);
    socket.connect({ host: target.host, port: target.port }, () => {
      clearTimeout(timer);
      resolve(socket);
    });
  });
}

/**
 * An undici connector that judges each connection: IP-literal hosts before connecting, names in the
 * socket's own DNS lookup, and the connected socket's remote address afterwards. Every redirect hop the
 * HTTP client follows connects through it as well.
 */
export function egressConnector(
  guard: EgressGuard,
  options: { timeoutMs: number; resolve?: ResolveAll },
): buildConnector.connector {
  const connect = buildConnector({
    timeout: options.timeoutMs,
    lookup: guardedLookup(guard, options.resolve),
  });
  return (connectOptions, callback) => {
    const host = unbracket(connectOptions.hostname);
    if (isIP(host)) {
      const refusal = guard.judge(host, host);
      if (refusal) {
        callback(refusal, null);
        return;
      }
    }
    connect(connectOptions, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new Error('connection failed'), null);
        return;
      }
      const remote = (socket as Socket).remoteAddress;
      const refusal =
        remote === undefined ? new Error('the connected address is unknown') : guard.judge(host, remote);
      if (refusal) {
        socket.destroy();
        callback(refusal, null);
        return;
      }
      callback(null, socket);
    });
  };
}
