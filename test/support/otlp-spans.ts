/**
 * OTLP/HTTP trace exports decoded with the official definitions (the opentelemetry-proto `.proto` files in
 * ./vendor/otlp-proto, v1.11.0, Apache-2.0, loaded by protobufjs): `application/x-protobuf` bodies as an
 * ExportTraceServiceRequest, `application/json` bodies (OTLP/JSON: the proto3 JSON mapping, ids in hex) read
 * into the same message type. Each span comes out flat, with its resource's attributes. Used by the tests'
 * receiver (otlp-receiver.ts) and the documentation's collector (otlp-collector.ts).
 */
import { join } from 'node:path';
import protobuf from 'protobufjs';

/** An export request as it arrived. */
export interface ExportRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

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
  headers: ExportRequest['headers'];
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
function decode(req: ExportRequest): DecodedRequest {
  const type = exportRequestType();
  const contentType = String(req.headers['content-type'] ?? '');
  let message: protobuf.Message;
  if (contentType.startsWith('application/x-protobuf')) {
    message = type.decode(req.body);
  } else if (contentType.startsWith('application/json')) {
    message = type.fromObject(hexIdsToBase64(JSON.parse(req.body.toString('utf8')) as DecodedRequest));
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

export function spansOf(req: ExportRequest): ReceivedSpan[] {
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
