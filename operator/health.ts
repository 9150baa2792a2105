import type { InformerHealth } from '../kube/controller-metrics.ts';
import type { WorkQueueStats } from '../kube/work-queue.ts';

/** What a controller shows the operator's /metrics: its informers and its work queues by name. */
export interface ControllerHealth {
  informers: InformerHealth[];
  queues: Record<string, { stats(): WorkQueueStats }>;
}
