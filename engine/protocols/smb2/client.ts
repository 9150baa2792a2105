/**
 * A minimal SMB2/3 client (MS-SMB2) for file steps: one connection over a socket the caller connected
 * (through the egress guard or a gateway tunnel), NTLMv2 authentication, every request signed after the
 * session is set up (HMAC-SHA256 for 2.x, AES-CMAC for 3.x, 3.1.1 with its pre-authentication integrity
 * hash), one tree (share), and the file requests a step needs: CREATE, READ, WRITE, QUERY_DIRECTORY,
 * SET_INFO (rename, delete), CLOSE. Dialects 2.0.2 to 3.1.1 are offered and SMB1 never is. Large reads and
 * writes use multi-credit requests (up to 1 MiB each) with a few in flight, within the credits the server
 * grants. Not done: encryption (a share or session that requires it is refused with a message saying so),
 * Kerberos, DFS referrals, compounding, oplocks and leases.
 *
 * The requests' bodies and what their answers hold are messages.ts's; this file frames, signs and sends
 * them, and keeps the credits, the session and the tree.
 *
 * Why our own client rather than a library: docs/developers/protocols.md ("SMB").
 */
import type { Socket } from 'node:net';
import {
  CAP_LARGE_MTU,
  COMMAND,
  closeRequest,
  createRequest,
  DIALECTS,
  DIRECTORY_BUFFER,
  directoryEntries,
  FILE_DISPOSITION_INFORMATION,
  FILE_RENAME_INFORMATION,
  FLAG_ASYNC,
  FLAG_SERVER_TO_REDIR,
  FLAG_SIGNED,
  goodbyeRequest,
  type Handle,
  negotiateRequest,
  OPEN,
  type OpenIntent,
  openedFile,
  queryDirectoryRequest,
  readData,
  readRequest,
  renameInformation,
  SESSION_FLAG_ENCRYPT_DATA,
  SESSION_FLAG_IS_GUEST,
  SESSION_FLAG_IS_NULL,
  SHARE_TYPE_DISK,
  SHAREFLAG_ENCRYPT_DATA,
  SMB_2_1,
  SMB_3_1_1,
  type SmbEntry,
  securityBuffer,
  sessionSetupRequest,
  setInfoRequest,
  treeConnectRequest,
  writeRequest,
} from './messages.ts';
import { authenticateMessage, type Identity, negotiateMessage, parseChallenge } from './ntlm.ts';
import { chainHash, sign, signingKey, verify } from './signing.ts';
import { isNotFound, SmbStatusError, STATUS } from './status.ts';

export type { SmbEntry, SmbEntryType } from './messages.ts';
export { isNotFound, SmbStatusError } from './status.ts';

/** The most one READ or WRITE moves: larger requests only add latency to the first byte. */
const MAX_IO_BYTES = 1024 * 1024;
/** READs or WRITEs in flight at once. */
const IO_WINDOW = 4;
/** One credit covers 64 KiB of a request or its answer. */
const CREDIT_BYTES = 65536;
/** Credits asked for beyond a request's own charge, so several large requests can be in flight. */
const EXTRA_CREDITS = 64;
/** The largest frame NetBIOS session framing can carry (24-bit length). */
const MAX_FRAME = 0xffffff;

export interface SmbConnectOptions {
  /** Connected; the client owns it from now on. */
  socket: Socket;
  /** The server's name as the URL gives it, for the share's UNC path. */
  server: string;
  share: string;
  identity: Identity;
  /** A server that answers nothing this long while requests wait fails them. */
  idleTimeoutMs: number;
}

interface Reply {
  status: number;
  /** The whole message (header and body), as received. */
  message: Buffer;
  /** The body, after the 64-byte header. */
  body: Buffer;
  sessionId: bigint;
  treeId: number;
  /** The request as it was sent (SMB 3.1.1's pre-authentication hash covers it). */
  sent: readonly Buffer[];
}

interface Pending {
  resolve(reply: Omit<Reply, 'sent'>): void;
  reject(error: Error): void;
}

interface RequestOptions {
  /** Bytes the request carries or asks back (a WRITE's data, a READ's length): sets its credit charge. */
  payload?: number;
  /** Sent after the body, as is (a WRITE's data). */
  data?: Buffer;
  /** Statuses that are answers, not failures (besides SUCCESS). */
  accept?: readonly number[];
}

export class SmbProtocolError extends Error {
  override name = 'SmbProtocolError';
}

/** One SMB2/3 connection with one session and one tree. */
export class SmbClient {
  readonly #socket: Socket;
  readonly #pending = new Map<number, Pending>();
  readonly #creditWaiters: Array<() => void> = [];
  #credits = 1;
  #nextMessageId = 0;
  #failure: Error | undefined;
  // Frame reassembly: the 4-byte length, then the frame.
  readonly #head = Buffer.alloc(4);
  #headFilled = 0;
  #frame: Buffer | undefined;
  #frameFilled = 0;

  #dialect = 0x0202;
  #largeMtu = false;
  #maxRead = CREDIT_BYTES;
  #maxWrite = CREDIT_BYTES;
  #sessionId = 0n;
  #treeId = 0;
  #signingKey: Buffer | undefined;

  private constructor(socket: Socket, idleTimeoutMs: number) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      // Whatever a server sends fails this connection, never the process.
      try {
        this.#receive(chunk);
      } catch (error) {
        this.#fatal(`the server sent a malformed message (${(error as Error).message})`);
      }
    });
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new SmbProtocolError('the server closed the connection')));
    socket.setTimeout(idleTimeoutMs, () => {
      if (this.#pending.size > 0) {
        this.#fail(new SmbProtocolError(`the server answered nothing for ${idleTimeoutMs / 1000} s`));
        socket.destroy();
      }
    });
  }

  /** Negotiates, authenticates and connects the share; on failure the socket is destroyed. */
  static async connect(options: SmbConnectOptions): Promise<SmbClient> {
    const client = new SmbClient(options.socket, options.idleTimeoutMs);
    try {
      const preauth = await client.#negotiate();
      await client.#sessionSetup(options.identity, preauth);
      await client.#treeConnect(options.server, options.share);
      return client;
    } catch (error) {
      client.destroy();
      throw error;
    }
  }

  /** The dialect the server chose, as `3.1.1`. */
  get dialect(): string {
    const major = this.#dialect >> 8;
    const minor = (this.#dialect >> 4) & 0xf;
    const patch = this.#dialect & 0xf;
    return `${major}.${minor}.${patch}`;
  }

  // -------------------------------------------------------------------------------------------------
  // Transport

  #receive(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length && this.#failure === undefined) {
      if (this.#frame === undefined) {
        const take = Math.min(4 - this.#headFilled, chunk.length - offset);
        chunk.copy(this.#head, this.#headFilled, offset, offset + take);
        this.#headFilled += take;
        offset += take;
        if (this.#headFilled < 4) return;
        this.#headFilled = 0;
        if (this.#head[0] !== 0) {
          this.#fatal('the server sent something that is not SMB2 over TCP');
          return;
        }
        const length = this.#head.readUInt32BE(0) & MAX_FRAME;
        if (length === 0) continue;
        this.#frame = Buffer.allocUnsafe(length);
        this.#frameFilled = 0;
      }
      const frame = this.#frame;
      const take = Math.min(frame.length - this.#frameFilled, chunk.length - offset);
      chunk.copy(frame, this.#frameFilled, offset, offset + take);
      this.#frameFilled += take;
      offset += take;
      if (this.#frameFilled === frame.length) {
        this.#frame = undefined;
        this.#handle(frame);
      }
    }
  }

  #handle(message: Buffer): void {
    if (message.length < 64 || message.readUInt32BE(0) !== 0xfe534d42) {
      const encrypted = message.length >= 4 && message.readUInt32BE(0) === 0xfd534d42;
      this.#fatal(
        encrypted
          ? 'the server encrypts its answers (SMB3 encryption), which kubeglue does not support'
          : 'the server sent a message that is not SMB2',
      );
      return;
    }
    const flags = message.readUInt32LE(16);
    if (!(flags & FLAG_SERVER_TO_REDIR)) return;
    this.#credits += message.readUInt16LE(14);
    this.#wakeCreditWaiters();
    const status = message.readUInt32LE(8);
    const messageId = Number(message.readBigUInt64LE(24));
    const pending = this.#pending.get(messageId);
    // An oplock break or an answer to a request we gave up on.
    if (pending === undefined) return;
    // An interim answer: the real one follows with the same message id.
    if (status === STATUS.PENDING && flags & FLAG_ASYNC) return;
    const sessionId = message.readBigUInt64LE(40);
    if (this.#signingKey && sessionId === this.#sessionId) {
      if (flags & FLAG_SIGNED) {
        if (!verify(this.#dialect, this.#signingKey, message)) {
          this.#fatal('an answer of the server has a wrong signature');
          return;
        }
      } else {
        this.#fatal('the server sent an unsigned answer on a signed session');
        return;
      }
    }
    this.#pending.delete(messageId);
    pending.resolve({
      status,
      message,
      body: message.subarray(64),
      sessionId,
      treeId: flags & FLAG_ASYNC ? this.#treeId : message.readUInt32LE(36),
    });
  }

  #fatal(reason: string): void {
    this.#fail(new SmbProtocolError(reason));
    this.#socket.destroy();
  }

  #fail(error: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    this.#wakeCreditWaiters();
  }

  #wakeCreditWaiters(): void {
    for (const wake of this.#creditWaiters.splice(0)) wake();
  }

  /** Credits a request of `payload` bytes costs (1 for every 64 KiB, at least 1). */
  #charge(payload: number): number {
    if (!this.#largeMtu) return 1;
    return Math.max(1, Math.ceil(payload / CREDIT_BYTES));
  }

  async #takeCredits(charge: number): Promise<void> {
    while (this.#failure === undefined && this.#credits < charge) {
      await new Promise<void>((resolve) => this.#creditWaiters.push(resolve));
    }
    if (this.#failure) throw this.#failure;
    this.#credits -= charge;
  }

  /** Builds, signs and sends one request; resolves with its final answer. */
  async #send(command: number, body: Buffer, options: RequestOptions = {}): Promise<Reply> {
    if (this.#failure) throw this.#failure;
    const charge = this.#charge(options.payload ?? 0);
    await this.#takeCredits(charge);
    const messageId = this.#nextMessageId;
    this.#nextMessageId += charge;
    const message = Buffer.alloc(64 + body.length);
    message.writeUInt32BE(0xfe534d42, 0);
    message.writeUInt16LE(64, 4);
    message.writeUInt16LE(this.#dialect >= SMB_2_1 ? charge : 0, 6);
    message.writeUInt16LE(command, 12);
    message.writeUInt16LE(charge + EXTRA_CREDITS, 14);
    const signed = this.#signingKey !== undefined;
    message.writeUInt32LE(signed ? FLAG_SIGNED : 0, 16);
    message.writeBigUInt64LE(BigInt(messageId), 24);
    message.writeUInt32LE(0xfeff, 32);
    message.writeUInt32LE(this.#treeId, 36);
    message.writeBigUInt64LE(this.#sessionId, 40);
    body.copy(message, 64);
    const parts = options.data ? [message, options.data] : [message];
    if (signed) sign(this.#dialect, this.#signingKey as Buffer, parts);
    const length = parts.reduce((sum, part) => sum + part.length, 0);
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(length, 0);
    const reply = new Promise<Omit<Reply, 'sent'>>((resolve, reject) =>
      this.#pending.set(messageId, { resolve, reject }),
    );
    this.#socket.cork();
    this.#socket.write(prefix);
    for (const part of parts) this.#socket.write(part);
    this.#socket.uncork();
    const answer = await reply;
    if (answer.status !== STATUS.SUCCESS && !options.accept?.includes(answer.status)) {
      throw new SmbStatusError(answer.status);
    }
    return { ...answer, sent: parts };
  }

  // -------------------------------------------------------------------------------------------------
  // Negotiation, session, tree

  /** Negotiates the dialect; answers the 3.1.1 pre-authentication hash so far (else undefined). */
  async #negotiate(): Promise<Buffer | undefined> {
    const reply = await this.#send(COMMAND.NEGOTIATE, negotiateRequest());
    const dialect = reply.body.readUInt16LE(4);
    if (!DIALECTS.includes(dialect)) {
      throw new SmbProtocolError(`the server chose dialect 0x${dialect.toString(16)}, which was not offered`);
    }
    this.#dialect = dialect;
    this.#largeMtu = dialect >= SMB_2_1 && (reply.body.readUInt32LE(24) & CAP_LARGE_MTU) !== 0;
    const ioLimit = this.#largeMtu ? MAX_IO_BYTES : CREDIT_BYTES;
    this.#maxRead = Math.min(reply.body.readUInt32LE(32), ioLimit);
    this.#maxWrite = Math.min(reply.body.readUInt32LE(36), ioLimit);
    if (dialect !== SMB_3_1_1) return undefined;
    return chainHash(chainHash(Buffer.alloc(64), reply.sent), [reply.message]);
  }

  async #sessionSetup(identity: Identity, connectionHash: Buffer | undefined): Promise<void> {
    const first = await this.#send(COMMAND.SESSION_SETUP, sessionSetupRequest(negotiateMessage()), {
      accept: [STATUS.MORE_PROCESSING_REQUIRED],
    });
    if (first.status !== STATUS.MORE_PROCESSING_REQUIRED) {
      throw new SmbProtocolError('the server accepted the session without authentication');
    }
    let hash = connectionHash && chainHash(chainHash(connectionHash, first.sent), [first.message]);
    this.#sessionId = first.sessionId;
    const { message, sessionKey } = authenticateMessage(identity, parseChallenge(securityBuffer(first.body)));
    const second = await this.#send(COMMAND.SESSION_SETUP, sessionSetupRequest(message));
    hash = hash && chainHash(hash, second.sent);
    const sessionFlags = second.body.readUInt16LE(2);
    if (sessionFlags & (SESSION_FLAG_IS_GUEST | SESSION_FLAG_IS_NULL)) {
      throw new SmbProtocolError(
        'the server logged the user on as a guest (it does not know the user name), so nothing it sends can be checked',
      );
    }
    if (sessionFlags & SESSION_FLAG_ENCRYPT_DATA) {
      throw new SmbProtocolError('the server requires SMB3 encryption, which kubeglue does not support');
    }
    const key = signingKey(this.#dialect, sessionKey, hash);
    const flags = second.message.readUInt32LE(16);
    if (flags & FLAG_SIGNED) {
      if (!verify(this.#dialect, key, second.message)) {
        throw new SmbProtocolError('the answer to the session setup has a wrong signature');
      }
    } else if (this.#dialect === SMB_3_1_1) {
      throw new SmbProtocolError('the server did not sign the end of the session setup');
    }
    this.#signingKey = key;
  }

  async #treeConnect(server: string, share: string): Promise<void> {
    const reply = await this.#send(COMMAND.TREE_CONNECT, treeConnectRequest(server, share));
    if (reply.body.readUInt8(2) !== SHARE_TYPE_DISK) {
      throw new SmbProtocolError(`'${share}' is not a disk share (a printer or named pipe share)`);
    }
    if (reply.body.readUInt32LE(4) & SHAREFLAG_ENCRYPT_DATA) {
      throw new SmbProtocolError(
        `share '${share}' requires SMB3 encryption, which kubeglue does not support`,
      );
    }
    this.#treeId = reply.treeId;
  }

  // -------------------------------------------------------------------------------------------------
  // Files. Paths are relative to the share, with backslashes ('' is the share's root).

  async #open(path: string, intent: OpenIntent): Promise<Handle> {
    const reply = await this.#send(COMMAND.CREATE, createRequest(path, intent));
    return openedFile(reply.body);
  }

  async #close(handle: Handle): Promise<void> {
    await this.#send(COMMAND.CLOSE, closeRequest(handle));
  }

  /** Runs work on an open handle and closes it, also when the work fails (unless the connection is gone). */
  async #withHandle<T>(handle: Handle, work: (handle: Handle) => Promise<T>): Promise<T> {
    try {
      return await work(handle);
    } finally {
      if (this.#failure === undefined) await this.#close(handle).catch(() => {});
    }
  }

  async #setInfo(handle: Handle, infoClass: number, info: Buffer): Promise<void> {
    await this.#send(COMMAND.SET_INFO, setInfoRequest(handle, infoClass, info));
  }

  /** The directory's entries, without `.` and `..`. */
  async list(path: string): Promise<SmbEntry[]> {
    const handle = await this.#open(path, OPEN.list);
    return this.#withHandle(handle, async () => {
      const entries: SmbEntry[] = [];
      for (;;) {
        const reply = await this.#send(COMMAND.QUERY_DIRECTORY, queryDirectoryRequest(handle), {
          payload: DIRECTORY_BUFFER,
          accept: [STATUS.NO_MORE_FILES],
        });
        if (reply.status === STATUS.NO_MORE_FILES) return entries;
        entries.push(...directoryEntries(reply.body));
      }
    });
  }

  /** What is at the path (a link itself, not what it points to), or null when nothing is. */
  async stat(path: string): Promise<Omit<SmbEntry, 'name'> | null> {
    let handle: Handle;
    try {
      handle = await this.#open(path, OPEN.stat);
    } catch (error) {
      if (error instanceof SmbStatusError && isNotFound(error.status)) return null;
      throw error;
    }
    return this.#withHandle(handle, async () => handle.entry);
  }

  /**
   * Reads a whole file into one buffer of the size the server gave when it was opened: each answer is
   * copied to its place as it arrives, so the file is held once (plus the answers in flight). Fails
   * before reading anything when the file is larger than `maxBytes`; a file that shrinks while read
   * ends where its data ends.
   */
  async read(path: string, maxBytes: number): Promise<Buffer> {
    const handle = await this.#open(path, OPEN.read);
    return this.#withHandle(handle, async () => {
      if (handle.size > maxBytes) {
        throw new SmbProtocolError(`the file is larger than the ${maxBytes} byte download limit`);
      }
      const file = Buffer.allocUnsafe(handle.size);
      let end = handle.size;
      const readInto = async (offset: number, length: number): Promise<void> => {
        const data = await this.#readAt(handle, offset, length);
        data.copy(file, offset);
        if (data.length < length) end = Math.min(end, offset + data.length);
      };
      const inFlight: Array<Promise<void>> = [];
      try {
        for (let next = 0; next < end; ) {
          const wanted = Math.min(this.#maxRead, end - next);
          // With reads in flight, a read the credits do not cover yet waits for their answers' credits.
          if (inFlight.length >= IO_WINDOW || (inFlight.length > 0 && this.#credits < this.#charge(wanted))) {
            await inFlight.shift();
            continue;
          }
          const length = Math.min(wanted, this.#affordable());
          const reading = readInto(next, length);
          reading.catch(() => {});
          inFlight.push(reading);
          next += length;
        }
        for (const reading of inFlight.splice(0)) await reading;
      } finally {
        // Answers still on their way are awaited so the handle closes after them.
        await Promise.allSettled(inFlight);
      }
      return end === file.length ? file : file.subarray(0, end);
    });
  }

  /** The largest request (in bytes) the credits held now pay for. */
  #affordable(): number {
    return this.#largeMtu ? Math.max(1, this.#credits) * CREDIT_BYTES : CREDIT_BYTES;
  }

  async #readAt(handle: Handle, offset: number, length: number): Promise<Buffer> {
    const reply = await this.#send(COMMAND.READ, readRequest(handle, offset, length), {
      payload: length,
      accept: [STATUS.END_OF_FILE],
    });
    if (reply.status === STATUS.END_OF_FILE) return Buffer.alloc(0);
    return readData(reply.body, length);
  }

  /** Creates or replaces a file with `bytes`. */
  async write(path: string, bytes: Buffer): Promise<void> {
    const handle = await this.#open(path, OPEN.write);
    await this.#withHandle(handle, async () => {
      const inFlight: Array<Promise<void>> = [];
      try {
        for (let offset = 0; offset < bytes.length; ) {
          const length = Math.min(this.#maxWrite, bytes.length - offset, this.#affordable());
          const written = this.#writeAt(handle, offset, bytes.subarray(offset, offset + length));
          written.catch(() => {});
          inFlight.push(written);
          offset += length;
          if (inFlight.length >= IO_WINDOW) await inFlight.shift();
        }
        for (const written of inFlight.splice(0)) await written;
      } finally {
        await Promise.allSettled(inFlight);
      }
    });
  }

  async #writeAt(handle: Handle, offset: number, data: Buffer): Promise<void> {
    const reply = await this.#send(COMMAND.WRITE, writeRequest(handle, offset, data.length), {
      payload: data.length,
      data,
    });
    const count = reply.body.readUInt32LE(4);
    if (count !== data.length) {
      throw new SmbProtocolError(`the server wrote ${count} of ${data.length} bytes`);
    }
  }

  /** Deletes a file or an empty directory. */
  async remove(path: string): Promise<void> {
    const handle = await this.#open(path, OPEN.remove);
    await this.#withHandle(handle, () =>
      this.#setInfo(handle, FILE_DISPOSITION_INFORMATION, Buffer.from([1])),
    );
  }

  /** Renames (moves) within the share; an existing target is not replaced. */
  async rename(from: string, to: string): Promise<void> {
    const handle = await this.#open(from, OPEN.rename);
    await this.#withHandle(handle, () =>
      this.#setInfo(handle, FILE_RENAME_INFORMATION, renameInformation(to)),
    );
  }

  /** Creates a directory; an existing one is fine. */
  async mkdir(path: string): Promise<void> {
    const handle = await this.#open(path, OPEN.mkdir);
    await this.#close(handle);
  }

  /** Leaves the share and logs off, then ends the connection. */
  async close(): Promise<void> {
    if (this.#failure === undefined) {
      await this.#send(COMMAND.TREE_DISCONNECT, goodbyeRequest()).catch(() => {});
      await this.#send(COMMAND.LOGOFF, goodbyeRequest()).catch(() => {});
    }
    this.#fail(new SmbProtocolError('the connection is closed'));
    this.#socket.end();
  }

  /** Drops the connection now; waiting requests fail. */
  destroy(): void {
    this.#fail(new SmbProtocolError('the connection was closed'));
    this.#socket.destroy();
  }
}
