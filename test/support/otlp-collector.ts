/**
 * A small OTLP/HTTP trace receiver that shows what it received as trees, so docs/operations.md's traces
 * example runs offline without a collector: `npm run example-otlp` listens on http://127.0.0.1:4318
 * (`-- 0` picks a free port), takes `POST /v1/traces` in protobuf or JSON (decoded with the official
 * definitions, otlp-spans.ts) and answers `GET /traces/{traceId}` with that trace's spans as a tree of
 * names. That answer waits (up to 10 s) for the trace's run span: a kubeglue run's span is exported after
 * every span under it. Not a collector to keep: it holds the last 10 000 spans in memory.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ReceivedSpan, spansOf } from './otlp-spans.ts';

const DEFAULT_PORT = 4318;
const KEPT_SPANS = 10_000;
const WAIT_MS = 10_000;
/** The attribute only a run's span carries. */
const RUN_SPAN_ATTRIBUTE = 'kubeglue.run.status';

/** The spans of one trace as an indented tree of names, children in the order they started. */
export function spanTree(spans: ReceivedSpan[]): string {
  const ids = new Set(spans.map((span) => span.spanId));
  const byStart = [...spans].sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
  const childrenOf = (parent: string) => byStart.filter((span) => span.parentSpanId === parent);
  const label = (span: ReceivedSpan) => (span.statusCode === 2 ? `${span.name} (error)` : span.name);
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, prefix: string, last: boolean, root: boolean) => {
    lines.push(root ? label(span) : `${prefix}${last ? '└── ' : '├── '}${label(span)}`);
    const children = childrenOf(span.spanId);
    const inner = root ? '' : `${prefix}${last ? '    ' : '│   '}`;
    for (const [i, child] of children.entries()) walk(child, inner, i === children.length - 1, false);
  };
  // A span whose parent is not here (the caller's span of an incoming traceparent) is a root.
  for (const root of byStart.filter((span) => !ids.has(span.parentSpanId))) walk(root, '', true, true);
  return lines.join('\n');
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface OtlpCollector {
  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  stop(): Promise<void>;
}

export async function startOtlpCollector(
  port = DEFAULT_PORT,
  onSpans: (spans: ReceivedSpan[]) => void = () => {},
): Promise<OtlpCollector> {
  let kept: ReceivedSpan[] = [];
  const waiting = new Set<() => void>();
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://collector');
    if (req.method === 'POST' && url.pathname === '/v1/traces') {
      const contentType = String(req.headers['content-type'] ?? '');
      let spans: ReceivedSpan[];
      try {
        spans = spansOf({ headers: req.headers, body: await bodyOf(req) });
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end((error as Error).message);
        return;
      }
      kept = [...kept, ...spans].slice(-KEPT_SPANS);
      onSpans(spans);
      for (const wake of waiting) wake();
      // An empty ExportTraceServiceResponse: {} in JSON, zero bytes in protobuf.
      if (contentType.startsWith('application/json'))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      return;
    }
    const trace = url.pathname.match(/^\/traces\/([0-9a-f]{32})$/)?.[1];
    if (req.method === 'GET' && trace) {
      const ofTrace = () => kept.filter((span) => span.traceId === trace);
      const complete = () => ofTrace().some((span) => RUN_SPAN_ATTRIBUTE in span.attributes);
      if (!complete()) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            if (!complete()) return;
            clearTimeout(timer);
            waiting.delete(wake);
            resolve();
          };
          const timer = setTimeout(() => {
            waiting.delete(wake);
            resolve();
          }, WAIT_MS);
          waiting.add(wake);
        });
      }
      const spans = ofTrace();
      if (spans.length === 0)
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`no spans of trace ${trace}\n`);
      else res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(`${spanTree(spans)}\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('POST /v1/traces or GET /traces/{traceId}\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.main) {
  const { url } = await startOtlpCollector(Number(process.argv[2] ?? DEFAULT_PORT), (spans) => {
    for (const span of spans) process.stdout.write(`trace ${span.traceId}  ${span.name}\n`);
  });
  console.log(
    `OTLP/HTTP receiver at ${url}/v1/traces; a trace as a tree: GET ${url}/traces/{traceId} (Ctrl-C stops it)`,
  );
}
