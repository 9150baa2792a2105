import { createHash, randomFillSync } from 'node:crypto';

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

function isAllZero(hex: string): boolean {
  return /^0+$/.test(hex);
}

/** Derived trace ids of the runs seen last: every request of a run (every page) asks for the same one. */
const derivedTraceIds = new Map<string, string>();
const DERIVED_TRACE_IDS_KEPT = 256;

/** A run's trace id as a W3C trace-id: used as is when it already is one, else derived stably from it. */
export function w3cTraceId(traceId: string): string {
  if (TRACE_ID.test(traceId) && !isAllZero(traceId)) return traceId;
  let derived = derivedTraceIds.get(traceId);
  if (derived === undefined) {
    derived = createHash('sha256').update(traceId).digest('hex').slice(0, 32);
    // sha256 output starting with 32 zero hex digits is not a practical concern, but the spec forbids it.
    if (isAllZero(derived)) derived = `${derived.slice(0, 31)}1`;
    if (derivedTraceIds.size >= DERIVED_TRACE_IDS_KEPT) derivedTraceIds.clear();
    derivedTraceIds.set(traceId, derived);
  }
  return derived;
}

/** Random bytes drawn in bulk: one randomFillSync per 512 span ids instead of one per request. */
const SPAN_POOL = Buffer.alloc(8 * 512);
let spanPoolAt = SPAN_POOL.length;

function randomSpanHex(): string {
  if (spanPoolAt === SPAN_POOL.length) {
    randomFillSync(SPAN_POOL);
    spanPoolAt = 0;
  }
  spanPoolAt += 8;
  return SPAN_POOL.toString('hex', spanPoolAt - 8, spanPoolAt);
}

export function newSpanId(): string {
  let id = randomSpanHex();
  while (isAllZero(id)) id = randomSpanHex();
  return id;
}

/**
 * `traceparent` header value (version 00, sampled). A span id that is not 16 lowercase hex digits
 * (or is all zero) is replaced by a fresh random one.
 */
export function traceparentFor(traceId: string, spanId?: string): string {
  const span = spanId !== undefined && SPAN_ID.test(spanId) && !isAllZero(spanId) ? spanId : newSpanId();
  return `00-${w3cTraceId(traceId)}-${span}-01`;
}

export function isTraceparent(value: string): boolean {
  return TRACEPARENT.test(value);
}

/** The trace and parent span ids of a valid `traceparent` (version 00, ids not all zero); else undefined. */
export function parseTraceparent(value: string): { traceId: string; spanId: string } | undefined {
  if (!TRACEPARENT.test(value)) return undefined;
  const [, traceId = '', spanId = ''] = value.split('-');
  return isAllZero(traceId) || isAllZero(spanId) ? undefined : { traceId, spanId };
}
