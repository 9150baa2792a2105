/**
 * The contract between the gateway agent and the API's tunnel endpoint (docs/gateway.md). One WebSocket
 * per agent carries every TCP stream:
 *
 * - Text frames are control messages (JSON): the agent's `register`, the server's `registered`.
 * - Binary frames are stream frames: 1 byte type, 4 bytes stream id (big-endian), then the payload.
 *   The server opens streams (OPEN with the target name); the agent answers OPENED or RESET (with a
 *   reason) after dialing. DATA carries bytes, WINDOW grants the sender more bytes (per-stream credit,
 *   so one slow stream never stalls the others), END half-closes, RESET aborts with a reason.
 *
 * Both programs import this module, so the two sides cannot drift apart.
 */
import { z } from 'zod';
import { TargetProtocol } from './target-protocol.ts';

/** Where the tunnel endpoint listens; the agent appends it to a server_url without a path. */
export const TUNNEL_PATH = '/v1/tunnel';

export const FRAME = {
  open: 1,
  opened: 2,
  data: 3,
  window: 4,
  end: 5,
  reset: 6,
} as const;
export type FrameType = (typeof FRAME)[keyof typeof FRAME];

export const FRAME_HEADER_BYTES = 5;
/** Largest DATA payload; bigger writes are cut into several frames. */
export const MAX_DATA_PAYLOAD = 64 * 1024;
/** Bytes a sender may have in flight on one stream before the receiver grants more. */
export const STREAM_WINDOW_BYTES = 256 * 1024;
/** The WebSocket message limit both sides enforce. */
export const MAX_MESSAGE_BYTES = MAX_DATA_PAYLOAD + FRAME_HEADER_BYTES + 1024;

/** WebSocket close codes the agent acts on. */
export const CLOSE = {
  /** A newer agent registered the same tunnel id: this one stops. */
  replaced: 4001,
  /** The registration was refused (malformed); retrying the same message will not help. */
  invalidRegistration: 4002,
  /**
   * Another API key owns the tunnel id (the key that first registered it); the owner's agent is left
   * alone. The agent keeps retrying with backoff, so an admin releasing the id lets it in.
   */
  notOwner: 4003,
  /** The server shuts down; the agent reconnects (to another replica). */
  goingAway: 1001,
  /** The server failed to register the tunnel (its store); the agent retries. */
  tryAgain: 1011,
} as const;

const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const TUNNEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export const TunnelId = z
  .string()
  .regex(TUNNEL_ID, 'letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 63');
export const TargetName = z
  .string()
  .regex(TARGET_NAME, 'letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 63');
export { TargetProtocol };

/** What the agent tells the server about a target: never its address (the server needs only the name). */
export const AdvertisedTarget = z.strictObject({ name: TargetName, protocol: TargetProtocol });
export type AdvertisedTarget = z.infer<typeof AdvertisedTarget>;

export const RegisterMessage = z.strictObject({
  type: z.literal('register'),
  tunnelId: TunnelId,
  targets: z.array(AdvertisedTarget).min(1).max(256),
  agentVersion: z.string().max(64).optional(),
});
export type RegisterMessage = z.infer<typeof RegisterMessage>;

export const RegisteredMessage = z.strictObject({ type: z.literal('registered'), tunnelId: TunnelId });
export type RegisteredMessage = z.infer<typeof RegisteredMessage>;

export interface Frame {
  type: FrameType;
  streamId: number;
  payload: Buffer;
}

export function encodeFrame(type: FrameType, streamId: number, payload?: Buffer | string): Buffer {
  const body =
    payload === undefined ? undefined : typeof payload === 'string' ? Buffer.from(payload) : payload;
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + (body?.length ?? 0));
  frame.writeUInt8(type, 0);
  frame.writeUInt32BE(streamId, 1);
  body?.copy(frame, FRAME_HEADER_BYTES);
  return frame;
}

/** undefined for a frame too short or of an unknown type (the peer is then misbehaving). */
export function decodeFrame(data: Buffer): Frame | undefined {
  if (data.length < FRAME_HEADER_BYTES) return undefined;
  const type = data.readUInt8(0);
  if (type < FRAME.open || type > FRAME.reset) return undefined;
  return {
    type: type as FrameType,
    streamId: data.readUInt32BE(1),
    payload: data.subarray(FRAME_HEADER_BYTES),
  };
}

export function encodeWindow(streamId: number, bytes: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(bytes, 0);
  return encodeFrame(FRAME.window, streamId, payload);
}

/**
 * What an OPEN frame asks for: a target by name, and for FTP/FTPS targets optionally another port of
 * the same host (a passive data connection). Target names cannot hold ':', so `name:port` is unambiguous;
 * an agent that predates data ports refuses it as an unknown target.
 */
export interface OpenRequest {
  target: string;
  dataPort?: number | undefined;
}

export function encodeOpen(request: OpenRequest): string {
  return request.dataPort === undefined ? request.target : `${request.target}:${request.dataPort}`;
}

export function decodeOpen(payload: string): OpenRequest {
  const colon = payload.lastIndexOf(':');
  if (colon < 0) return { target: payload };
  const port = Number(payload.slice(colon + 1));
  return { target: payload.slice(0, colon), dataPort: Number.isInteger(port) ? port : -1 };
}

/** Ports an FTP server may announce for passive data: unprivileged ones only. */
export function isDataPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1024 && port <= 65535;
}
