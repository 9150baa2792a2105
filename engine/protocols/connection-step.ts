/**
 * What the database-like connection protocols' steps (Postgres, MySQL, Redis) are called with by
 * index.ts, and the error they fail with: a kind the engine and tests match on, and the server's or the
 * socket's code. Each protocol names its own kinds and says what its URL, body and credentials hold.
 */
import type { EgressGuard } from './egress-policy.ts';
import type { GatewayDial } from './gateway-socket.ts';

export interface ConnectionStepRequest {
  /** The step's URL, in the protocol's scheme. */
  url: string;
  /** The step's body, as the protocol reads it. */
  body: unknown;
  /** The step system's credentials (the URL's userinfo comes first). */
  credentials: Record<string, string>;
  /** false: the step may not change data (a read-only transaction, or commands flagged read-only). */
  modify: boolean;
  signal: AbortSignal;
  /** Epoch ms: the step may not run past it. */
  deadline: number;
  /** Judges every connection; default: only metadata addresses refused. */
  egress?: EgressGuard | undefined;
  /** The system is behind a gateway: connections go through its tunnel instead (no egress guard). */
  gateway?: GatewayDial | undefined;
  /** The step data bound: a protocol that streams its answer fails past it (MySQL rows, Redis replies). */
  maxDataBytes?: number | undefined;
}

/** A connection step's failure: its kind, and the server's error code or the socket's (ECONNREFUSED…). */
export class ConnectionStepError<Kind extends string> extends Error {
  readonly kind: Kind;
  readonly code: string | undefined;

  constructor(kind: Kind, message: string, code?: string) {
    super(message);
    this.kind = kind;
    this.code = code;
  }
}
