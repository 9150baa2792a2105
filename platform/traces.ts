/**
 * The export of spans through the official OpenTelemetry SDK (docs/operations.md "Traces (OpenTelemetry)"):
 * a tracer provider with a batch span processor and the OTLP/HTTP exporter of the configured protocol
 * (`http/protobuf` or `http/json`). Spans are handed in finished, with their ids and times chosen by
 * whoever observed them (runs/execution/report.ts turns a run's engine events into them): the provider's
 * id generator returns the ids given, so the exported span is the one the outbound `traceparent` named.
 * The SDK is imported only when an endpoint is set: untraced, no module of it is loaded. Nothing is
 * registered globally, and no context manager is installed: spans are built, never made "active".
 */
import type { TraceSettings } from '../config/config.ts';

/** A finished span: ids as W3C hex, times in epoch ms (fractional). */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  /** Absent: a root span. */
  parentSpanId?: string | undefined;
  /** The parent is another process's span (an incoming `traceparent`), not one this export builds. */
  remoteParent?: boolean | undefined;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  failed: boolean;
}

/** Where finished spans go: batched and exported in the background. */
export interface TraceExport {
  span(record: SpanRecord): void;
  /** Exports what is queued now (a failure is logged, not thrown). */
  flush(): Promise<void>;
  /** Exports what is queued, then stops (a failure is logged, not thrown). */
  shutdown(): Promise<void>;
}

/** Where spans are posted: the traces endpoint as given, else the base endpoint's `/v1/traces`. */
export function tracesUrl(settings: Pick<TraceSettings, 'endpoint' | 'tracesEndpoint'>): string | undefined {
  if (settings.tracesEndpoint !== undefined) return settings.tracesEndpoint;
  if (settings.endpoint === undefined) return undefined;
  return `${settings.endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/** How often a failing collector is reported in the process's log at most. */
const FAILURE_LOG_EVERY_MS = 60_000;

/**
 * The export the settings ask for, or undefined when tracing is off (no endpoint): then nothing is loaded.
 * A failed export is logged (the first, then at most once a minute, with how many failed since); its
 * spans are dropped, and the runs never wait for it.
 */
export async function openTraceExport(
  settings: TraceSettings,
  log: (line: string) => void = () => {},
): Promise<TraceExport | undefined> {
  const url = tracesUrl(settings);
  if (url === undefined) return undefined;
  const [api, sdk, resources, semconv, exporterModule] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
    settings.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const exporter = new exporterModule.OTLPTraceExporter({
    url,
    headers: settings.headers,
    timeoutMillis: settings.timeoutMs,
  });
  let failures = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  const send = exporter.export.bind(exporter);
  exporter.export = (spans, done) =>
    send(spans, (result) => {
      if (result.code !== 0) {
        failures += 1;
        if (Date.now() - loggedAt >= FAILURE_LOG_EVERY_MS) {
          loggedAt = Date.now();
          log(
            `traces: export of ${spans.length} span(s) to the OTLP endpoint failed (${failures} failed export(s) since the last report): ${result.error?.message ?? 'no answer'}`,
          );
          failures = 0;
        }
      }
      done(result);
    });
  const { batch } = settings;
  // The ids of the span being started: the SDK asks its generator for them in startSpan.
  let next = { traceId: '', spanId: '' };
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: settings.serviceName }),
    sampler: new sdk.AlwaysOnSampler(),
    idGenerator: { generateTraceId: () => next.traceId, generateSpanId: () => next.spanId },
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: batch.scheduleDelayMs,
        exportTimeoutMillis: batch.exportTimeoutMs,
        maxQueueSize: batch.maxQueueSize,
        maxExportBatchSize: Math.min(batch.maxExportBatchSize, batch.maxQueueSize),
      }),
    ],
  });
  const tracer = provider.getTracer('kubeglue');
  return {
    span(record) {
      next = { traceId: record.traceId, spanId: record.spanId };
      const parent =
        record.parentSpanId === undefined
          ? api.ROOT_CONTEXT
          : api.trace.setSpanContext(api.ROOT_CONTEXT, {
              traceId: record.traceId,
              spanId: record.parentSpanId,
              traceFlags: api.TraceFlags.SAMPLED,
              isRemote: record.remoteParent === true,
            });
      const span = tracer.startSpan(
        record.name,
        { startTime: record.startMs, attributes: record.attributes, kind: api.SpanKind.INTERNAL },
        parent,
      );
      if (record.failed) span.setStatus({ code: api.SpanStatusCode.ERROR });
      span.end(record.endMs);
    },
    // A failed export was logged above: flushing never throws for it.
    flush: () => provider.forceFlush().catch(() => {}),
    shutdown: () => provider.shutdown().catch(() => {}),
  };
}
