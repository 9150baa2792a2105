/**
 * In-process FTP / FTPS server for tests (ftp-srv), rooted in a temp directory, listening on a free
 * port of 127.0.0.1.
 *
 * ftp-srv workarounds:
 * - its constructor hooks SIGTERM/SIGINT/SIGQUIT to close and `process.exit(0)`; we remove those hooks,
 *   a test process must not exit because a server exists;
 * - passive mode needs `pasv_url`; each server gets its own random passive port range so parallel test
 *   files rarely probe the same ports;
 * - it logs through bunyan to stdout; we give it a silent logger.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSystem, FtpSrv } from 'ftp-srv';
import { useStarted } from './fixture.ts';
import { testTlsMaterial } from './tls.ts';

export interface FtpServerOptions {
  username?: string;
  password?: string;
  /** Serve this directory instead of a fresh temp directory (which stop() removes). */
  root?: string;
  /** The login (working) directory, as an FTP path; default '/'. */
  home?: string;
  /** 'explicit' = AUTH TLS on the plain port, 'implicit' = TLS from the first byte. Default none. */
  tls?: 'none' | 'explicit' | 'implicit';
  /** Awaited before the server starts sending a file (RETR); lets a test hold a download open. */
  beforeRead?: (ftpPath: string) => Promise<void> | void;
  /** Text of the 530 reply to a bad login (default "Invalid username or password"). */
  loginFailureMessage?: (attemptedPassword: string) => string;
}

export interface FtpServerStats {
  connections: number;
  logins: number;
  failedLogins: number;
  disconnects: number;
}

export interface FtpTestServer {
  /** `ftp://127.0.0.1:<port>` or `ftps://…` (implicit adds `?tlsMode=implicit`); no credentials. */
  url: string;
  host: string;
  port: number;
  /** Local directory behind the FTP root. */
  root: string;
  username: string;
  password: string;
  /** The CA a client must trust for FTPS (the test certificate), when TLS is on. */
  ca: string | undefined;
  stats: FtpServerStats;
  stop(): Promise<void>;
}

/** A bunyan-shaped logger that drops everything, for ftp-srv. */
export function silentLogger(): object {
  const noop = () => {};
  const logger: Record<string, unknown> = {
    trace: noop,
    debug: noop,
    info: noop,
    warn: noop,
    error: noop,
    fatal: noop,
  };
  logger.child = () => logger;
  return logger;
}

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGQUIT'] as const;

function signalListeners(): Map<string, Set<unknown>> {
  return new Map(SIGNALS.map((signal) => [signal, new Set<unknown>(process.listeners(signal))]));
}

/** Removes the signal handlers ftp-srv's constructor just added. */
function dropSignalHooks(before: Map<string, Set<unknown>>): void {
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }
}

export async function startFtpServer(options: FtpServerOptions = {}): Promise<FtpTestServer> {
  const username = options.username ?? 'tester';
  const password = options.password ?? 'secret';
  const tlsMode = options.tls ?? 'none';
  const ownsRoot = options.root === undefined;
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'kubeglue-ftp-')));
  const tls = tlsMode === 'none' ? undefined : testTlsMaterial();
  const host = '127.0.0.1';
  const pasvMin = 20_000 + Math.floor(Math.random() * 40_000);
  const stats: FtpServerStats = { connections: 0, logins: 0, failedLogins: 0, disconnects: 0 };
  const { beforeRead } = options;

  class ObservedFileSystem extends FileSystem {
    override async read(fileName: string, readOptions?: { start?: unknown }): ReturnType<FileSystem['read']> {
      if (beforeRead) await beforeRead(fileName);
      return super.read(fileName, readOptions);
    }
  }

  const before = signalListeners();
  const server = new FtpSrv({
    url: `${tlsMode === 'implicit' ? 'ftps' : 'ftp'}://${host}:0`,
    pasv_url: host,
    pasv_min: pasvMin,
    pasv_max: pasvMin + 500,
    tls: tls ? { cert: tls.cert, key: tls.key } : false,
    anonymous: false,
    greeting: 'kubeglue test FTP server',
    log: silentLogger(),
  });
  dropSignalHooks(before);

  server.on('login', ({ connection, username: user, password: given }, resolve, reject) => {
    if (user === username && given === password) {
      stats.logins += 1;
      resolve({
        root,
        cwd: options.home ?? '/',
        fs: new ObservedFileSystem(connection, { root, cwd: options.home ?? '/' }),
      });
      return;
    }
    stats.failedLogins += 1;
    reject(new Error(options.loginFailureMessage?.(given) ?? 'Invalid username or password'));
  });
  server.on('client-error', () => {
    // Clients that vanish mid-transfer (aborted steps) are expected here.
  });
  const internal = server as unknown as {
    server: Server;
    on(event: string, listener: (event: { connection?: { commandSocket?: Socket } }) => void): void;
  };
  internal.on('connect', ({ connection }) => {
    stats.connections += 1;
    // Multi-part replies otherwise wait on delayed ACKs (Nagle); real servers disable it too.
    connection?.commandSocket?.setNoDelay(true);
  });
  internal.on('disconnect', () => {
    stats.disconnects += 1;
  });

  await server.listen();
  const { port } = internal.server.address() as AddressInfo;
  const scheme = tlsMode === 'none' ? 'ftp' : 'ftps';
  return {
    url: `${scheme}://${host}:${port}${tlsMode === 'implicit' ? '?tlsMode=implicit' : ''}`,
    host,
    port,
    root,
    username,
    password,
    ca: tls?.ca,
    stats,
    async stop() {
      await server.close();
      if (ownsRoot) await rm(root, { recursive: true, force: true });
    },
  };
}

/** A server for the tests of the enclosing block, stopped after them. */
export function useFtpServer(options: FtpServerOptions = {}): FtpTestServer {
  return useStarted(
    () => startFtpServer(options),
    (server) => server.stop(),
  );
}
