/**
 * MS-SMB2 on the wire, for the client (client.ts): the numbers the protocol defines, the bodies of the
 * requests a file step sends, and what the answers to them hold. No socket and no state here: the client
 * frames, signs and sends these bodies, and keeps the credits, the session and the tree.
 */
import { randomBytes } from 'node:crypto';

export const COMMAND = {
  NEGOTIATE: 0,
  SESSION_SETUP: 1,
  LOGOFF: 2,
  TREE_CONNECT: 3,
  TREE_DISCONNECT: 4,
  CREATE: 5,
  CLOSE: 6,
  READ: 8,
  WRITE: 9,
  QUERY_DIRECTORY: 14,
  SET_INFO: 17,
} as const;

export const FLAG_SERVER_TO_REDIR = 0x1;
export const FLAG_ASYNC = 0x2;
export const FLAG_SIGNED = 0x8;

export const DIALECTS = [0x0202, 0x0210, 0x0300, 0x0302, 0x0311];
export const SMB_2_1 = 0x0210;
export const SMB_3_1_1 = 0x0311;

export const CAP_LARGE_MTU = 0x4;
export const SESSION_FLAG_IS_GUEST = 0x1;
export const SESSION_FLAG_IS_NULL = 0x2;
export const SESSION_FLAG_ENCRYPT_DATA = 0x4;
export const SHARE_TYPE_DISK = 1;
export const SHAREFLAG_ENCRYPT_DATA = 0x8000;

// Access masks (MS-SMB2 2.2.13.1)
const FILE_READ_DATA = 0x1;
const FILE_WRITE_DATA = 0x2;
const FILE_READ_ATTRIBUTES = 0x80;
const DELETE = 0x10000;
const SYNCHRONIZE = 0x100000;

const SHARE_ALL = 0x1 | 0x2 | 0x4;
const DISPOSITION = { OPEN: 1, OPEN_IF: 3, OVERWRITE_IF: 5 } as const;
const OPTION_DIRECTORY = 0x1;
const OPTION_NON_DIRECTORY = 0x40;
const OPTION_OPEN_REPARSE_POINT = 0x200000;

const ATTRIBUTE_DIRECTORY = 0x10;
const ATTRIBUTE_NORMAL = 0x80;
const ATTRIBUTE_REPARSE_POINT = 0x400;

const INFO_FILE = 1;
const FILE_DIRECTORY_INFORMATION = 1;
export const FILE_RENAME_INFORMATION = 10;
export const FILE_DISPOSITION_INFORMATION = 13;

/** The answer buffer a QUERY_DIRECTORY asks for. */
export const DIRECTORY_BUFFER = 65536;

export type SmbEntryType = 'file' | 'directory' | 'symlink';

export interface SmbEntry {
  name: string;
  size: number;
  type: SmbEntryType;
  /** ISO 8601, or null when the server gives no time. */
  modifyTime: string | null;
}

/** A file or directory the client opened (CREATE), until it closes it. */
export interface Handle {
  fileId: Buffer;
  size: number;
  entry: Omit<SmbEntry, 'name'>;
}

/** Windows FILETIME (100 ns since 1601) as ISO 8601; null for 0 (unknown). */
function fileTime(value: bigint): string | null {
  if (value === 0n) return null;
  const ms = Number(value / 10_000n) - 11_644_473_600_000;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function typeOf(attributes: number): SmbEntryType {
  if (attributes & ATTRIBUTE_REPARSE_POINT) return 'symlink';
  return attributes & ATTRIBUTE_DIRECTORY ? 'directory' : 'file';
}

function utf16(text: string): Buffer {
  return Buffer.from(text, 'utf16le');
}

// ---------------------------------------------------------------------------------------------------
// Negotiation, session, tree

/** NEGOTIATE: every dialect offered, signing enabled, and the 3.1.1 pre-authentication integrity context. */
export function negotiateRequest(): Buffer {
  const fixed = 36 + DIALECTS.length * 2;
  const contextOffset = Math.ceil((64 + fixed) / 8) * 8;
  const salt = randomBytes(32);
  const context = Buffer.alloc(8 + 38);
  context.writeUInt16LE(1, 0); // PREAUTH_INTEGRITY_CAPABILITIES
  context.writeUInt16LE(38, 2);
  context.writeUInt16LE(1, 8); // one hash algorithm
  context.writeUInt16LE(salt.length, 10);
  context.writeUInt16LE(1, 12); // SHA-512
  salt.copy(context, 14);
  const body = Buffer.alloc(contextOffset - 64 + context.length);
  body.writeUInt16LE(36, 0);
  body.writeUInt16LE(DIALECTS.length, 2);
  body.writeUInt16LE(1, 4); // signing enabled
  randomBytes(16).copy(body, 12); // client GUID
  body.writeUInt32LE(contextOffset, 28);
  body.writeUInt16LE(1, 32);
  DIALECTS.forEach((dialect, i) => {
    body.writeUInt16LE(dialect, 36 + i * 2);
  });
  context.copy(body, contextOffset - 64);
  return body;
}

/** SESSION_SETUP carrying one NTLMSSP message. */
export function sessionSetupRequest(token: Buffer): Buffer {
  const fixed = Buffer.alloc(24);
  fixed.writeUInt16LE(25, 0);
  fixed.writeUInt8(1, 3); // signing enabled
  fixed.writeUInt16LE(64 + 24, 12);
  fixed.writeUInt16LE(token.length, 14);
  return Buffer.concat([fixed, token]);
}

/** The NTLMSSP message a SESSION_SETUP answer carries. */
export function securityBuffer(body: Buffer): Buffer {
  const offset = body.readUInt16LE(4) - 64;
  return body.subarray(offset, offset + body.readUInt16LE(6));
}

/** TREE_CONNECT to `\\server\share`. */
export function treeConnectRequest(server: string, share: string): Buffer {
  const path = utf16(`\\\\${server}\\${share}`);
  const fixed = Buffer.alloc(8);
  fixed.writeUInt16LE(9, 0);
  fixed.writeUInt16LE(64 + 8, 4);
  fixed.writeUInt16LE(path.length, 6);
  return Buffer.concat([fixed, path]);
}

/** TREE_DISCONNECT and LOGOFF: a body with nothing but its size. */
export function goodbyeRequest(): Buffer {
  const goodbye = Buffer.alloc(4);
  goodbye.writeUInt16LE(4, 0);
  return goodbye;
}

// ---------------------------------------------------------------------------------------------------
// Files. Paths are relative to the share, with backslashes ('' is the share's root).

/** How a file operation opens its path: the access, disposition, options and attributes of its CREATE. */
export interface OpenIntent {
  access: number;
  disposition: number;
  options: number;
  attributes: number;
}

export const OPEN = {
  list: {
    access: FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OPEN,
    options: OPTION_DIRECTORY,
    attributes: 0,
  },
  /** A link itself, not what it points to. */
  stat: {
    access: FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OPEN,
    options: OPTION_OPEN_REPARSE_POINT,
    attributes: 0,
  },
  read: {
    access: FILE_READ_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OPEN,
    options: OPTION_NON_DIRECTORY,
    attributes: 0,
  },
  /** Creates the file, or replaces it. */
  write: {
    access: FILE_WRITE_DATA | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OVERWRITE_IF,
    options: OPTION_NON_DIRECTORY,
    attributes: ATTRIBUTE_NORMAL,
  },
  remove: { access: DELETE | FILE_READ_ATTRIBUTES, disposition: DISPOSITION.OPEN, options: 0, attributes: 0 },
  rename: {
    access: DELETE | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OPEN,
    options: 0,
    attributes: 0,
  },
  /** Creates the directory; an existing one is fine. */
  mkdir: {
    access: FILE_READ_ATTRIBUTES | SYNCHRONIZE,
    disposition: DISPOSITION.OPEN_IF,
    options: OPTION_DIRECTORY,
    attributes: ATTRIBUTE_DIRECTORY,
  },
} as const satisfies Record<string, OpenIntent>;

/** CREATE (open) of a path, shared with every other opener. */
export function createRequest(
  path: string,
  { access, disposition, options, attributes }: OpenIntent,
): Buffer {
  const name = utf16(path);
  const fixed = Buffer.alloc(56);
  fixed.writeUInt16LE(57, 0);
  fixed.writeUInt32LE(2, 4); // impersonation
  fixed.writeUInt32LE(access, 24);
  fixed.writeUInt32LE(attributes, 28);
  fixed.writeUInt32LE(SHARE_ALL, 32);
  fixed.writeUInt32LE(disposition, 36);
  fixed.writeUInt32LE(options, 40);
  fixed.writeUInt16LE(64 + 56, 44);
  fixed.writeUInt16LE(name.length, 46);
  // The variable part is at least one byte, even for the root's empty name.
  return Buffer.concat([fixed, name.length > 0 ? name : Buffer.alloc(1)]);
}

/** What a CREATE answer says of the file it opened. */
export function openedFile(body: Buffer): Handle {
  const attributesOut = body.readUInt32LE(56);
  const size = Number(body.readBigUInt64LE(48));
  return {
    fileId: Buffer.from(body.subarray(64, 80)),
    size,
    entry: {
      size: attributesOut & ATTRIBUTE_DIRECTORY ? 0 : size,
      type: typeOf(attributesOut),
      modifyTime: fileTime(body.readBigUInt64LE(24)),
    },
  };
}

export function closeRequest(handle: Handle): Buffer {
  const body = Buffer.alloc(24);
  body.writeUInt16LE(24, 0);
  handle.fileId.copy(body, 8);
  return body;
}

/** SET_INFO of one file information class. */
export function setInfoRequest(handle: Handle, infoClass: number, info: Buffer): Buffer {
  const fixed = Buffer.alloc(32);
  fixed.writeUInt16LE(33, 0);
  fixed.writeUInt8(INFO_FILE, 2);
  fixed.writeUInt8(infoClass, 3);
  fixed.writeUInt32LE(info.length, 4);
  fixed.writeUInt16LE(64 + 32, 8);
  handle.fileId.copy(fixed, 16);
  return Buffer.concat([fixed, info]);
}

/** FILE_RENAME_INFORMATION to a path of the same share, not replacing what is there. */
export function renameInformation(to: string): Buffer {
  const name = utf16(to);
  const info = Buffer.alloc(20 + name.length);
  info.writeUInt32LE(name.length, 16);
  name.copy(info, 20);
  return info;
}

/** QUERY_DIRECTORY of every entry (`*`), continuing where the previous one stopped. */
export function queryDirectoryRequest(handle: Handle): Buffer {
  const pattern = utf16('*');
  const fixed = Buffer.alloc(32);
  fixed.writeUInt16LE(33, 0);
  fixed.writeUInt8(FILE_DIRECTORY_INFORMATION, 2);
  handle.fileId.copy(fixed, 8);
  fixed.writeUInt16LE(64 + 32, 24);
  fixed.writeUInt16LE(pattern.length, 26);
  fixed.writeUInt32LE(DIRECTORY_BUFFER, 28);
  return Buffer.concat([fixed, pattern]);
}

/** The entries of a QUERY_DIRECTORY answer, without `.` and `..`. */
export function directoryEntries(body: Buffer): SmbEntry[] {
  const entries: SmbEntry[] = [];
  const offset = body.readUInt16LE(2) - 64;
  const buffer = body.subarray(offset, offset + body.readUInt32LE(4));
  for (let at = 0; at < buffer.length; ) {
    const next = buffer.readUInt32LE(at);
    const nameLength = buffer.readUInt32LE(at + 60);
    const name = buffer.subarray(at + 64, at + 64 + nameLength).toString('utf16le');
    if (name !== '.' && name !== '..') {
      const attributes = buffer.readUInt32LE(at + 56);
      entries.push({
        name,
        size: attributes & ATTRIBUTE_DIRECTORY ? 0 : Number(buffer.readBigUInt64LE(at + 40)),
        type: typeOf(attributes),
        modifyTime: fileTime(buffer.readBigUInt64LE(at + 24)),
      });
    }
    if (next === 0) break;
    at += next;
  }
  return entries;
}

export function readRequest(handle: Handle, offset: number, length: number): Buffer {
  const body = Buffer.alloc(49);
  body.writeUInt16LE(49, 0);
  body.writeUInt8(64 + 16, 2);
  body.writeUInt32LE(length, 4);
  body.writeBigUInt64LE(BigInt(offset), 8);
  handle.fileId.copy(body, 16);
  return body;
}

/** The data of a READ answer. */
export function readData(body: Buffer, length: number): Buffer {
  const dataOffset = body.readUInt8(2) - 64;
  // Never more than was asked: a longer answer must not write past this read's part of the file.
  return body.subarray(dataOffset, dataOffset + Math.min(length, body.readUInt32LE(4)));
}

/** A WRITE of `length` bytes at `offset`; the data follows the body as it is. */
export function writeRequest(handle: Handle, offset: number, length: number): Buffer {
  const body = Buffer.alloc(48);
  body.writeUInt16LE(49, 0);
  body.writeUInt16LE(64 + 48, 2);
  body.writeUInt32LE(length, 4);
  body.writeBigUInt64LE(BigInt(offset), 8);
  handle.fileId.copy(body, 16);
  return body;
}
