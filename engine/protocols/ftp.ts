/**
 * FTP and FTPS steps over basic-ftp (passive mode only, as basic-ftp offers).
 *
 * FTPS: `ftps://host` uses explicit TLS (AUTH TLS, default port 21); `ftps://host:990` uses implicit TLS;
 * `?tlsMode=explicit|implicit` overrides the choice. Certificates are verified; a self-signed server is
 * trusted by putting its certificate (PEM) in the system credential `ca`, or, as a last resort, by
 * `?tlsInsecure=true` on the URL.
 */
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { Client, type FileInfo, FileType, type FTPContext, FTPError, type FTPResponse } from 'basic-ftp';
// Not re-exported by the package index; the data connection is opened with basic-ftp's own code.
import { connectForPassiveTransfer, parseEpsvResponse } from 'basic-ftp/dist/transfer.js';
import type { JsonValue } from '../../contract/json.ts';
import type { EgressGuard } from './egress-policy.ts';
import { GuardedSocket } from './egress-socket.ts';
import {
  BoundedCollector,
  type FileEntry,
  type FileEntryType,
  type FileProtocol,
  type FileSession,
  FileStepError,
  type FileStepRequest,
  type FileTarget,
  hostPort,
  joinRemotePath,
  normalisePem,
  remoteBasename,
  remoteDirname,
  removeFileOrEmptyDirectory,
  runFileStep,
  type SessionContext,
} from './file-operations.ts';
import type { GatewayDial } from './gateway-socket.ts';

export type { FileStepRequest } from './file-operations.ts';

/** A silent peer (no data, no reply) for this long fails the operation even before the run's deadline. */
const IDLE_TIMEOUT_MS = 60_000;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * Best-effort date from a LIST line (servers without MLSD). LIST dates carry no time zone and, for
 * recent files, no year; we read them as UTC and pick the year that is not in the future.
 */
export function parseListDate(raw: string, now: Date = new Date()): string | null {
  const text = raw.trim().replace(/\s+/g, ' ');
  const toIso = (year: number, month: number, day: number, hour = 0, minute = 0): string | null => {
    const date = new Date(Date.UTC(year, month, day, hour, minute));
    return Number.isNaN(date.getTime()) || month < 0 || month > 11 ? null : date.toISOString();
  };
  let match = /^([^\s\d]{3}) (\d{1,2}) (\d{1,2}):(\d{2})$/.exec(text);
  if (match) {
    const month = MONTHS.indexOf(match[1]!.toLowerCase());
    const [day, hour, minute] = [Number(match[2]), Number(match[3]), Number(match[4])];
    let year = now.getUTCFullYear();
    // "Recent" listings omit the year; a date ahead of now (beyond clock skew) belongs to last year.
    if (Date.UTC(year, month, day, hour, minute) > now.getTime() + 86_400_000) year -= 1;
    return toIso(year, month, day, hour, minute);
  }
  match = /^([^\s\d]{3}) (\d{1,2}) (\d{4})$/.exec(text);
  if (match) return toIso(Number(match[3]), MONTHS.indexOf(match[1]!.toLowerCase()), Number(match[2]));
  match = /^(\d{4})-(\d{2})-(\d{2}) (\d{1,2}):(\d{2})$/.exec(text);
  if (match) {
    return toIso(
      Number(match[1]),
      Number(match[2]) - 1,
      Number(match[3]),
      Number(match[4]),
      Number(match[5]),
    );
  }
  match = /^(\d{2})-(\d{2})-(\d{2}|\d{4}) (\d{1,2}):(\d{2}) ?(AM|PM)?$/i.exec(text);
  if (match) {
    const shortYear = Number(match[3]);
    const year = match[3]!.length === 4 ? shortYear : shortYear < 70 ? 2000 + shortYear : 1900 + shortYear;
    const clockHour = Number(match[4]);
    const half = match[6]?.toUpperCase();
    const hour = half === undefined ? clockHour : (clockHour % 12) + (half === 'PM' ? 12 : 0);
    return toIso(year, Number(match[1]) - 1, Number(match[2]), hour, Number(match[5]));
  }
  return null;
}

function entryType(info: FileInfo): FileEntryType {
  if (info.type === FileType.Directory) return 'directory';
  if (info.type === FileType.SymbolicLink) return 'symlink';
  return 'file';
}

function toEntry(dir: string, info: FileInfo): FileEntry {
  return {
    name: info.name,
    path: joinRemotePath(dir, info.name),
    size: info.size,
    type: entryType(info),
    modifyTime: info.modifiedAt ? info.modifiedAt.toISOString() : parseListDate(info.rawModifiedAt),
  };
}

/** basic-ftp lists "." with an empty argument (plain LIST of the working directory). */
function listArgument(path: string): string {
  return path === '.' ? '' : path;
}

function parseTlsMode(target: FileTarget): 'explicit' | 'implicit' {
  const requested = target.query.get('tlsMode');
  if (requested === null || requested === '') return target.port === 990 ? 'implicit' : 'explicit';
  if (requested === 'explicit' || requested === 'implicit') return requested;
  throw new FileStepError(`Invalid FTPS URL: tlsMode must be 'explicit' or 'implicit'`);
}

function isTrue(value: string | null): boolean {
  return value === 'true' || value === '1';
}

function withoutMappedPrefix(address: string): string {
  return address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
}

/**
 * Passive mode whose data connection always goes to the control connection's peer: EPSV gives only a port
 * anyway; of a PASV reply only the port is used and its address ignored (as curl does by default). A server
 * can therefore never point our data connection (and the bytes of a `put`) at another host, such as a
 * metadata address or an internal service, and servers behind NAT that announce a private address still
 * work. The data socket passes the egress guard too (see FtpSession.guardSockets).
 */
function passiveToControlPeer(gateway?: {
  host: string;
  nextDataPort(port: number): void;
}): (ftp: FTPContext) => Promise<FTPResponse> {
  // A server that refuses EPSV gets PASV, for the rest of the session.
  let epsv = true;
  return async (ftp) => {
    // Behind a gateway the control connection's peer is the relay: the data connection goes through the
    // tunnel to the target's host (the agent allows that for FTP targets only), named as the URL names it.
    const peer = gateway ? gateway.host : ftp.socket.remoteAddress;
    if (peer === undefined) throw new Error("the control connection is closed; can't open a data connection");
    let response: FTPResponse | undefined;
    let port = 0;
    if (epsv) {
      try {
        response = await ftp.request('EPSV');
        port = parseEpsvResponse(response.message);
      } catch (error) {
        // A 4xx/5xx reply: the server does not do EPSV. Anything else (a dead connection) is a failure.
        if (!(error instanceof FTPError)) throw error;
        epsv = false;
      }
    }
    if (!epsv) {
      response = await ftp.request('PASV');
      port = pasvPort(response.message);
    }
    gateway?.nextDataPort(port);
    await connectForPassiveTransfer(withoutMappedPrefix(peer), port, ftp);
    return response as FTPResponse;
  };
}

/** The port of a `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply. */
export function pasvPort(message: string): number {
  const match = /(\d+),(\d+),(\d+),(\d+),(\d+),(\d+)/.exec(message);
  if (!match) throw new Error(`can't parse the reply to PASV: ${message}`);
  return (Number(match[5]) & 255) * 256 + (Number(match[6]) & 255);
}

class FtpSession implements FileSession {
  private readonly client = new Client(IDLE_TIMEOUT_MS);
  private readonly target: FileTarget;
  private readonly credentials: Record<string, string>;
  private readonly tls: 'explicit' | 'implicit' | undefined;
  private readonly egress: EgressGuard;
  private readonly gateway: GatewayDial | undefined;
  /** The port of the passive data connection basic-ftp is about to open (gateway only). */
  private dataPort: number | undefined;

  constructor({ target, credentials, egress, gateway }: SessionContext) {
    this.target = target;
    this.credentials = credentials;
    this.egress = egress;
    this.gateway = gateway;
    this.tls = target.scheme === 'ftps' ? parseTlsMode(target) : undefined;
    this.client.ftp.verbose = false;
    if (gateway) {
      this.tunnelSockets(gateway);
      this.client.prepareTransfer = passiveToControlPeer({
        host: target.host,
        nextDataPort: (port) => {
          this.dataPort = port;
        },
      });
    } else {
      this.guardSockets();
      this.client.prepareTransfer = passiveToControlPeer();
    }
  }

  /** Every socket through the gateway's tunnel: the control connection, then each data connection. */
  private tunnelSockets(gateway: GatewayDial): void {
    this.client.ftp._newSocket = () => {
      const port = this.dataPort;
      this.dataPort = undefined;
      return port === undefined ? gateway.socket() : gateway.dataSocket(port);
    };
  }

  /**
   * basic-ftp makes every plain socket (the control connection, each data connection) through
   * `_newSocket`: guarded ones go through the egress policy. A data connection to the control peer's
   * address is judged under the URL's host name, so a host-name allow rule covers it too.
   */
  private guardSockets(): void {
    const host = this.target.host;
    const nameFor = (address: string): string | undefined => {
      const peer = this.client.ftp.socket.remoteAddress;
      return peer !== undefined && withoutMappedPrefix(peer) === address && !isIP(host) ? host : undefined;
    };
    this.client.ftp._newSocket = () => new GuardedSocket(this.egress, { nameFor });
  }

  async connect(): Promise<void> {
    const { target, credentials, tls } = this;
    const secureOptions: ConnectionOptions = {
      rejectUnauthorized: !isTrue(target.query.get('tlsInsecure')),
      ...(credentials.ca ? { ca: normalisePem(credentials.ca) } : {}),
    };
    const port = portOf(target, tls);
    if (tls === 'implicit') {
      // basic-ftp opens implicit TLS with tls.connect itself; hand it a guarded (or tunnel) socket to wrap.
      secureOptions.socket = (this.gateway ? this.gateway.socket() : new GuardedSocket(this.egress)).connect(
        port,
        target.host,
      );
    }
    await this.client.access({
      host: target.host,
      port,
      // No username anywhere means an anonymous login (basic-ftp's anonymous/guest).
      user: target.username ?? credentials.username,
      password: target.password ?? credentials.password,
      secure: tls === undefined ? false : tls === 'implicit' ? 'implicit' : true,
      secureOptions,
    });
  }

  async list(path: string): Promise<FileEntry[]> {
    const infos = await this.client.list(listArgument(path));
    return infos.map((info) => toEntry(path, info));
  }

  async get(path: string, maxBytes: number): Promise<Uint8Array> {
    const collector = new BoundedCollector(maxBytes);
    await this.client.downloadTo(collector, path);
    return collector.bytes();
  }

  async put(path: string, bytes: Uint8Array): Promise<void> {
    await this.client.uploadFrom(Readable.from([Buffer.from(bytes)]), path);
  }

  async remove(path: string): Promise<void> {
    // DELE refuses directories (an FTP reply, not socket trouble); only then is RMD tried.
    await removeFileOrEmptyDirectory(this, path, {
      file: (file) => this.client.remove(file),
      directory: (dir) => this.client.removeEmptyDir(dir),
      refused: (error) => error instanceof FTPError,
    });
  }

  async rename(from: string, to: string): Promise<void> {
    await this.client.rename(from, to);
  }

  async mkdir(path: string): Promise<void> {
    // ensureDir walks into the new directory; return to where relative paths are resolved.
    const workingDir = await this.client.pwd();
    await this.client.ensureDir(path);
    await this.client.cd(workingDir);
  }

  /**
   * FTP has no portable single-entry stat (MLST is optional), so we list the parent directory and pick
   * the entry; a file's time then comes from MDTM when the server supports it.
   */
  async stat(path: string): Promise<FileEntry | null> {
    if (path === '/' || path === '.') {
      return { name: path, path, size: 0, type: 'directory', modifyTime: null };
    }
    const parent = remoteDirname(path);
    const name = remoteBasename(path);
    let infos: FileInfo[];
    try {
      infos = await this.client.list(listArgument(parent));
    } catch (error) {
      // A missing parent is answered with a 4xx/5xx reply; anything else (socket trouble) is a failure.
      if (error instanceof FTPError) return null;
      throw error;
    }
    const info = infos.find((candidate) => candidate.name === name);
    if (info === undefined) return null;
    const entry = { ...toEntry(parent, info), path };
    if (entry.type === 'file' && info.modifiedAt === undefined) {
      entry.modifyTime = (await this.lastModified(path)) ?? entry.modifyTime;
    }
    return entry;
  }

  private async lastModified(path: string): Promise<string | null> {
    try {
      const date = await this.client.lastMod(path);
      return Number.isNaN(date.getTime()) ? null : date.toISOString();
    } catch (error) {
      if (error instanceof FTPError) return null;
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.client.closed) return;
    await this.client.send('QUIT').catch(() => {});
    this.client.close();
  }

  destroy(): void {
    this.client.close();
  }
}

function portOf(target: FileTarget, tls: 'explicit' | 'implicit' | undefined): number {
  return target.port ?? (tls === 'implicit' ? 990 : 21);
}

const ftpProtocol: FileProtocol = {
  name: 'FTP',
  label: (target) => (target.scheme === 'ftps' ? 'FTPS' : 'FTP'),
  schemes: ['ftp', 'ftps'],
  endpoint: (target) => {
    const port = portOf(target, target.scheme === 'ftps' ? parseTlsMode(target) : undefined);
    return hostPort(target.host, port);
  },
  createSession: (context) => new FtpSession(context),
};

/** Runs an `ftp://` or `ftps://` step: one operation or an array of them on one connection. */
export function executeFtpStep(req: FileStepRequest): Promise<JsonValue> {
  return runFileStep(req, ftpProtocol);
}
