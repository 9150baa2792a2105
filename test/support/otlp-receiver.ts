/**
 * An OTLP/HTTP trace receiver for tests: what a collector's `otlp` receiver does with `POST /v1/traces`,
 * decoded with the official definitions (the opentelemetry-proto `.proto` files in ./vendor/otlp-proto, v1.11.0,
 * Apache-2.0, loaded by protobufjs). `application/x-protobuf` bodies are decoded as an
 * ExportTraceServiceRequest; `application/json` bodies (OTLP/JSON: the proto3 JSON mapping, ids in hex)
 * are read into the same message type. Each span comes out flat, with its resource's attributes.
 *
 *   const otlp = useOtlpReceiver();
 *   ... OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url ...
 *   const spans = await otlp.waitForSpans((all) => all.some((s) => s.name === 'run x'));
 */
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { expect, vi } from 'vitest';
import { type HttpTarget, type TargetRequest, useHttpTarget } from './http-target.ts';

const PROTO_ROOT = join(import.meta.dirname, 'vendor', 'otlp-proto');
const REQUEST_TYPE = 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest';

let requestType: protobuf.Type | undefined;

/** The ExportTraceServiceRequest message type, from the official .proto files. */
function exportRequestType(): protobuf.Type {
  if (!requestType) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
    root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
    requestType = root.lookupType(REQUEST_TYPE);
  }
  return requestType;
}

export type AttributeValue = string | number | boolean;

/** One received span, flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** Epoch nanoseconds. */
  startNs: bigint;
  endNs: bigint;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  attributes: Record<string, AttributeValue>;
  resource: Record<string, AttributeValue>;
  /** The export request's content type and headers. */
  contentType: string;
  headers: TargetRequest['headers'];
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface DecodedSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: KeyValue[];
  status?: { code?: number };
}
interface DecodedRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ spans?: DecodedSpan[] }>;
  }>;
}

function attributeValue(value: AnyValue | undefined): AttributeValue {
  if (value?.stringValue !== undefined) return value.stringValue;
  if (value?.boolValue !== undefined) return value.boolValue;
  if (value?.intValue !== undefined) return Number(value.intValue);
  if (value?.doubleValue !== undefined) return value.doubleValue;
  return '';
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, attributeValue(kv.value)]));
}

/** OTLP/JSON writes span ids in hex where the proto3 JSON mapping of bytes is base64. */
function hexIdsToBase64(json: DecodedRequest): DecodedRequest {
  const base64 = (hex: string | undefined) => (hex ? Buffer.from(hex, 'hex').toString('base64') : hex);
  for (const resourceSpans of json.resourceSpans ?? []) {
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        span.traceId = base64(span.traceId);
        span.spanId = base64(span.spanId);
        span.parentSpanId = base64(span.parentSpanId);
      }
    }
  }
  return json;
}

/** The request decoded into an ExportTraceServiceRequest, from protobuf or from OTLP/JSON. */
function decode(req: TargetRequest): DecodedRequest {
  const type = exportRequestType();
  const contentType = String(req.headers['content-type'] ?? '');
  let message: protobuf.Message;
  if (contentType.startsWith('application/x-protobuf')) {
    message = type.decode(req.body);
  } else if (contentType.startsWith('application/json')) {
    message = type.fromObject(hexIdsToBase64(JSON.parse(req.text) as DecodedRequest));
    const problem = type.verify(message);
    if (problem) throw new Error(`not an ExportTraceServiceRequest: ${problem}`);
  } else {
    throw new Error(`unexpected content type ${contentType}`);
  }
  return type.toObject(message, { longs: String, bytes: String, enums: Number }) as DecodedRequest;
}

/** A protobuf bytes field as toObject gives it (base64), as hex. */
function hexId(value: string | undefined): string {
  return value ? Buffer.from(value, 'base64').toString('hex') : '';
}

function spansOf(req: TargetRequest): ReceivedSpan[] {
  const decoded = decode(req);
  return (decoded.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: hexId(span.traceId),
        spanId: hexId(span.spanId),
        parentSpanId: hexId(span.parentSpanId),
        name: span.name ?? '',
        startNs: BigInt(span.startTimeUnixNano ?? 0),
        endNs: BigInt(span.endTimeUnixNano ?? 0),
        statusCode: Number(span.status?.code ?? 0),
        attributes: attributesOf(span.attributes),
        resource,
        contentType: String(req.headers['content-type']),
        headers: req.headers,
      })),
    );
  });
}

export interface OtlpReceiver {
  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (spans are posted to its /v1/traces). */
  readonly url: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** Polls until `done(spans)` holds (15 s at most), then answers every span received. */
  waitForSpans(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  /** Export requests that could not be decoded. */
  errors(): string[];
  target: HttpTarget;
}

/** A receiver on a real HTTP server for the tests of the enclosing block (a fresh one each test file). */
export function useOtlpReceiver(): OtlpReceiver {
  const target = useHttpTarget();
  const received: ReceivedSpan[] = [];
  const errors: string[] = [];
  let routed = false;
  const route = () => {
    if (routed) return;
    routed = true;
    target.route('POST', '/v1/traces', (req) => {
      try {
        received.push(...spansOf(req));
      } catch (error) {
        errors.push((error as Error).message);
        return { status: 400, body: { error: (error as Error).message } };
      }
      const json = String(req.headers['content-type']).startsWith('application/json');
      // An empty ExportTraceServiceResponse: zero bytes in protobuf, {} in JSON.
      return json
        ? { body: {} }
        : { headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.alloc(0) };
    });
  };
  return {
    get url() {
      route();
      return target.url;
    },
    spans: () => [...received],
    errors: () => [...errors],
    async waitForSpans(done, timeoutMs = 15_000) {
      route();
      await vi.waitFor(() => expect(done(received)).toBe(true), { timeout: timeoutMs, interval: 50 });
      return [...received];
    },
    target,
  };
}
