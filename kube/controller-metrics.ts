/**
 * The kit's gauges on /metrics: how fresh each informer's view is and how full each work queue is. Registered
 * by the operator on the registry platform/metrics.ts serves.
 */
import type { Registry } from 'prom-client';
import { scrapedMetric } from '../platform/metrics.ts';
import type { WorkQueueStats } from './work-queue.ts';

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
