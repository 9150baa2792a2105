/** The trace export's settings (config/traces.ts) and where spans go (platform/traces.ts). */
import { describe, expect, it } from 'vitest';
import { defaultSettings, loadSettings } from '../../../config/config.ts';
import { openTraceExport, tracesUrl } from '../../../platform/traces.ts';

describe('the trace export', () => {
  it('is off without an OTLP endpoint', async () => {
    expect(await openTraceExport(defaultSettings('api').traces)).toBeUndefined();
    expect(await openTraceExport(defaultSettings('embedded').traces)).toBeUndefined();
  });

  it("posts to the base endpoint's /v1/traces, or to the traces endpoint as given", () => {
    const base = loadSettings('api', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).traces;
    expect(tracesUrl(base)).toBe('http://collector:4318/v1/traces');
    const both = loadSettings('api', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example.com/custom/path',
    }).traces;
    expect(tracesUrl(both)).toBe('https://otlp.example.com/custom/path');
  });

  it('takes the headers as name=value pairs with percent-encoded values', () => {
    const { traces } = loadSettings('api', {
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc%3D, x-tenant=team-a',
    });
    expect(traces.headers).toEqual({ authorization: 'Bearer abc=', 'x-tenant': 'team-a' });
    expect(traces.protocol).toBe('http/protobuf');
  });

  it('refuses malformed headers naming the variable, never its value', () => {
    const start = () => loadSettings('api', { OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-9f8e' });
    expect(start).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(start).not.toThrow(/secret-token-9f8e/);
  });

  it('honours only the OTLP/HTTP protocols', () => {
    expect(loadSettings('api', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).traces.protocol).toBe(
      'http/json',
    );
    expect(() => loadSettings('api', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
  });
});
