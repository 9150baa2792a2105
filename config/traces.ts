/**
 * Traces (docs/operations.md "Traces (OpenTelemetry)"): the OpenTelemetry SDK's standard variables, read
 * by the processes that export runs' spans (runs/execution/report.ts). Tracing is on exactly when an
 * endpoint is set; unset, no SDK is loaded.
 */
import { z } from 'zod';
import { positiveInt, text } from './schemas.ts';
import { section, setting } from './setting.ts';

/** The processes whose runs' reports are consumed: the API (and its internal port) and the embedded one. */
const EXPORTERS = ['embedded', 'api'] as const;

const endpoint = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .optional()
  .meta({ kind: 'URL' });

/** `key1=value1,key2=value2`, values percent-decoded (the OpenTelemetry specification's format). */
const headers = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const out: Record<string, string> = {};
    for (const pair of (value ?? '').split(',')) {
      if (pair.trim() === '') continue;
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      let decoded: string | undefined;
      try {
        decoded = at > 0 ? decodeURIComponent(pair.slice(at + 1).trim()) : undefined;
      } catch {
        decoded = undefined;
      }
      if (name === '' || decoded === undefined) {
        ctx.addIssue({ code: 'custom', message: 'must be name=value pairs separated by commas' });
        return z.NEVER;
      }
      out[name] = decoded;
    }
    return out;
  })
  .meta({ kind: 'name=value,…' });

export const TRACES = section(
  'Traces (OpenTelemetry)',
  'With an OTLP endpoint set, every run exports a trace through the OpenTelemetry SDK: a span for the run, ' +
    'one per step, loop item and page, linked to an incoming `traceparent` and named as parent in the ' +
    "outbound requests' ([operations.md](operations.md#traces-opentelemetry)). Unset, tracing is off and " +
    "costs nothing. The names are the SDK's own; kubeglue reads them here and hands them to it.",
  {
    traces: {
      endpoint: setting(
        'OTEL_EXPORTER_OTLP_ENDPOINT',
        endpoint,
        undefined,
        EXPORTERS,
        'OTLP/HTTP base URL of a collector: spans go to its `/v1/traces` (unset, and no traces endpoint: tracing is off)',
      ),
      tracesEndpoint: setting(
        'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
        endpoint,
        undefined,
        EXPORTERS,
        'full URL spans are posted to; wins over the base URL',
      ),
      headers: setting(
        'OTEL_EXPORTER_OTLP_HEADERS',
        headers,
        undefined,
        EXPORTERS,
        'headers sent with every export (`authorization=Bearer%20…,x-tenant=a`; values percent-encoded); a secret is never logged',
      ),
      protocol: setting(
        'OTEL_EXPORTER_OTLP_PROTOCOL',
        z.enum(['http/protobuf', 'http/json'], { error: "must be 'http/protobuf' or 'http/json'" }),
        'http/protobuf',
        EXPORTERS,
        'how spans are encoded (gRPC is not supported)',
      ),
      timeoutMs: setting(
        'OTEL_EXPORTER_OTLP_TIMEOUT',
        positiveInt,
        '10000',
        EXPORTERS,
        'milliseconds one export request may take',
      ),
      serviceName: setting('OTEL_SERVICE_NAME', text, 'kubeglue', EXPORTERS, "the spans' `service.name`"),
      batch: {
        scheduleDelayMs: setting(
          'OTEL_BSP_SCHEDULE_DELAY',
          positiveInt,
          '5000',
          EXPORTERS,
          'milliseconds between two exports of queued spans',
        ),
        exportTimeoutMs: setting(
          'OTEL_BSP_EXPORT_TIMEOUT',
          positiveInt,
          '30000',
          EXPORTERS,
          'milliseconds an export of a batch may take before it is dropped',
        ),
        maxQueueSize: setting(
          'OTEL_BSP_MAX_QUEUE_SIZE',
          positiveInt,
          '2048',
          EXPORTERS,
          'spans queued at most; past it new spans are dropped',
        ),
        maxExportBatchSize: setting(
          'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
          positiveInt,
          '512',
          EXPORTERS,
          'spans in one export request at most (no more than the queue size)',
        ),
      },
    },
  },
);
