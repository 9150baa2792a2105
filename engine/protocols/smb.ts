/**
 * SMB steps (`smb://host[:port]/share/path`) over our SMB2/3 client (smb2/client.ts): the same operations,
 * bounds, file artifacts and decoding as FTP and SFTP (file-operations.ts), on one signed connection per
 * step. Paths are relative to the share: `/` is its root, and a relative path resolves under the URL's
 * path after the share.
 *
 * Credentials: `username`, `password` and `domain` from the system, or `[domain;]user:password@` in the
 * URL (a connection URL in the system's `url` credential fills in a step URL without them). A username
 * written `DOMAIN\user` names its domain too. `modify: false` allows only list, get, exists and stat.
 */
import type { Socket } from 'node:net';
import type { JsonValue } from '../../contract/json.ts';
import type { EgressGuard } from './egress-policy.ts';
import { connectGuarded } from './egress-socket.ts';
import {
  type Bounds,
  type FileEntry,
  type FileProtocol,
  type FileSession,
  FileStepError,
  type FileStepRequest,
  type FileTarget,
  hostPort,
  joinRemotePath,
  remoteBasename,
  runFileStep,
  type SessionContext,
  timeLeft,
} from './file-operations.ts';
import type { GatewayDial } from './gateway-socket.ts';
import { SmbClient } from './smb2/client.ts';
import type { Identity } from './smb2/ntlm.ts';

export const SMB_DEFAULT_PORT = 445;
/** A server that answers nothing this long fails the operation, even before the run's deadline. */
const IDLE_TIMEOUT_MS = 60_000;

export type SmbStepRequest = FileStepRequest & {
  /** false: only list, get, exists and stat run; anything else fails before connecting. */
  modify: boolean;
};

/** The share (the URL path's first segment) and the path within it ('/' for its root). */
function splitShare(target: FileTarget): { share: string; path: string } {
  const [, share = '', ...rest] = target.basePath.split('/');
  return { share, path: `/${rest.join('/')}` };
}

/** A path of the share as SMB writes it: relative to the share's root, with backslashes. */
function smbPath(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('\\');
}

function decode(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The user info of the system's connection URL, when it is an smb:// URL of the same server. */
function connectionUrlUser(
  target: FileTarget,
  credentials: Record<string, string>,
): { username?: string; password?: string } {
  if (!credentials.url) return {};
  let url: URL;
  try {
    url = new URL(credentials.url);
  } catch {
    return {};
  }
  const sameServer =
    url.protocol === 'smb:' &&
    url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase() === target.host.toLowerCase() &&
    Number(url.port || SMB_DEFAULT_PORT) === (target.port ?? SMB_DEFAULT_PORT);
  if (!sameServer || url.username === '') return {};
  return {
    username: decode(url.username),
    ...(url.password !== '' ? { password: decode(url.password) } : {}),
  };
}

/** Who logs on: the URL's user info first, then the system's credentials. */
export function smbIdentity(target: FileTarget, credentials: Record<string, string>): Identity {
  const fromUrl = connectionUrlUser(target, credentials);
  const given =
    target.username !== undefined
      ? { username: target.username, password: target.password }
      : fromUrl.username !== undefined
        ? fromUrl
        : { username: credentials.username, password: credentials.password };
  const user = given.username;
  if (!user) {
    throw new FileStepError(
      'SMB needs a username: give the system the credentials username and password (and domain), or put them in the URL',
    );
  }
  const password = given.password ?? credentials.password;
  // `DOMAIN;user` is the smb URL form, `DOMAIN\user` the Windows one.
  const separator = user.search(/[;\\]/);
  return {
    username: separator < 0 ? user : user.slice(separator + 1),
    password: password ?? '',
    domain: separator < 0 ? (credentials.domain ?? '') : user.slice(0, separator),
  };
}

function connectFailure(error: unknown, endpoint: string): Error {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED')
    return new Error(`connection refused: nothing accepts connections at ${endpoint}`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new Error(`the host name does not resolve (${code})`);
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return new Error(`the host is unreachable (${code})`);
  return error instanceof Error ? error : new Error(String(error));
}

class SmbSession implements FileSession {
  readonly #target: FileTarget;
  readonly #share: string;
  readonly #identity: Identity;
  readonly #bounds: Bounds;
  readonly #egress: EgressGuard;
  readonly #gateway: GatewayDial | undefined;
  #socket: Socket | undefined;
  #client: SmbClient | undefined;

  constructor({ target, credentials, bounds, egress, gateway }: SessionContext) {
    this.#target = target;
    this.#share = splitShare(target).share;
    if (this.#share === '') {
      throw new FileStepError('Invalid SMB URL: it names no share (smb://host/share/path)');
    }
    this.#identity = smbIdentity(target, credentials);
    this.#bounds = bounds;
    this.#egress = egress;
    this.#gateway = gateway;
  }

  async connect(): Promise<void> {
    const timeoutMs = Math.max(1, timeLeft(this.#bounds));
    const host = this.#target.host;
    const port = this.#target.port ?? SMB_DEFAULT_PORT;
    try {
      this.#socket = this.#gateway
        ? await this.#gateway.connect(timeoutMs)
        : await connectGuarded(this.#egress, { host, port, timeoutMs });
    } catch (error) {
      throw connectFailure(error, endpointOf(this.#target));
    }
    this.#client = await SmbClient.connect({
      socket: this.#socket,
      server: host,
      share: this.#share,
      identity: this.#identity,
      idleTimeoutMs: IDLE_TIMEOUT_MS,
    });
  }

  get #smb(): SmbClient {
    if (this.#client === undefined) throw new Error('not connected');
    return this.#client;
  }

  async list(path: string): Promise<FileEntry[]> {
    const entries = await this.#smb.list(smbPath(path));
    return entries.map(({ name, size, type, modifyTime }) => ({
      name,
      path: joinRemotePath(path, name),
      size,
      type,
      modifyTime,
    }));
  }

  get(path: string, maxBytes: number): Promise<Uint8Array> {
    return this.#smb.read(smbPath(path), maxBytes);
  }

  put(path: string, bytes: Uint8Array): Promise<void> {
    return this.#smb.write(smbPath(path), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  remove(path: string): Promise<void> {
    return this.#smb.remove(smbPath(path));
  }

  rename(from: string, to: string): Promise<void> {
    return this.#smb.rename(smbPath(from), smbPath(to));
  }

  async mkdir(path: string): Promise<void> {
    const parts = smbPath(path).split('\\');
    for (let depth = 1; depth <= parts.length; depth++) {
      await this.#smb.mkdir(parts.slice(0, depth).join('\\'));
    }
  }

  async stat(path: string): Promise<FileEntry | null> {
    const entry = await this.#smb.stat(smbPath(path));
    if (entry === null) return null;
    return { name: path === '/' ? '/' : remoteBasename(path), path, ...entry };
  }

  async close(): Promise<void> {
    await this.#client?.close();
  }

  destroy(): void {
    this.#client?.destroy();
    this.#socket?.destroy();
  }
}

function endpointOf(target: FileTarget): string {
  return hostPort(target.host, target.port ?? SMB_DEFAULT_PORT);
}

const smbProtocol: FileProtocol = {
  name: 'SMB',
  label: () => 'SMB',
  schemes: ['smb'],
  endpoint: (target) => `//${endpointOf(target)}/${splitShare(target).share}`,
  basePath: (target) => splitShare(target).path,
  createSession: (context) => new SmbSession(context),
};

/** Runs an `smb://` step: one operation or an array of them on one connection. */
export function executeSmbStep(req: SmbStepRequest): Promise<JsonValue> {
  return runFileStep(req, smbProtocol);
}
