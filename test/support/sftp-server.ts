/**
 * In-process SFTP server for tests: ssh2's Server with an SFTP subsystem backed by a temp directory
 * (the directory is the SFTP root `/`), password and public-key authentication, on a free port of
 * 127.0.0.1. It implements the requests ssh2-sftp-client sends: OPEN/READ/WRITE/CLOSE/FSTAT/FSETSTAT/
 * SETSTAT/OPENDIR/READDIR/STAT/LSTAT/REMOVE/RMDIR/RENAME/MKDIR/REALPATH.
 */
import { createHash } from 'node:crypto';
import type { Stats as FsStats } from 'node:fs';
import {
  type FileHandle,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import ssh2, {
  type Attributes,
  type AuthContext,
  type AuthenticationType,
  type Connection,
  type FileEntry,
  type SFTPWrapper,
} from 'ssh2';
import { useStarted } from './fixture.ts';

const { Server, utils } = ssh2;
const { STATUS_CODE, flagsToString } = utils.sftp;

export interface SftpRequestInfo {
  /** The SFTP request name, e.g. 'OPEN', 'READ', 'READDIR'. */
  kind: string;
  /** The SFTP path the request is about (for handle requests: the path the handle was opened on). */
  path: string;
}

export interface SftpServerOptions {
  username?: string;
  /** Accepted password; set to null to refuse password authentication. */
  password?: string | null;
  /** How the password is asked for: the `password` method (default) or `keyboard-interactive` prompts. */
  passwordVia?: 'password' | 'keyboard-interactive';
  /** Accepted public key (OpenSSH `ssh-ed25519 AAAA…` line), for key authentication. */
  publicKey?: string;
  /** Serve this directory instead of a fresh temp directory (which stop() removes). */
  root?: string;
  /** The login directory as an SFTP path (what relative paths resolve against); default '/'. */
  home?: string;
  /** Awaited before each request is handled; lets a test hold an operation open. */
  beforeRequest?: (request: SftpRequestInfo) => Promise<void> | void;
}

export interface SftpServerStats {
  connections: number;
  logins: number;
  failedLogins: number;
  disconnects: number;
  sftpSessions: number;
}

export interface SftpTestServer {
  /** `sftp://127.0.0.1:<port>`, no credentials. */
  url: string;
  host: string;
  port: number;
  root: string;
  username: string;
  password: string | null;
  /** `SHA256:<base64>` of the host key, as `ssh-keygen -lf` prints it. */
  hostKeyFingerprint: string;
  stats: SftpServerStats;
  stop(): Promise<void>;
}

export interface TestKeyPair {
  /** OpenSSH private key (encrypted when a passphrase was given). */
  privateKey: string;
  /** OpenSSH public key line. */
  publicKey: string;
}

/**
 * ssh2's ed25519 key generation yields a key its own parser rejects ("Malformed OpenSSH public
 * key") about 3 times in 1 000; generate until ssh2 can read both halves.
 */
export function generateTestKeyPair(passphrase?: string): TestKeyPair {
  for (let attempt = 0; attempt < 20; attempt++) {
    const keys = passphrase
      ? utils.generateKeyPairSync('ed25519', { passphrase, cipher: 'aes256-ctr', rounds: 16 })
      : utils.generateKeyPairSync('ed25519');
    const readable =
      !(utils.parseKey(keys.public) instanceof Error) &&
      !(utils.parseKey(keys.private, passphrase) instanceof Error);
    if (readable) return { privateKey: keys.private, publicKey: keys.public };
  }
  throw new Error('ssh2 could not generate a readable ed25519 key pair');
}

function sameText(given: string, expected: string): boolean {
  return createHash('sha256').update(given).digest().equals(createHash('sha256').update(expected).digest());
}

function toAttrs(st: FsStats): Attributes {
  return {
    mode: st.mode,
    uid: st.uid,
    gid: st.gid,
    size: st.size,
    atime: Math.floor(st.atimeMs / 1000),
    mtime: Math.floor(st.mtimeMs / 1000),
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function longname(name: string, st: FsStats): string {
  const type = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : '-';
  const permissions = [...'rwxrwxrwx']
    .map((char, index) => (st.mode & (1 << (8 - index)) ? char : '-'))
    .join('');
  const date = st.mtime;
  const when = `${MONTHS[date.getUTCMonth()]} ${String(date.getUTCDate()).padStart(2)} ${date.getUTCFullYear()}`;
  return `${type}${permissions} 1 owner group ${String(st.size).padStart(10)} ${when} ${name}`;
}

function statusOf(error: unknown): number {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === 'ENOENT') return STATUS_CODE.NO_SUCH_FILE;
  if (code === 'EACCES' || code === 'EPERM') return STATUS_CODE.PERMISSION_DENIED;
  return STATUS_CODE.FAILURE;
}

type OpenHandle =
  | { kind: 'file'; path: string; file: FileHandle }
  | { kind: 'dir'; path: string; local: string; listed: boolean };

/** Serves one SFTP channel from the directory `root`. */
function serveSftp(sftp: SFTPWrapper, root: string, home: string, options: SftpServerOptions): void {
  const handles = new Map<number, OpenHandle>();
  let nextHandle = 0;
  const sftpPath = (path: string) => posix.resolve(home, path);
  const localPath = (path: string) => join(root, sftpPath(path));

  const newHandle = (handle: OpenHandle): Buffer => {
    const id = nextHandle++;
    handles.set(id, handle);
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(id, 0);
    return buffer;
  };
  const lookup = (buffer: Buffer): [number, OpenHandle] | undefined => {
    if (buffer.length !== 4) return undefined;
    const id = buffer.readUInt32BE(0);
    const handle = handles.get(id);
    return handle ? [id, handle] : undefined;
  };

  /** Runs a request handler; any thrown fs error becomes an SFTP status reply. */
  const serve = (reqid: number, kind: string, path: string, handler: () => Promise<void>) => {
    void (async () => {
      try {
        await options.beforeRequest?.({ kind, path: sftpPath(path) });
        await handler();
      } catch (error) {
        sftp.status(reqid, statusOf(error), error instanceof Error ? error.message : String(error));
      }
    })();
  };
  const withHandle = (
    reqid: number,
    kind: string,
    buffer: Buffer,
    handler: (id: number, h: OpenHandle) => Promise<void>,
  ) => {
    const found = lookup(buffer);
    if (!found) {
      sftp.status(reqid, STATUS_CODE.FAILURE, 'invalid handle');
      return;
    }
    serve(reqid, kind, found[1].path, () => handler(found[0], found[1]));
  };

  sftp.on('REALPATH', (reqid, path) => {
    serve(reqid, 'REALPATH', path, async () => {
      const resolved = sftpPath(path);
      sftp.name(reqid, [{ filename: resolved, longname: resolved, attrs: {} as Attributes }]);
    });
  });
  sftp.on('OPEN', (reqid, path, flags) => {
    serve(reqid, 'OPEN', path, async () => {
      const mode = flagsToString(flags);
      if (mode === null) throw new Error('unsupported open flags');
      const file = await open(localPath(path), mode);
      sftp.handle(reqid, newHandle({ kind: 'file', path: sftpPath(path), file }));
    });
  });
  sftp.on('READ', (reqid, buffer, offset, length) => {
    withHandle(reqid, 'READ', buffer, async (_id, handle) => {
      if (handle.kind !== 'file') throw new Error('not a file handle');
      const chunk = Buffer.alloc(length);
      const { bytesRead } = await handle.file.read(chunk, 0, length, offset);
      if (bytesRead === 0) sftp.status(reqid, STATUS_CODE.EOF);
      else sftp.data(reqid, chunk.subarray(0, bytesRead));
    });
  });
  sftp.on('WRITE', (reqid, buffer, offset, data) => {
    withHandle(reqid, 'WRITE', buffer, async (_id, handle) => {
      if (handle.kind !== 'file') throw new Error('not a file handle');
      await handle.file.write(data, 0, data.length, offset);
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('FSTAT', (reqid, buffer) => {
    withHandle(reqid, 'FSTAT', buffer, async (_id, handle) => {
      const st = handle.kind === 'file' ? await handle.file.stat() : await stat(handle.local);
      sftp.attrs(reqid, toAttrs(st));
    });
  });
  sftp.on('FSETSTAT', (reqid, buffer) => {
    withHandle(reqid, 'FSETSTAT', buffer, async () => sftp.status(reqid, STATUS_CODE.OK));
  });
  sftp.on('SETSTAT', (reqid, path) => {
    serve(reqid, 'SETSTAT', path, async () => {
      await stat(localPath(path));
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('CLOSE', (reqid, buffer) => {
    withHandle(reqid, 'CLOSE', buffer, async (id, handle) => {
      handles.delete(id);
      if (handle.kind === 'file') await handle.file.close();
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('OPENDIR', (reqid, path) => {
    serve(reqid, 'OPENDIR', path, async () => {
      const local = localPath(path);
      if (!(await stat(local)).isDirectory())
        throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
      sftp.handle(reqid, newHandle({ kind: 'dir', path: sftpPath(path), local, listed: false }));
    });
  });
  sftp.on('READDIR', (reqid, buffer) => {
    withHandle(reqid, 'READDIR', buffer, async (_id, handle) => {
      if (handle.kind !== 'dir') throw new Error('not a directory handle');
      if (handle.listed) {
        sftp.status(reqid, STATUS_CODE.EOF);
        return;
      }
      handle.listed = true;
      const names = await readdir(handle.local);
      const entries: FileEntry[] = [];
      for (const name of names) {
        const st = await lstat(join(handle.local, name));
        entries.push({ filename: name, longname: longname(name, st), attrs: toAttrs(st) });
      }
      if (entries.length === 0) sftp.status(reqid, STATUS_CODE.EOF);
      else sftp.name(reqid, entries);
    });
  });
  sftp.on('STAT', (reqid, path) => {
    serve(reqid, 'STAT', path, async () => sftp.attrs(reqid, toAttrs(await stat(localPath(path)))));
  });
  sftp.on('LSTAT', (reqid, path) => {
    serve(reqid, 'LSTAT', path, async () => sftp.attrs(reqid, toAttrs(await lstat(localPath(path)))));
  });
  sftp.on('REMOVE', (reqid, path) => {
    serve(reqid, 'REMOVE', path, async () => {
      await unlink(localPath(path));
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('RMDIR', (reqid, path) => {
    serve(reqid, 'RMDIR', path, async () => {
      await rmdir(localPath(path));
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('RENAME', (reqid, from, to) => {
    serve(reqid, 'RENAME', from, async () => {
      await rename(localPath(from), localPath(to));
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('MKDIR', (reqid, path) => {
    serve(reqid, 'MKDIR', path, async () => {
      await mkdir(localPath(path));
      sftp.status(reqid, STATUS_CODE.OK);
    });
  });
  sftp.on('close', () => {
    for (const handle of handles.values())
      if (handle.kind === 'file') void handle.file.close().catch(() => {});
    handles.clear();
  });
}

/**
 * ssh2's Server leaves Nagle's algorithm on; with delayed ACKs every SFTP round trip then costs ~40 ms+.
 * Real servers (OpenSSH) set TCP_NODELAY, so the test server does too.
 */
function noDelay(client: Connection): void {
  const socket = (client as unknown as { _sock?: { setNoDelay?: (on: boolean) => void } })._sock;
  socket?.setNoDelay?.(true);
}

function checkLogin(ctx: AuthContext, options: SftpServerOptions, username: string): boolean {
  if (ctx.username !== username) return false;
  if (ctx.method === 'password' && (options.passwordVia ?? 'password') === 'password') {
    return typeof options.password === 'string' && sameText(ctx.password, options.password);
  }
  if (ctx.method === 'publickey' && options.publicKey) {
    const allowed = utils.parseKey(options.publicKey);
    if (allowed instanceof Error) throw allowed;
    if (ctx.key.algo !== allowed.type || !ctx.key.data.equals(allowed.getPublicSSH())) return false;
    // Without a signature the client only asks whether this key would do; the signed retry proves it.
    if (ctx.signature === undefined || ctx.blob === undefined) return true;
    return allowed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true;
  }
  return false;
}

export async function startSftpServer(options: SftpServerOptions = {}): Promise<SftpTestServer> {
  const username = options.username ?? 'tester';
  const password = options.password === undefined ? 'secret' : options.password;
  const settings = { ...options, password };
  const ownsRoot = options.root === undefined;
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'kubeglue-sftp-')));
  const home = options.home ?? '/';
  const hostKey = generateTestKeyPair();
  const parsedHostKey = utils.parseKey(hostKey.publicKey);
  if (parsedHostKey instanceof Error) throw parsedHostKey;
  const hostKeyFingerprint = `SHA256:${createHash('sha256').update(parsedHostKey.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  const stats: SftpServerStats = {
    connections: 0,
    logins: 0,
    failedLogins: 0,
    disconnects: 0,
    sftpSessions: 0,
  };
  const clients = new Set<Connection>();

  const server = new Server({ hostKeys: [hostKey.privateKey] }, (client) => {
    stats.connections += 1;
    clients.add(client);
    noDelay(client);
    const methods: AuthenticationType[] = [options.passwordVia ?? 'password', 'publickey'];
    client.on('authentication', (ctx) => {
      if (ctx.method === 'keyboard-interactive' && options.passwordVia === 'keyboard-interactive') {
        ctx.prompt([{ prompt: 'Password: ', echo: false }], (answers) => {
          if (
            ctx.username === username &&
            typeof password === 'string' &&
            sameText(answers[0] ?? '', password)
          ) {
            ctx.accept();
            return;
          }
          stats.failedLogins += 1;
          ctx.reject(methods);
        });
        return;
      }
      let accepted = false;
      try {
        accepted = checkLogin(ctx, settings, username);
      } catch {
        accepted = false;
      }
      if (accepted) {
        ctx.accept();
        return;
      }
      // Methods we do not offer are not failures: clients try them in turn (ssh2 starts with 'none').
      if (methods.includes(ctx.method)) stats.failedLogins += 1;
      ctx.reject(methods);
    });
    client.on('ready', () => {
      stats.logins += 1;
      client.on('session', (accept) => {
        const session = accept();
        session.on('sftp', (acceptSftp) => {
          stats.sftpSessions += 1;
          serveSftp(acceptSftp(), root, home, options);
        });
      });
    });
    client.on('error', () => {
      // Clients that vanish mid-request (aborted steps) are expected here.
    });
    client.on('close', () => {
      stats.disconnects += 1;
      clients.delete(client);
    });
  });

  const host = '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `sftp://${host}:${port}`,
    host,
    port,
    root,
    username,
    password,
    hostKeyFingerprint,
    stats,
    async stop() {
      for (const client of clients) client.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownsRoot) await rm(root, { recursive: true, force: true });
    },
  };
}

/** A server for the tests of the enclosing block, stopped after them. */
export function useSftpServer(options: SftpServerOptions = {}): SftpTestServer {
  return useStarted(
    () => startSftpServer(options),
    (server) => server.stop(),
  );
}
