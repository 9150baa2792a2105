import { ResourceError, type ResourceErrorReason } from './interface.ts';

/** metav1.Status, as the API server sends it for failures (and in watch ERROR events). */
export interface Status {
  kind: 'Status';
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { retryAfterSeconds?: number; name?: string; kind?: string };
}

export function isStatus(value: unknown): value is Status {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    (value as { kind?: unknown }).kind === 'Status'
  );
}

/** Status reasons (metav1.StatusReason) onto ours; several of the API server's share one of ours. */
const REASONS: Readonly<Record<string, ResourceErrorReason>> = {
  BadRequest: 'BadRequest',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  NotFound: 'NotFound',
  MethodNotAllowed: 'MethodNotAllowed',
  AlreadyExists: 'AlreadyExists',
  Conflict: 'Conflict',
  Gone: 'Gone',
  Expired: 'Gone',
  UnsupportedMediaType: 'UnsupportedMediaType',
  Invalid: 'Invalid',
  TooManyRequests: 'TooManyRequests',
  InternalError: 'InternalError',
  ServiceUnavailable: 'ServiceUnavailable',
  ServerTimeout: 'ServerTimeout',
  Timeout: 'ServerTimeout',
};

function reasonForCode(code: number): ResourceErrorReason {
  switch (code) {
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 502:
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'ServerTimeout';
    default:
      return code >= 500 ? 'InternalError' : 'BadRequest';
  }
}

/** Seconds from a Retry-After header: a number of seconds or an HTTP date. */
export function parseRetryAfter(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * The ResourceError for a failed answer: from its Status when it sent one (reason and message are the API
 * server's), else from the HTTP code and the start of the body.
 */
export function statusError(
  httpCode: number,
  body: unknown,
  retryAfterHeader?: string | string[],
): ResourceError {
  const retryAfterSeconds =
    parseRetryAfter(retryAfterHeader) ?? (isStatus(body) ? body.details?.retryAfterSeconds : undefined);
  const options = { code: httpCode, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
  if (isStatus(body)) {
    const code = typeof body.code === 'number' && body.code > 0 ? body.code : httpCode;
    const reason = (body.reason && REASONS[body.reason]) || reasonForCode(code);
    const message = typeof body.message === 'string' && body.message ? body.message : `HTTP ${code}`;
    return new ResourceError(reason, message, { ...options, code });
  }
  const text = typeof body === 'string' ? body.trim().slice(0, 300) : '';
  return new ResourceError(
    reasonForCode(httpCode),
    text ? `HTTP ${httpCode}: ${text}` : `HTTP ${httpCode}`,
    options,
  );
}
