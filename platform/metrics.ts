import { createServer, type Server } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import { KG_ERR_ROUTE_NOT_FOUND } from '../contract/api/errors.ts';

/** A metric to register: its full name, its help text and the names of its labels. */
export interface MetricDefinition<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
}

/** Label values and the value of one series. */
export type Sample<L extends string> = [labels: Partial<Record<L, string>>, value: number];

/**
 * A gauge or counter whose series are read at scrape time (a counter from counts kept elsewhere): cleared
 * first, so a series that went away is not reported again, then set to what `read` gives.
 */
export function scrapedMetric<L extends string>(
  registry: Registry,
  kind: 'gauge' | 'counter',
  definition: MetricDefinition<L>,
  read: () => Iterable<Sample<L>>,
): void {
  const configuration = { ...definition, registers: [registry] };
  if (kind === 'counter') {
    new Counter({
      ...configuration,
      collect() {
        this.reset();
        for (const [labels, value] of read()) this.inc(labels, value);
      },
    });
    return;
  }
  new Gauge({
    ...configuration,
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.set(labels, value);
    },
  });
}

export interface MetricsServerOptions {
  host: string;
  /** 0: any free port (address() tells which). */
  port: number;
  /** Also answer /healthz and /readyz with 200 (a process whose only port this is). */
  health?: boolean;
}

/**
 * `GET /metrics` of a registry on a port of its own, without a key: apart from the /v1 port, so that
 * whoever may reach the API (an Ingress) does not reach the metrics. Anything else answers 404.
 */
export function serveMetrics(registry: Registry, options: MetricsServerOptions): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (options.health && (path === '/healthz' || path === '/readyz')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
      return;
    }
    const { code, message, statusCode } = KG_ERR_ROUTE_NOT_FOUND(request.method ?? 'GET', path ?? '');
    response
      .writeHead(statusCode, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { message, code } }));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}
