/**
 * What the FTP, FTPS and SFTP step tests share: the test user, the seeded tree, and one way to run a step
 * against each protocol's test server (test/support/ftp-server.ts, test/support/sftp-server.ts). The SMB
 * step tests share the tree and the operations every file protocol answers alike.
 */
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { JsonValue } from '../../contract/json.ts';
import { fileRefFromBytes } from '../../engine/file-ref.ts';
import { executeFtpStep } from '../../engine/protocols/ftp.ts';
import { executeSftpStep } from '../../engine/protocols/sftp.ts';
import { startFtpServer } from './ftp-server.ts';
import { startSftpServer } from './sftp-server.ts';

/** The test user's password: `@ : /` and a literal `%20`, which must survive the URL userinfo. */
export const PASSWORD = 'p@ss:w/rd%20x';
export const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x01]);
const DATA_JSON = Buffer.from('{"items":[1,2],"ok":true}');

/** The URL with the user (default the test user) in its userinfo, percent-encoded. */
export function withUser(url: string, user = 'tester', password = PASSWORD): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** Inserts a path into a server URL, keeping its query (`?tlsMode=implicit`). */
export function withPath(url: string, path: string): string {
  const parsed = new URL(url);
  parsed.pathname = path;
  return parsed.toString();
}

/** The tree the tests read: /data/in with one file of each kind, a sub-directory and a file of 2020. */
export async function seed(root: string): Promise<void> {
  await mkdir(join(root, 'data/in/sub'), { recursive: true });
  await writeFile(join(root, 'data/in/data.json'), DATA_JSON);
  await writeFile(join(root, 'data/in/rows.csv'), 'id,name\n1,Ada\n2,Linus\n');
  await writeFile(join(root, 'data/in/tabs.tsv'), 'id\tname\n1\tAda\n');
  await writeFile(join(root, 'data/in/notes.txt'), 'hello\nworld');
  await writeFile(join(root, 'data/in/sniffed.log'), '[{"a":1}]');
  await writeFile(join(root, 'data/in/blob.bin'), BINARY);
  await writeFile(join(root, 'data/in/sub/inner.txt'), 'inner');
  const old = new Date(Date.UTC(2020, 2, 4, 10, 30));
  await writeFile(join(root, 'data/in/old.txt'), 'old');
  await utimes(join(root, 'data/in/old.txt'), old, old);
}

/** What every file protocol answers to `get` of the seeded data.json: the parsed content, the bytes as a file reference. */
export const DATA_JSON_GET: JsonValue = {
  path: '/data/in/data.json',
  size: DATA_JSON.byteLength,
  contentType: 'application/json',
  content: { items: [1, 2], ok: true },
  file: { ...fileRefFromBytes(DATA_JSON, 'data.json', 'application/json') },
};

/**
 * A tool of one step on the file system `systemId` that puts `content` at `path`, runs the operations
 * `between` (if any), and gets it back.
 */
export function putThenGetTool(
  id: string,
  systemId: string,
  path: string,
  content: string,
  between: ReadonlyArray<Record<string, unknown>> = [],
) {
  return {
    id,
    steps: [
      {
        id: 'ops',
        modify: true,
        config: {
          url: '/',
          systemId,
          body: [{ operation: 'put', path, content }, ...between, { operation: 'get', path }],
        },
      },
    ],
  };
}

/**
 * One body under /data that creates directories recursively (twice: the second is no error), renames,
 * checks existence, stats and deletes, and the results every file protocol gives for it.
 */
export const DIRECTORY_ROUND: { body: JsonValue; results: unknown[] } = {
  body: [
    { operation: 'mkdir', path: 'work/a/b' },
    { operation: 'mkdir', path: 'work/a/b' },
    { operation: 'put', path: 'work/a/b/f.txt', content: 'x' },
    { operation: 'rename', path: 'work/a/b/f.txt', newPath: '/data/work/g.txt' },
    { operation: 'exists', path: 'work/a/b/f.txt' },
    { operation: 'exists', path: 'work/g.txt' },
    { operation: 'stat', path: 'work/g.txt' },
    { operation: 'delete', path: 'work/g.txt' },
    { operation: 'delete', path: 'work/a/b' },
    { operation: 'exists', path: 'work/a/b' },
    { operation: 'exists', path: 'work/a' },
    { operation: 'exists', path: 'missing/parent/file' },
  ],
  results: [
    { success: true, path: '/data/work/a/b' },
    { success: true, path: '/data/work/a/b' },
    { success: true, path: '/data/work/a/b/f.txt', size: 1 },
    { success: true, path: '/data/work/a/b/f.txt', newPath: '/data/work/g.txt' },
    { path: '/data/work/a/b/f.txt', exists: false },
    { path: '/data/work/g.txt', exists: true, type: 'file' },
    { name: 'g.txt', path: '/data/work/g.txt', size: 1, type: 'file', modifyTime: expect.any(String) },
    { success: true, path: '/data/work/g.txt' },
    { success: true, path: '/data/work/a/b' },
    { path: '/data/work/a/b', exists: false },
    { path: '/data/work/a', exists: true, type: 'directory' },
    { path: '/data/missing/parent/file', exists: false },
  ],
};

/** A gate a server hook waits on, plus a promise that resolves once the hook was reached. */
export function gate(): { reached: Promise<void>; wait: () => Promise<void>; open: () => void } {
  let markReached: () => void = () => {};
  let release: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    markReached = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    reached,
    wait: () => {
      markReached();
      return opened;
    },
    open: () => release(),
  };
}

/** The error a promise rejects with, or undefined when it resolves. */
export async function failure(pending: Promise<unknown>): Promise<Error | undefined> {
  return pending.then(
    () => undefined,
    (caught: unknown) => caught as Error,
  );
}

export interface RunOptions {
  url: string;
  credentials?: Record<string, string>;
  signal?: AbortSignal;
  deadline?: number;
  maxDownloadBytes?: number;
  /** The step's modify; absent: not restricted, as a direct call. */
  modify?: boolean;
}

export type ExecuteFileStep = typeof executeFtpStep;

/**
 * Runs step bodies with the protocol's executor: with the options given, else the defaults (read at each
 * call), else no credentials, a fresh signal and a 20 s deadline.
 */
export function fileStepRunner(
  execute: ExecuteFileStep,
  defaults: () => Partial<RunOptions> = () => ({}),
): (body: unknown, options?: Partial<RunOptions>) => Promise<JsonValue> {
  return (body, given = {}) => {
    const options = { ...defaults(), ...given };
    if (options.url === undefined) throw new Error('a file step needs a URL');
    return execute({
      url: options.url,
      body,
      credentials: options.credentials ?? {},
      signal: options.signal ?? new AbortController().signal,
      deadline: options.deadline ?? Date.now() + 20_000,
      ...(options.maxDownloadBytes !== undefined ? { maxDownloadBytes: options.maxDownloadBytes } : {}),
      ...(options.modify !== undefined ? { modify: options.modify } : {}),
    });
  };
}

/** What the shared tests need of a protocol's test server. */
export interface TransferServer {
  /** No credentials in it. */
  url: string;
  /** The local directory behind the server's root. */
  root: string;
  /** What a client must be given besides a user: the CA of an FTPS server. */
  credentials: Record<string, string>;
  stats: { connections: number; logins: number; disconnects: number };
  stop(): Promise<void>;
}

export interface TransferServerOptions {
  /** The login directory. */
  home?: string;
  /** Awaited before the server sends a file's bytes: lets a test hold a download open. */
  beforeRead?: () => Promise<void>;
}

/** One protocol as the shared tests drive it. */
export interface TransferProtocol {
  name: string;
  /** How its errors name it. */
  label: 'FTP' | 'FTPS' | 'SFTP';
  execute: ExecuteFileStep;
  start(options?: TransferServerOptions): Promise<TransferServer>;
  /**
   * Resolution of modify times: of a listing (LIST without MLSD has minutes, SFTP seconds) and of a stat
   * (MDTM is precise, SFTP has seconds).
   */
  timeResolutionMs: { list: number; stat: number };
  /** The time a listing gives the seeded file of 2020-03-04 10:30 UTC: LIST shows only the date of an earlier year. */
  oldFileListTime: string;
  /**
   * Whether the server sees a client leave while it holds a read: ftp-srv pauses the control socket
   * during RETR, so it notices only once the read is released.
   */
  seesDisconnectDuringRead: boolean;
}

function ftp(name: string, tls: 'none' | 'explicit' | 'implicit'): TransferProtocol {
  return {
    name,
    label: tls === 'none' ? 'FTP' : 'FTPS',
    execute: executeFtpStep,
    timeResolutionMs: { list: 60_000, stat: 1 },
    oldFileListTime: '2020-03-04T00:00:00.000Z',
    seesDisconnectDuringRead: false,
    async start({ home, beforeRead } = {}) {
      const server = await startFtpServer({
        tls,
        password: PASSWORD,
        ...(home ? { home } : {}),
        ...(beforeRead
          ? {
              // ftp-srv crashes on a data socket that is already gone if the read went ahead: the read
              // fails once released.
              beforeRead: async () => {
                await beforeRead();
                throw new Error('read released after the client left');
              },
            }
          : {}),
      });
      const credentials: Record<string, string> = server.ca ? { ca: server.ca } : {};
      return { ...server, credentials };
    },
  };
}

/** FTP, FTPS both ways, and SFTP. */
export const TRANSFER_PROTOCOLS: TransferProtocol[] = [
  ftp('FTP', 'none'),
  ftp('FTPS (explicit AUTH TLS)', 'explicit'),
  ftp('FTPS (implicit TLS)', 'implicit'),
  {
    name: 'SFTP',
    label: 'SFTP',
    execute: executeSftpStep,
    async start({ home, beforeRead } = {}) {
      const server = await startSftpServer({
        password: PASSWORD,
        ...(home ? { home } : {}),
        ...(beforeRead
          ? { beforeRequest: (request) => (request.kind === 'READ' ? beforeRead() : undefined) }
          : {}),
      });
      return { ...server, credentials: {} };
    },
    // SFTP has times to the second, also of old files, and sees a client leave at once.
    timeResolutionMs: { list: 1000, stat: 1000 },
    oldFileListTime: '2020-03-04T10:30:00.000Z',
    seesDisconnectDuringRead: true,
  },
];
