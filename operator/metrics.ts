/**
 * What the operator shows on /metrics about async runs, for the chart's alerts and dashboard: the async
 * queue (ToolRuns waiting for a slot), how ToolRuns end and why, and runner Pod starts. Counted by the
 * replica that leads; the embedded deployment counts nothing.
 */

import { Counter, Histogram, type Registry } from 'prom-client';
import { SETTINGS } from '../config/config.ts';
import { scrapedMetric } from '../platform/metrics.ts';

export interface OperatorMetrics {
  /** A ToolRun this process saw reach a terminal status; reason is its status.reason (RunReason). */
  toolRunFinished(status: string, reason: string | undefined): void;
  /** A runner Pod this process created. */
  podCreated(): void;
  /** A runner Pod's container started, `seconds` after the Pod was created. */
  podStarted(seconds: number): void;
}

/** Container start: from image cached and a free node (seconds) to a slow pull or a scale-up (minutes). */
const POD_START_BUCKETS = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600];

export function registerOperatorMetrics(registry: Registry): OperatorMetrics {
  const finished = new Counter({
    name: 'kubeglue_toolruns_finished_total',
    help: 'ToolRuns (async runs) that reached a terminal status, by status and reason (OOMKilled, PodPendingTimeout, ...)',
    labelNames: ['status', 'reason'],
    registers: [registry],
  });
  const created = new Counter({
    name: 'kubeglue_runner_pods_created_total',
    help: 'Runner Pods created',
    registers: [registry],
  });
  const started = new Histogram({
    name: 'kubeglue_runner_pod_start_seconds',
    help: 'Time from creating a runner Pod to its container running (scheduling, image pull, start)',
    buckets: POD_START_BUCKETS,
    registers: [registry],
  });
  return {
    toolRunFinished: (status, reason) => finished.inc({ status, reason: reason ?? 'None' }),
    podCreated: () => created.inc(),
    podStarted: (seconds) => started.observe(Math.max(0, seconds)),
  };
}

/** ToolRuns by admission state: waiting for a slot (the async queue), holding one (active), or done. */
export type ToolRunStates = Record<'waiting' | 'active' | 'done', number>;

/** `kubeglue_toolruns{state}`, read at scrape time from the ToolRun controller's cache. */
export function registerToolRunStates(registry: Registry, read: () => ToolRunStates): void {
  scrapedMetric(
    registry,
    'gauge',
    {
      name: 'kubeglue_toolruns',
      help: `ToolRuns by admission state: waiting (queued for a slot: ${SETTINGS.tree.maxAsyncRuns.name}), active, done`,
      labelNames: ['state'],
    },
    () => Object.entries(read()).map(([state, count]) => [{ state }, count]),
  );
}
