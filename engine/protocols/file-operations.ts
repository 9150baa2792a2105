/**
 * What FTP, FTPS, SFTP and SMB steps share: the operation body, the URL and path rules, the result shapes,
 * content decoding for `get`, and the driver that runs a list of operations on one connection within
 * the run's deadline and AbortSignal. The protocol modules only supply a `FileSession`.
 */
import { posix } from 'node:path';
import { Writable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import { JsonValue, parseJsonOrUndefined } from '../../contract/json.ts';
import { type FileRef, fileRefBytes, fileRefFromBytes, fileText, isFileRef } from '../file-ref.ts';
import { mediaTypeByName } from '../media-type.ts';
import { EgressGuard, PERMISSIVE_EGRESS } from './egress-policy.ts';
import type { GatewayDial } from './gateway-socket.ts';

export interface FileStepRequest {
  url: string;
  /** One operation object or an array of them, as a JSON string or an already-parsed value. */
  body: unknown;
  /** The step system's credentials (username, password, privateKey, passphrase, ca, hostFingerprint). */
  credentials: Record<string, string>;
  signal: AbortSignal;
  /** Absolute epoch milliseconds; connecting and every operation get only the time left. */
  deadline: number;
  /** Largest file `get` loads into memory; defaults to DEFAULT_MAX_DOWNLOAD_BYTES. */
  maxDownloadBytes?: number;
  /** Judges every connection (control and data); default: only metadata addresses refused. */
  egress?: EgressGuard | undefined;
  /** The system is behind a gateway: the connections go through its tunnel instead (SFTP, FTP). */
  gateway?: GatewayDial | undefined;
  /**
   * The step's `modify`: false refuses the operations that change files (put, delete, rename, mkdir)
   * before connecting, so a step said to change nothing changes nothing, and a run of such steps may be
   * executed again after a crash (runs/interrupted.ts). A step always says; absent (a direct call) does
   * not restrict.
   */
  modify?: boolean | undefined;
}

export const DEFAULT_MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;

export type FileEntryType = 'file' | 'directory' | 'symlink';

/** One `list` entry; `stat` returns the same shape. */
export interface FileEntry {
  name: string;
  path: string;
  size: number;
  type: FileEntryType;
  /** ISO 8601, or null when the server does not tell. */
  modifyTime: string | null;
}

// ---------------------------------------------------------------------------------------------------
// Body

const RemotePath = z.string().min(1, 'must be a non-empty path');
const PutEncoding = z.enum(['utf8', 'base64']);

export const FileOperation = z.discriminatedUnion('operation', [
  z.object({ operation: z.literal('list'), path: z.string().optional() }),
  z.object({ operation: z.literal('get'), path: RemotePath }),
  z
    .object({
      operation: z.literal('put'),
      path: RemotePath,
      content: z
        .unknown()
        .refine((value): boolean => value !== undefined, 'is required')
        .pipe(JsonValue),
      encoding: PutEncoding.optional(),
    })
    .refine((op) => op.encoding !== 'base64' || typeof op.content === 'string', {
      message: 'encoding "base64" needs string content',
      path: ['encoding'],
    }),
  z.object({ operation: z.literal('delete'), path: RemotePath }),
  z.object({ operation: z.literal('rename'), path: RemotePath, newPath: RemotePath }),
  z.object({ operation: z.literal('mkdir'), path: RemotePath }),
  z.object({ operation: z.literal('exists'), path: RemotePath }),
  z.object({ operation: z.literal('stat'), path: RemotePath }),
]);
export type FileOperation = z.infer<typeof FileOperation>;

export interface ParsedOperations {
  operations: FileOperation[];
  /** True when the body was one object: the step's data is then that operation's result, not an array. */
  single: boolean;
}

export class FileStepError extends Error {
  override name = 'FileStepError';
}

/** Operation names are matched case-insensitively (`GET` works), everything else is exact. */
function normaliseOperationName(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
  const operation = (raw as { operation?: unknown }).operation;
  return typeof operation === 'string' ? { ...raw, operation: operation.trim().toLowerCase() } : raw;
}

function describeIssue(where: string, issue: z.core.$ZodIssue): string {
  const field = issue.path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`)).join('');
  return `${where}${field}: ${issue.message}`;
}

/** Accepts a JSON string or a parsed value; errors name the operation (`body[2].newPath`), never echo values. */
export function parseOperations(body: unknown, label: string): ParsedOperations {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      // The parser's message quotes the input, which may hold file content or secrets.
      throw new FileStepError(`Invalid ${label} body: not valid JSON`);
    }
  }
  const single = !Array.isArray(value);
  const items: unknown[] = Array.isArray(value) ? value : [value];
  if (items.length === 0) throw new FileStepError(`Invalid ${label} body: the operation array is empty`);
  const operations = items.map((item, index) => {
    const where = single ? 'body' : `body[${index}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new FileStepError(
        `Invalid ${label} body: ${where}: expected an operation object like {"operation": "get", "path": "..."}`,
      );
    }
    const parsed = FileOperation.safeParse(normaliseOperationName(item));
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => describeIssue(where, issue));
      throw new FileStepError(`Invalid ${label} body: ${problems.join('; ')}`);
    }
    return parsed.data;
  });
  return { operations, single };
}

// ---------------------------------------------------------------------------------------------------
// URL and paths

export interface FileTarget {
  scheme: 'ftp' | 'ftps' | 'sftp' | 'smb';
  /** Host without IPv6 brackets. */
  host: string;
  port: number | undefined;
  /** Decoded URL path without a trailing slash; '' when the URL has no path (or only '/'). */
  basePath: string;
  username: string | undefined;
  password: string | undefined;
  query: URLSearchParams;
}

export function parseFileTarget(url: string, label: string): FileTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // URL's own error repeats the input, password included.
    throw new FileStepError(`Invalid ${label} URL`);
  }
  const scheme = parsed.protocol.slice(0, -1);
  if (scheme !== 'ftp' && scheme !== 'ftps' && scheme !== 'sftp' && scheme !== 'smb') {
    throw new FileStepError(`Invalid ${label} URL: unsupported scheme '${scheme}'`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new FileStepError(`Invalid ${label} URL: no host`);
  let basePath: string;
  try {
    basePath = decodeURIComponent(parsed.pathname);
  } catch {
    throw new FileStepError(`Invalid ${label} URL: the path is not valid percent-encoding`);
  }
  return {
    scheme,
    host,
    port: parsed.port === '' ? undefined : Number(parsed.port),
    basePath: stripTrailingSlash(basePath),
    username: decodeUserinfo(parsed.username),
    password: decodeUserinfo(parsed.password),
    query: parsed.searchParams,
  };
}

function decodeUserinfo(raw: string): string | undefined {
  if (raw === '') return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function stripTrailingSlash(path: string): string {
  return path.replace(/\/+$/, '');
}

/**
 * Absolute paths are used as is; relative ones resolve under the URL's path, or, when the URL has
 * no path, stay relative so the server resolves them against the login (home) directory.
 */
export function resolveRemotePath(basePath: string, path: string | undefined): string {
  const given = path ?? '';
  if (given.startsWith('/')) return stripTrailingSlash(posix.normalize(given)) || '/';
  if (basePath !== '') return stripTrailingSlash(posix.join(basePath, given)) || '/';
  return stripTrailingSlash(posix.normalize(given === '' ? '.' : given)) || '.';
}

export { normalisePem } from './pem.ts';

/** The path of `name` inside the listed directory `dir`. */
export function joinRemotePath(dir: string, name: string): string {
  return dir === '.' || dir === '' ? name : posix.join(dir, name);
}

export function remoteBasename(path: string): string {
  return posix.basename(path);
}

export function remoteDirname(path: string): string {
  return posix.dirname(path);
}

// ---------------------------------------------------------------------------------------------------
// Content

/** `put` content: a FileRef writes its bytes, a string is UTF-8 (or base64), anything else is JSON. */
export function encodePutContent(content: JsonValue, encoding: 'utf8' | 'base64' | undefined): Buffer {
  if (isFileRef(content) && typeof content.contentBase64 === 'string') return fileRefBytes(content);
  if (typeof content === 'string') return Buffer.from(content, encoding === 'base64' ? 'base64' : 'utf8');
  return Buffer.from(JSON.stringify(content), 'utf8');
}

function isJsonType(contentType: string): boolean {
  return contentType === 'application/json' || contentType.endsWith('+json');
}

function parseRows(text: string, delimiter: string): JsonValue | undefined {
  try {
    const rows: Record<string, string>[] = parseCsv(text, {
      columns: true,
      bom: true,
      delimiter,
      skip_empty_lines: true,
      relax_column_count: true,
    });
    return rows;
  } catch {
    return undefined;
  }
}

export interface DecodedContent {
  contentType: string;
  /** Parsed JSON, CSV rows, text, or null for binary content. */
  content: JsonValue;
}

/**
 * How `get` turns bytes into `content`:
 * - binary (not valid UTF-8, or contains NUL bytes) → null; the bytes are in `file` either way;
 * - `.json` (or a `+json` type) → parsed JSON (an empty file → null; unparseable → the text);
 * - `.csv` / `.tsv` → rows as objects keyed by the header row (unparseable → the text);
 * - other text → parsed JSON when it starts with `{` or `[` and parses, else the text itself.
 */
export function decodeFileContent(path: string, bytes: Uint8Array): DecodedContent {
  const byExtension = mediaTypeByName(path);
  const text = fileText(bytes);
  if (text === null) return { contentType: byExtension || 'application/octet-stream', content: null };
  const contentType = byExtension || 'text/plain';
  const extension = posix.extname(path).toLowerCase();
  if (isJsonType(contentType)) {
    if (text.trim() === '') return { contentType, content: null };
    return { contentType, content: parseJsonOrUndefined(text) ?? text };
  }
  if (extension === '.csv' || extension === '.tsv' || contentType === 'text/csv') {
    const rows = parseRows(text, extension === '.tsv' ? '\t' : ',');
    return { contentType, content: rows ?? text };
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    const parsed = parseJsonOrUndefined(text);
    if (parsed !== undefined) return { contentType, content: parsed };
  }
  return { contentType, content: text };
}

function fileRefJson(ref: FileRef): JsonValue {
  return { ...ref };
}

export function getResult(path: string, bytes: Uint8Array): JsonValue {
  const { contentType, content } = decodeFileContent(path, bytes);
  return {
    path,
    size: bytes.byteLength,
    contentType,
    content,
    file: fileRefJson(fileRefFromBytes(bytes, remoteBasename(path), contentType)),
  };
}

function entryJson(entry: FileEntry): JsonValue {
  return { ...entry };
}

// ---------------------------------------------------------------------------------------------------
// Sessions and the driver

/** Collects a download in memory and fails once it grows past the limit. */
export class BoundedCollector extends Writable {
  readonly chunks: Buffer[] = [];
  private received = 0;
  private readonly limit: number;

  constructor(limit: number) {
    super();
    this.limit = limit;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.received += chunk.byteLength;
    if (this.received > this.limit) {
      callback(new Error(`file is larger than the ${this.limit} byte download limit`));
      return;
    }
    this.chunks.push(chunk);
    callback();
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** One connection. Paths handed in are already resolved. Methods reject with the library's error. */
export interface FileSession {
  connect(): Promise<void>;
  list(path: string): Promise<FileEntry[]>;
  /** Rejects when the file is larger than maxBytes. */
  get(path: string, maxBytes: number): Promise<Uint8Array>;
  put(path: string, bytes: Uint8Array): Promise<void>;
  /** Removes a file, or an empty directory. */
  remove(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Creates the directory and any missing parents; an existing directory is fine. */
  mkdir(path: string): Promise<void>;
  /** The entry (symlinks are not followed), or null when nothing exists at path. */
  stat(path: string): Promise<FileEntry | null>;
  /** Polite shutdown (QUIT / SSH disconnect). */
  close(): Promise<void>;
  /** Drops the connection now; pending calls reject. Safe to call more than once. */
  destroy(): void;
}

/**
 * FileSession.remove for a protocol whose file delete refuses directories (FTP DELE, SFTP unlink): only
 * when the delete is refused (`refused`, default any error) and `path` is a directory is `removeDirectory`
 * tried, which refuses a non-empty one. Otherwise the delete's own error stands.
 */
export async function removeFileOrEmptyDirectory(
  session: Pick<FileSession, 'stat'>,
  path: string,
  remove: {
    file: (path: string) => Promise<unknown>;
    directory: (path: string) => Promise<unknown>;
    refused?: (error: unknown) => boolean;
  },
): Promise<void> {
  try {
    await remove.file(path);
  } catch (error) {
    if (remove.refused && !remove.refused(error)) throw error;
    const entry = await session.stat(path).catch(() => null);
    if (entry?.type !== 'directory') throw error;
    await remove.directory(path);
  }
}

/** What a protocol's session is made from: the step's URL, the system's credentials, the step's bounds. */
export interface SessionContext {
  target: FileTarget;
  credentials: Record<string, string>;
  bounds: Bounds;
  /** Judges every connection the session opens, unless it goes through the gateway. */
  egress: EgressGuard;
  /** The system is behind a gateway: the connections go through its tunnel instead. */
  gateway: GatewayDial | undefined;
}

/** `host:port` as messages show a server, an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export interface FileProtocol {
  /** Names the protocol in errors found before the URL is understood. */
  name: string;
  /** 'FTP', 'FTPS' or 'SFTP', for messages. */
  label(target: FileTarget): string;
  schemes: ReadonlyArray<FileTarget['scheme']>;
  /** Builds an unconnected session; throws FileStepError for unusable credentials or URL options. */
  createSession(context: SessionContext): FileSession;
  /** host:port as shown in messages. */
  endpoint(target: FileTarget): string;
  /**
   * The directory relative paths resolve under, when it is not the URL's path (SMB: the path after the
   * share, '/' for the share's root).
   */
  basePath?(target: FileTarget): string;
}

export interface Bounds {
  signal: AbortSignal;
  deadline: number;
}

/** The most a timer can wait; longer deadlines are effectively unbounded. */
const MAX_TIMER_MS = 2_147_483_647;

export function timeLeft(bounds: Bounds): number {
  const left = bounds.deadline - Date.now();
  // A missing (NaN) deadline means unbounded, never "already expired".
  return Number.isNaN(left) ? MAX_TIMER_MS : Math.min(left, MAX_TIMER_MS);
}

function abortError(what: string): Error {
  const error = new FileStepError(`${what} aborted`);
  error.name = 'AbortError';
  return error;
}

function timeoutError(what: string): Error {
  const error = new FileStepError(`${what} timed out: the run's deadline was reached`);
  error.name = 'TimeoutError';
  return error;
}

/**
 * Runs work, but gives up when the signal aborts or the deadline passes; giving up calls cancel,
 * which must make the work settle (the protocols close their connection).
 */
export async function withinBounds<T>(
  work: () => Promise<T>,
  bounds: Bounds,
  cancel: () => void,
  what: string,
): Promise<T> {
  if (bounds.signal.aborted) throw abortError(what);
  const left = timeLeft(bounds);
  if (left <= 0) throw timeoutError(what);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_resolve, reject) => {
    // Reject before cancelling so the race settles with our error, not the closed connection's.
    timer = setTimeout(() => {
      reject(timeoutError(what));
      cancel();
    }, left);
    onAbort = () => {
      reject(abortError(what));
      cancel();
    };
    bounds.signal.addEventListener('abort', onAbort, { once: true });
  });
  const running = work();
  // Whichever loses the race may still reject later; that is expected, not unhandled.
  running.catch(() => {});
  stopped.catch(() => {});
  try {
    return await Promise.race([running, stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort) bounds.signal.removeEventListener('abort', onAbort);
  }
}

/** The operation as messages show it, with resolved paths: `rename /a/x -> /a/y`. */
function describeOperation(op: FileOperation, basePath: string): string {
  const path = resolveRemotePath(basePath, op.path);
  if (op.operation !== 'rename') return `${op.operation} ${path}`;
  return `${op.operation} ${path} -> ${resolveRemotePath(basePath, op.newPath)}`;
}

async function runOperation(
  session: FileSession,
  op: FileOperation,
  basePath: string,
  maxBytes: number,
): Promise<JsonValue> {
  const path = resolveRemotePath(basePath, op.path);
  switch (op.operation) {
    case 'list':
      return (await session.list(path)).map(entryJson);
    case 'get':
      return getResult(path, await session.get(path, maxBytes));
    case 'put': {
      const bytes = encodePutContent(op.content, op.encoding);
      await session.put(path, bytes);
      return { success: true, path, size: bytes.byteLength };
    }
    case 'delete':
      await session.remove(path);
      return { success: true, path };
    case 'rename': {
      const newPath = resolveRemotePath(basePath, op.newPath);
      await session.rename(path, newPath);
      return { success: true, path, newPath };
    }
    case 'mkdir':
      await session.mkdir(path);
      return { success: true, path };
    case 'exists': {
      const entry = await session.stat(path);
      return entry === null ? { path, exists: false } : { path, exists: true, type: entry.type };
    }
    case 'stat': {
      const entry = await session.stat(path);
      if (entry === null) throw new Error('no such file or directory');
      return entryJson(entry);
    }
  }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** Credential values that must never show up in an error message. */
function secretsOf(
  target: FileTarget | undefined,
  credentials: Record<string, string>,
  url: string,
): string[] {
  const values = [credentials.password, credentials.passphrase, credentials.privateKey, target?.password];
  for (const text of [url, credentials.url]) {
    try {
      const raw = text === undefined ? '' : new URL(text).password;
      values.push(raw, decodeUserinfo(raw));
    } catch {
      // An unparseable URL never reaches a message.
    }
  }
  return values.filter((value): value is string => typeof value === 'string' && value.length >= 3);
}

function scrub(message: string, secrets: string[]): string {
  let result = message;
  for (const secret of secrets) result = result.split(secret).join('***');
  return result;
}

function rethrowScrubbed(error: unknown, secrets: string[]): never {
  const scrubbed = new FileStepError(scrub(messageOf(error), secrets));
  if (error instanceof Error && error.name !== 'Error') scrubbed.name = error.name;
  throw scrubbed;
}

/** Operations that change files: refused when the step may not modify (FileStepRequest.modify). */
const WRITE_OPERATIONS: ReadonlySet<FileOperation['operation']> = new Set([
  'put',
  'delete',
  'rename',
  'mkdir',
]);

function refuseWrites(operations: FileOperation[], single: boolean, label: string): void {
  const index = operations.findIndex((op) => WRITE_OPERATIONS.has(op.operation));
  const op = operations[index];
  if (op === undefined) return;
  throw new FileStepError(
    `${label} ${single ? '' : `body[${index}] `}${op.operation} refused: the step has modify: false, which ` +
      'allows only list, get, exists and stat; set modify: true on the step to put, delete, rename or mkdir',
  );
}

/** Time a polite close may take before the connection is simply dropped. */
const CLOSE_GRACE_MS = 2_000;

/** Parses the request, opens one connection, runs the operations in order, and always closes it. */
export async function runFileStep(req: FileStepRequest, protocol: FileProtocol): Promise<JsonValue> {
  let target: FileTarget | undefined;
  try {
    target = parseFileTarget(req.url, protocol.name);
    if (!protocol.schemes.includes(target.scheme)) {
      throw new FileStepError(`Invalid ${protocol.name} URL: unsupported scheme '${target.scheme}'`);
    }
    const label = protocol.label(target);
    const { operations, single } = parseOperations(req.body, label);
    if (req.modify === false) refuseWrites(operations, single, label);
    const bounds: Bounds = { signal: req.signal, deadline: req.deadline };
    const maxBytes = req.maxDownloadBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
    const basePath = protocol.basePath?.(target) ?? target.basePath;
    const egress = req.egress ?? new EgressGuard(PERMISSIVE_EGRESS);
    const session = protocol.createSession({
      target,
      credentials: req.credentials,
      bounds,
      egress,
      gateway: req.gateway,
    });
    let dropped = false;
    const drop = () => {
      if (dropped) return;
      dropped = true;
      session.destroy();
    };
    try {
      const connectWhat = `${label} connect to ${protocol.endpoint(target)}`;
      await withinBounds(() => session.connect(), bounds, drop, connectWhat).catch((error: unknown) => {
        throw wrapFailure(error, connectWhat);
      });
      const results: JsonValue[] = [];
      for (const [index, op] of operations.entries()) {
        const what = `${label} ${single ? '' : `body[${index}] `}${describeOperation(op, basePath)}`;
        const result = await withinBounds(
          () => runOperation(session, op, basePath, maxBytes),
          bounds,
          drop,
          what,
        ).catch((error: unknown) => {
          throw wrapFailure(error, what);
        });
        results.push(result);
      }
      return single ? (results[0] ?? null) : results;
    } finally {
      if (!dropped && !req.signal.aborted) {
        const closeBounds = {
          signal: req.signal,
          deadline: Math.min(req.deadline, Date.now() + CLOSE_GRACE_MS),
        };
        await withinBounds(() => session.close(), closeBounds, drop, `${label} close`).catch(() => {});
      }
      drop();
    }
  } catch (error) {
    rethrowScrubbed(error, secretsOf(target, req.credentials, req.url));
  }
}

/** Our own abort/timeout errors already say what happened; library errors get the operation prepended. */
function wrapFailure(error: unknown, what: string): Error {
  if (error instanceof FileStepError) return error;
  return new FileStepError(`${what} failed: ${messageOf(error)}`);
}
