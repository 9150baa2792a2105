/**
 * Many TCP streams over one message channel (the agent's WebSocket), each a Node Duplex with its own
 * credit window: a sender has at most STREAM_WINDOW_BYTES in flight per stream and waits for WINDOW
 * frames, which the receiver sends as its reader consumes. A slow consumer therefore holds back its own
 * stream only, and memory on either side stays bounded by streams × window. See tunnel-protocol.ts.
 */
import { Duplex } from 'node:stream';
import {
  decodeFrame,
  encodeFrame,
  encodeOpen,
  encodeWindow,
  FRAME,
  type Frame,
  MAX_DATA_PAYLOAD,
  STREAM_WINDOW_BYTES,
} from './tunnel.ts';

export interface MuxOptions {
  /** Sends one binary message; false when the channel is closed. */
  send(frame: Buffer): boolean;
  /** Agent side: the server asks for a stream to `target` (answer with accept or refuse). */
  onOpen?(streamId: number, target: string): void;
}

interface PendingWrite {
  chunk: Buffer;
  offset: number;
  callback: (error?: Error | null) => void;
}

/** One stream of the tunnel. Bytes counted here feed the listing and the metrics. */
export class TunnelStream extends Duplex {
  readonly id: number;
  bytesIn = 0;
  bytesOut = 0;
  readonly #mux: TunnelMux;
  #credit = STREAM_WINDOW_BYTES;
  #ungranted = 0;
  #pending: PendingWrite | undefined;
  #endSent = false;
  #endReceived = false;
  #resetReceived = false;

  constructor(id: number, mux: TunnelMux) {
    super({ allowHalfOpen: true, readableHighWaterMark: MAX_DATA_PAYLOAD });
    this.id = id;
    this.#mux = mux;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#sendFrom({ chunk, offset: 0, callback });
  }

  #sendFrom(write: PendingWrite): void {
    const { chunk } = write;
    while (write.offset < chunk.length) {
      if (this.#credit <= 0) {
        this.#pending = write;
        return;
      }
      const size = Math.min(this.#credit, MAX_DATA_PAYLOAD, chunk.length - write.offset);
      const payload = chunk.subarray(write.offset, write.offset + size);
      if (!this.#mux.send(encodeFrame(FRAME.data, this.id, payload))) {
        write.callback(new Error('the tunnel is closed'));
        return;
      }
      this.#credit -= size;
      this.bytesOut += size;
      this.#mux.bytesOut += size;
      write.offset += size;
    }
    write.callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#endSent = true;
    this.#mux.send(encodeFrame(FRAME.end, this.id));
    callback();
  }

  override _read(): void {
    if (this.#ungranted === 0) return;
    const grant = this.#ungranted;
    this.#ungranted = 0;
    this.#mux.send(encodeWindow(this.id, grant));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#mux.forget(this);
    const cleanlyClosed = this.#endSent && this.#endReceived;
    if (!cleanlyClosed && !this.#resetReceived) {
      this.#mux.send(encodeFrame(FRAME.reset, this.id, error?.message ?? 'stream closed'));
    }
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.callback(error ?? new Error('stream closed'));
    callback(error);
  }

  /** A frame for this stream arrived. */
  receive(frame: Frame): void {
    switch (frame.type) {
      case FRAME.data: {
        const size = frame.payload.length;
        this.bytesIn += size;
        this.#mux.bytesIn += size;
        this.#ungranted += size;
        // The peer may have at most one window plus what was granted from our buffer in flight.
        if (this.#ungranted > STREAM_WINDOW_BYTES + MAX_DATA_PAYLOAD) {
          this.destroy(new Error('the peer sent more than its window allows'));
          return;
        }
        // A copy: the message buffer may be pooled by the WebSocket library.
        this.push(Buffer.from(frame.payload));
        return;
      }
      case FRAME.window: {
        if (frame.payload.length < 4) return;
        this.#credit += frame.payload.readUInt32BE(0);
        const pending = this.#pending;
        this.#pending = undefined;
        if (pending) this.#sendFrom(pending);
        return;
      }
      case FRAME.end:
        this.#endReceived = true;
        this.push(null);
        return;
      case FRAME.reset:
        this.#resetReceived = true;
        if (this.#endSent && this.#endReceived) this.destroy();
        else this.destroy(new Error(frame.payload.toString('utf8') || 'the peer reset the stream'));
        return;
    }
  }
}

/** Waiting for the agent's OPENED or RESET. */
interface Opening {
  stream: TunnelStream;
  resolve(stream: TunnelStream): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export class TunnelMux {
  bytesIn = 0;
  bytesOut = 0;
  readonly #options: MuxOptions;
  readonly #streams = new Map<number, TunnelStream>();
  readonly #opening = new Map<number, Opening>();
  #nextId = 1;
  #closed: Error | undefined;

  constructor(options: MuxOptions) {
    this.#options = options;
  }

  /** Streams open or being opened. */
  get streamCount(): number {
    return this.#streams.size + this.#opening.size;
  }

  send(frame: Buffer): boolean {
    if (this.#closed) return false;
    return this.#options.send(frame);
  }

  /** Server side: asks the agent for a stream to `target`; rejects with the agent's reason or on timeout. */
  open(target: string, timeoutMs: number, dataPort?: number): Promise<TunnelStream> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#nextId;
    this.#nextId = this.#nextId >= 0xffff_fff0 ? 1 : this.#nextId + 1;
    const stream = new TunnelStream(id, this);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#opening.delete(id);
        this.send(encodeFrame(FRAME.reset, id, 'open timed out'));
        reject(new Error(`the agent did not open the stream to '${target}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#opening.set(id, { stream, resolve, reject, timer });
      this.send(encodeFrame(FRAME.open, id, encodeOpen({ target, dataPort })));
    });
  }

  /** Agent side: the stream the server asked for is connected. */
  accept(streamId: number): TunnelStream {
    const stream = new TunnelStream(streamId, this);
    this.#streams.set(streamId, stream);
    this.send(encodeFrame(FRAME.opened, streamId));
    return stream;
  }

  /** Agent side: the stream cannot be opened; the reason reaches the run's error message. */
  refuse(streamId: number, reason: string): void {
    this.send(encodeFrame(FRAME.reset, streamId, reason));
  }

  /** One binary message from the channel. */
  receive(data: Buffer): void {
    const frame = decodeFrame(data);
    if (!frame) return;
    if (frame.type === FRAME.open) {
      this.#options.onOpen?.(frame.streamId, frame.payload.toString('utf8'));
      return;
    }
    const opening = this.#opening.get(frame.streamId);
    if (opening) {
      this.#opening.delete(frame.streamId);
      clearTimeout(opening.timer);
      if (frame.type === FRAME.opened) {
        this.#streams.set(frame.streamId, opening.stream);
        opening.resolve(opening.stream);
      } else {
        opening.reject(new Error(frame.payload.toString('utf8') || 'the agent refused the stream'));
      }
      return;
    }
    const stream = this.#streams.get(frame.streamId);
    if (stream) stream.receive(frame);
    // An agent that connected after the open timed out: its stream is not wanted any more.
    else if (frame.type === FRAME.opened)
      this.send(encodeFrame(FRAME.reset, frame.streamId, 'open timed out'));
    // Other frames of a stream that is gone (a reset crossing data in flight) are dropped.
  }

  /** Whether the agent has a stream with this id (it refuses a cancelled open this way). */
  has(streamId: number): boolean {
    return this.#streams.has(streamId);
  }

  forget(stream: TunnelStream): void {
    if (this.#streams.get(stream.id) === stream) this.#streams.delete(stream.id);
  }

  /** The channel is gone: every stream fails with `reason`. */
  close(reason: Error): void {
    if (this.#closed) return;
    this.#closed = reason;
    for (const opening of this.#opening.values()) {
      clearTimeout(opening.timer);
      opening.reject(reason);
    }
    this.#opening.clear();
    for (const stream of [...this.#streams.values()]) stream.destroy(reason);
    this.#streams.clear();
  }
}
