/**
 * SFTP steps over ssh2-sftp-client (and the ssh2 SFTP channel it opens, for listings with full attributes).
 *
 * Authentication: password (also answered to keyboard-interactive prompts) and/or `privateKey`
 * (+ `passphrase`). The host key is accepted as is unless a `hostFingerprint` (`SHA256:<base64>`, as
 * printed by `ssh-keygen -lf`) is given in the system credentials or as a URL query parameter.
 */
import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import type { ConnectConfig, SFTPWrapper, Stats } from 'ssh2';
import SftpClient from 'ssh2-sftp-client';
import type { JsonValue } from '../../contract/json.ts';
import type { EgressGuard } from './egress-policy.ts';
import { connectGuarded } from './egress-socket.ts';
import {
  BoundedCollector,
  type Bounds,
  type FileEntry,
  type FileEntryType,
  type FileProtocol,
  type FileSession,
  FileStepError,
  type FileStepRequest,
  hostPort,
  joinRemotePath,
  normalisePem,
  remoteBasename,
  removeFileOrEmptyDirectory,
  runFileStep,
  type SessionContext,
  timeLeft,
} from './file-operations.ts';
import type { GatewayDial } from './gateway-socket.ts';

export type { FileStepRequest } from './file-operations.ts';

/** SFTP status code for "no such file". */
const NO_SUCH_FILE = 2;
/** Keepalives detect a silent peer after about a minute, even before the run's deadline. */
const KEEPALIVE_INTERVAL_MS = 15_000;
const KEEPALIVE_COUNT_MAX = 4;

function entryType(attrs: Stats, longname: string | undefined): FileEntryType {
  if (attrs.mode !== undefined) {
    if (attrs.isDirectory()) return 'directory';
    if (attrs.isSymbolicLink()) return 'symlink';
    return 'file';
  }
  // Without a mode, fall back to the `ls -l` type character some servers still send.
  if (longname?.startsWith('d')) return 'directory';
  if (longname?.startsWith('l')) return 'symlink';
  return 'file';
}

function toEntry(path: string, name: string, attrs: Stats, longname?: string): FileEntry {
  return {
    name,
    path,
    size: attrs.size ?? 0,
    type: entryType(attrs, longname),
    modifyTime: typeof attrs.mtime === 'number' ? new Date(attrs.mtime * 1000).toISOString() : null,
  };
}

function sftpCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

/** `SHA256:abc…` or `abc…`, compared with the base64 (unpadded) SHA-256 of the host key blob. */
function hostKeyVerifier(fingerprint: string): (key: Buffer) => boolean {
  const expected = fingerprint.replace(/^SHA256:/i, '').replace(/=+$/, '');
  return (key) => createHash('sha256').update(key).digest('base64').replace(/=+$/, '') === expected;
}

interface SshConnection {
  destroy(): void;
  setNoDelay(noDelay: boolean): void;
}

/** ssh2-sftp-client keeps its ssh2 Client in `client`; we need it to drop the connection at once. */
function underlyingConnection(client: SftpClient): SshConnection | undefined {
  const inner = (client as unknown as { client?: Partial<SshConnection> }).client;
  if (typeof inner?.destroy === 'function' && typeof inner.setNoDelay === 'function')
    return inner as SshConnection;
  return undefined;
}

function ignore(): void {}

class SftpSession implements FileSession {
  // The default callbacks print to the console; connection events reach us through rejected calls.
  private readonly client = new SftpClient('kubeglue', { error: ignore, end: ignore, close: ignore });
  private channel: SFTPWrapper | undefined;
  private sock: Socket | undefined;
  private readonly config: ConnectConfig;
  private readonly password: string | undefined;
  private readonly egress: EgressGuard;
  private readonly gateway: GatewayDial | undefined;
  private readonly bounds: Bounds;

  constructor({ target, credentials, bounds, egress, gateway }: SessionContext) {
    this.egress = egress;
    this.gateway = gateway;
    this.bounds = bounds;
    const username = target.username ?? credentials.username;
    if (!username) throw new FileStepError('SFTP needs a username (URL userinfo or the system credential)');
    this.password = target.password ?? credentials.password;
    const fingerprint = target.query.get('hostFingerprint') || credentials.hostFingerprint;
    this.config = {
      host: target.host,
      port: target.port ?? 22,
      username,
      ...(this.password !== undefined ? { password: this.password, tryKeyboard: true } : {}),
      ...(credentials.privateKey ? { privateKey: normalisePem(credentials.privateKey) } : {}),
      ...(credentials.passphrase ? { passphrase: credentials.passphrase } : {}),
      ...(fingerprint ? { hostVerifier: hostKeyVerifier(fingerprint) } : {}),
      readyTimeout: Math.max(1, timeLeft(bounds)),
      keepaliveInterval: KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: KEEPALIVE_COUNT_MAX,
    };
  }

  async connect(): Promise<void> {
    const { password } = this;
    if (password !== undefined) {
      this.client.on(
        'keyboard-interactive',
        (
          _name: string,
          _instructions: string,
          _lang: string,
          prompts: unknown[],
          finish: (a: string[]) => void,
        ) => finish(prompts.map(() => password)),
      );
    }
    // ssh2 speaks over a socket we connected through the egress guard (its `sock` option).
    // ... or through the gateway's tunnel when the system is behind one.
    const timeoutMs = Math.max(1, timeLeft(this.bounds));
    const sock = this.gateway
      ? await this.gateway.connect(timeoutMs)
      : await connectGuarded(this.egress, {
          host: this.config.host ?? '',
          port: this.config.port ?? 22,
          timeoutMs,
        });
    this.sock = sock;
    const connecting = this.client.connect({ ...this.config, sock });
    // SFTP is request/response; with Nagle's algorithm each round trip can wait for a delayed ACK.
    underlyingConnection(this.client)?.setNoDelay(true);
    this.channel = await connecting;
  }

  private get sftp(): SFTPWrapper {
    if (this.channel === undefined) throw new Error('not connected');
    return this.channel;
  }

  list(path: string): Promise<FileEntry[]> {
    return new Promise((resolve, reject) => {
      this.sftp.readdir(path, (error, items) => {
        if (error) {
          reject(error);
          return;
        }
        const entries = items
          .filter((item) => item.filename !== '.' && item.filename !== '..')
          .map((item) =>
            toEntry(joinRemotePath(path, item.filename), item.filename, item.attrs, item.longname),
          );
        resolve(entries);
      });
    });
  }

  async get(path: string, maxBytes: number): Promise<Uint8Array> {
    const collector = new BoundedCollector(maxBytes);
    await this.client.get(path, collector);
    return collector.bytes();
  }

  async put(path: string, bytes: Uint8Array): Promise<void> {
    await this.client.put(Buffer.from(bytes), path);
  }

  async remove(path: string): Promise<void> {
    // unlink refuses directories; only then is rmdir tried.
    await removeFileOrEmptyDirectory(this, path, {
      file: (file) => this.client.delete(file),
      directory: (dir) => this.client.rmdir(dir),
    });
  }

  async rename(from: string, to: string): Promise<void> {
    await this.client.rename(from, to);
  }

  async mkdir(path: string): Promise<void> {
    await this.client.mkdir(path, true);
  }

  stat(path: string): Promise<FileEntry | null> {
    return new Promise((resolve, reject) => {
      this.sftp.lstat(path, (error, attrs) => {
        if (error) {
          if (sftpCode(error) === NO_SUCH_FILE) resolve(null);
          else reject(error);
          return;
        }
        resolve(toEntry(path, remoteBasename(path), attrs));
      });
    });
  }

  async close(): Promise<void> {
    await this.client.end();
  }

  destroy(): void {
    underlyingConnection(this.client)?.destroy();
    this.sock?.destroy();
  }
}

const sftpProtocol: FileProtocol = {
  name: 'SFTP',
  label: () => 'SFTP',
  schemes: ['sftp'],
  endpoint: (target) => hostPort(target.host, target.port ?? 22),
  createSession: (context) => new SftpSession(context),
};

/** Runs an `sftp://` step: one operation or an array of them on one connection. */
export function executeSftpStep(req: FileStepRequest): Promise<JsonValue> {
  return runFileStep(req, sftpProtocol);
}
