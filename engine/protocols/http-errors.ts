/**
 * The errors of an HTTP request step: a non-2xx status (HttpStatusError) or no status at all
 * (HttpRequestError), and what a network error's code says about it.
 */
import { GATEWAY_REFUSED } from './gateway-socket.ts';
import { httpStatusMessage } from './http-status.ts';

const ERROR_BODY_CHARS = 1000;

/** A non-2xx response. `url` is already masked. */
export class HttpStatusError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly method: string;
  readonly url: string;
  readonly bodySnippet: string;
  /** The body as read (at most 16 KiB), redacted: a GraphQL step reads the errors a 4xx answer holds. */
  readonly body: string;

  /** `redact` runs before the body is cut, so a secret across the cut cannot leave a prefix behind. */
  constructor(
    status: number,
    method: string,
    maskedUrl: string,
    headers: Record<string, string>,
    body: string,
    redact: (text: string) => string = (text) => text,
  ) {
    const redacted = redact(body);
    const snippet = redacted.slice(0, ERROR_BODY_CHARS);
    super(httpStatusMessage(status, method, maskedUrl, snippet));
    this.name = 'HttpStatusError';
    this.status = status;
    this.headers = headers;
    this.method = method;
    this.url = maskedUrl;
    this.bodySnippet = snippet;
    this.body = redacted;
  }
}

export type HttpRequestErrorKind = 'aborted' | 'timeout' | 'network' | 'too-large' | 'invalid-request';

/** Anything that kept a request from producing a status: abort, deadline, connection failure, size limit. */
export class HttpRequestError extends Error {
  readonly kind: HttpRequestErrorKind;
  /** The underlying error code (e.g. ECONNREFUSED), when there was one. */
  readonly code: string | undefined;

  constructor(kind: HttpRequestErrorKind, message: string, code?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HttpRequestError';
    this.kind = kind;
    this.code = code;
  }
}

/** Refusals whose message already says why: their code would only add noise to the step error. */
export const SELF_EXPLAINING_CODES = new Set(['ESSRFBLOCKED', GATEWAY_REFUSED]);

export const NON_RETRYABLE_CODES = new Set([
  // Refused by the egress policy: the same request is refused again.
  'ESSRFBLOCKED',
  GATEWAY_REFUSED,
  'ENOTFOUND',
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_REDIRECT_MAX',
  'ERR_INVALID_URL',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause === undefined ? undefined : errorCode(cause);
}
