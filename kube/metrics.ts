import { createServer, type Server } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import { KG_ERR_ROUTE_NOT_FOUND } from '../contract/api/errors.ts';
import type { WorkQueueStats } from './work-queue.ts';

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

/** What the gauges read from an informer (Informer has it). */
export interface InformerHealth {
  readonly kind?: string | undefined;
  readonly lastEventAt: number | undefined;
}

/**
 * `kubeglue_informer_last_event_age_seconds{kind}`: seconds since the API server last spoke to each
 * informer (list, event, bookmark, end of a watch). A healthy informer stays below its watch timeout
 * (5-10 min); a growing figure means its list+watch is stuck. Informers that have not listed yet are left
 * out. Give informers by kind (`{ Tool: toolInformer }`) or as a list (their `kind` option names them).
 * Call once per registry.
 */
export function registerInformerMetrics(
  registry: Registry,
  informers: Record<string, InformerHealth> | Iterable<InformerHealth>,
  now: () => number = Date.now,
): void {
  const byKind: [string, InformerHealth][] = isIterable(informers)
    ? [...informers].map((informer) => [informer.kind ?? 'unknown', informer])
    : Object.entries(informers);
  scrapedMetric(
    registry,
    'gauge',
    {
      name: 'kubeglue_informer_last_event_age_seconds',
      help: 'Seconds since the API server last sent a list, event or bookmark to the informer of a kind',
      labelNames: ['kind'],
    },
    function* () {
      for (const [kind, informer] of byKind) {
        if (informer.lastEventAt !== undefined)
          yield [{ kind }, Math.max(0, (now() - informer.lastEventAt) / 1000)];
      }
    },
  );
}

/**
 * `kubeglue_workqueue_keys{queue, state}`: keys per state (queued, processing, delayed, failing) of each
 * named work queue. Call once per registry.
 */
export function registerWorkQueueMetrics(
  registry: Registry,
  queues: Record<string, { stats(): WorkQueueStats }>,
): void {
  scrapedMetric(
    registry,
    'gauge',
    {
      name: 'kubeglue_workqueue_keys',
      help: 'Keys of a controller work queue, by state: queued, processing, delayed (addAfter or retry), failing',
      labelNames: ['queue', 'state'],
    },
    function* () {
      for (const [queue, work] of Object.entries(queues)) {
        for (const [state, count] of Object.entries(work.stats())) yield [{ queue, state }, count];
      }
    },
  );
}

function isIterable<T>(value: object): value is Iterable<T> {
  return Symbol.iterator in value;
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
