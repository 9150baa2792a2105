import { WorkQueue, type WorkQueueOptions } from '../kube/work-queue.ts';

/**
 * A controller's work queue of resource names: a failed reconcile is logged as `<kind> <name>: reconcile
 * failed (retry in N ms): <message>` and retried with backoff, from 1 s doubling to 5 min unless the
 * controller's options say otherwise.
 */
export function reconcileQueue(
  kind: string,
  reconcile: (name: string) => Promise<void>,
  log: ((line: string) => void) | undefined,
  options: WorkQueueOptions = {},
): WorkQueue {
  return new WorkQueue(
    reconcile,
    (name, error, retryInMs) =>
      log?.(`${kind} ${name}: reconcile failed (retry in ${retryInMs} ms): ${(error as Error).message}`),
    { baseDelayMs: 1_000, maxDelayMs: 5 * 60_000, ...options },
  );
}
