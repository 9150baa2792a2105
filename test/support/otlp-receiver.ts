/**
 * An OTLP/HTTP trace receiver for tests: what a collector's `otlp` receiver does with `POST /v1/traces`,
 * decoded with the official definitions (otlp-spans.ts).
 *
 *   const otlp = useOtlpReceiver();
 *   ... OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url ...
 *   const spans = await otlp.waitForSpans((all) => all.some((s) => s.name === 'run x'));
 */
import { expect, vi } from 'vitest';
import { type HttpTarget, useHttpTarget } from './http-target.ts';
import { type ReceivedSpan, spansOf } from './otlp-spans.ts';

export type { ReceivedSpan } from './otlp-spans.ts';

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
