/**
 * Prometheus metrics of the API. The api role serves them on its metrics port (platform/metrics.ts
 * serveMetrics), never on the /v1 port an Ingress exposes; the embedded deployment, one process on one
 * port, serves `GET /metrics` there (`route`). Label values always come from bounded sets: the matched route
 * template (never the raw URL, which holds ids and tokens), known HTTP methods, run sources, modes
 * and statuses. A registry of its own keeps several servers in one process (tests) apart.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { scrapedMetric } from '../platform/metrics.ts';
import type { BudgetMetrics } from '../systems/budgets.ts';

const PREFIX = 'kubeglue_';

export interface MetricsOptions {
  /** In-flight runs per worker process (WorkerPool.load()). */
  poolLoad: () => number[];
  /** Outbox rows waiting for delivery; the gauge is left out when not given. */
  outboxBacklog?: () => Promise<number>;
  /** Serve `GET /metrics` on this server too (the embedded deployment). */
  route?: boolean;
}

export interface Metrics extends BudgetMetrics {
  readonly registry: Registry;
  runStarted(source: string, mode: string): void;
  runFinished(status: string, source: string, durationMs: number): void;
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

/** Up to the 5-minute default run limit and beyond (timeouts may be raised). */
const RUN_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

interface HttpSeries {
  requests: { inc(): void };
  duration: { observe(value: number): void };
}

/** Adds request metrics to every route of `app` (and the route, if asked); call before `app.ready()`. */
export function installMetrics(app: FastifyInstance, opts: MetricsOptions): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: PREFIX });

  const httpRequests = new Counter({
    name: `${PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by route template and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from receiving a request to sending its response, by route template',
    labelNames: ['method', 'route'],
    registers: [registry],
  });
  const runsStarted = new Counter({
    name: `${PREFIX}runs_started_total`,
    help: 'Runs started, by request source and execution mode',
    labelNames: ['source', 'mode'],
    registers: [registry],
  });
  const runsFinished = new Counter({
    name: `${PREFIX}runs_finished_total`,
    help: 'Runs that reached a terminal status, by status and request source',
    labelNames: ['status', 'source'],
    registers: [registry],
  });
  const runDuration = new Histogram({
    name: `${PREFIX}run_duration_seconds`,
    help: 'Duration of finished runs, by terminal status',
    labelNames: ['status'],
    buckets: RUN_DURATION_BUCKETS,
    registers: [registry],
  });
  // Per system with a rateLimit (a configured, bounded set): what its budget let through and held back.
  const systemRequests = new Counter({
    name: `${PREFIX}system_requests_total`,
    help: 'Requests to systems with a rate budget, by system (each attempt takes from the budget)',
    labelNames: ['system'],
    registers: [registry],
  });
  const budgetWaits = new Counter({
    name: `${PREFIX}system_budget_waits_total`,
    help: "Requests that waited for their system's rate budget, by system",
    labelNames: ['system'],
    registers: [registry],
  });
  const budgetWaitSeconds = new Counter({
    name: `${PREFIX}system_budget_wait_seconds_total`,
    help: "Time requests waited for their system's rate budget, by system",
    labelNames: ['system'],
    registers: [registry],
  });
  const systemThrottled = new Counter({
    name: `${PREFIX}system_throttled_total`,
    help: 'Answers 429 or 503 with Retry-After from systems with a rate budget (each pauses the budget), by system',
    labelNames: ['system'],
    registers: [registry],
  });
  // Read at scrape time: a worker that went away does not keep reporting its last value.
  scrapedMetric(
    registry,
    'gauge',
    {
      name: `${PREFIX}worker_inflight_runs`,
      help: 'Runs executing in each worker process',
      labelNames: ['worker'],
    },
    () => opts.poolLoad().map((inFlight, worker) => [{ worker: String(worker) }, inFlight]),
  );
  const { outboxBacklog } = opts;
  if (outboxBacklog) {
    let lastBacklog = 0;
    new Gauge({
      name: `${PREFIX}outbox_backlog`,
      help: 'Outbox rows (notifications, chained runs) waiting for delivery',
      registers: [registry],
      async collect() {
        // A failed count keeps the last value rather than failing the whole scrape.
        lastBacklog = await outboxBacklog().catch(() => lastBacklog);
        this.set(lastBacklog);
      },
    });
  }

  // Children are cached per label combination: the hook then costs two map lookups and two updates.
  const series = new Map<string, HttpSeries>();
  app.addHook('onResponse', (request, reply, done) => {
    const method = METHODS.has(request.method) ? request.method : 'other';
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const status = String(reply.statusCode);
    const key = `${method} ${status} ${route}`;
    let entry = series.get(key);
    if (entry === undefined) {
      entry = {
        requests: httpRequests.labels(method, route, status),
        duration: httpDuration.labels(method, route),
      };
      series.set(key, entry);
    }
    entry.requests.inc();
    entry.duration.observe(reply.elapsedTime / 1000);
    done();
  });

  if (opts.route) {
    app.get('/metrics', async (_request, reply) => {
      const body = await registry.metrics();
      return reply.header('Content-Type', registry.contentType).send(body);
    });
  }

  return {
    registry,
    runStarted(source, mode) {
      runsStarted.inc({ source, mode });
    },
    budgetTaken(system, waitMs) {
      systemRequests.inc({ system });
      if (waitMs <= 0) return;
      budgetWaits.inc({ system });
      budgetWaitSeconds.inc({ system }, waitMs / 1000);
    },
    budgetThrottled(system) {
      systemThrottled.inc({ system });
    },
    runFinished(status, source, durationMs) {
      runsFinished.inc({ status, source });
      runDuration.observe({ status }, Math.max(0, durationMs) / 1000);
    },
  };
}
