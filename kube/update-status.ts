import { backoffDelay, sleep } from '../platform/backoff.ts';
import {
  isResourceError,
  type ResourceClient,
  type StatusPatch,
  type WireObject,
} from './resources/index.ts';

export interface ConflictRetryOptions {
  /** Tries in all (default 5). */
  attempts?: number;
  signal?: AbortSignal;
}

/**
 * Runs fn until it does not fail with 409 Conflict (client-go's RetryOnConflict): fn must read afresh each
 * time. Waits a few jittered milliseconds between tries, so two writers racing on one object part ways.
 */
export async function retryOnConflict<R>(
  fn: () => Promise<R>,
  options: ConflictRetryOptions = {},
): Promise<R> {
  const attempts = Math.max(1, options.attempts ?? 5);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!isResourceError(error, 'Conflict') || attempt >= attempts || options.signal?.aborted) throw error;
      await sleep(backoffDelay(attempt - 1, { initialMs: 10, maxMs: 1_000, jitter: 0.5 }), options.signal);
    }
  }
}

/**
 * Writes the status compute() derives from the freshest object (read from the server, not a cache) through
 * the status subresource, on the condition that the object is still at the version read; on 409 Conflict
 * it reads and computes again (bounded). compute returns undefined when nothing needs writing.
 *
 * Returns the object as written (or as read, when nothing was written), or undefined when it does not exist.
 */
export async function updateStatus<T extends WireObject>(
  client: Pick<ResourceClient<T>, 'get' | 'patchStatus'>,
  name: string,
  compute: (current: T) => StatusPatch<T> | undefined,
  options: ConflictRetryOptions = {},
): Promise<T | undefined> {
  return retryOnConflict(async () => {
    const current = await client.get(name);
    if (!current) return undefined;
    const patch = compute(current);
    if (patch === undefined) return current;
    try {
      return await client.patchStatus(name, patch, { resourceVersion: current.metadata.resourceVersion });
    } catch (error) {
      if (isResourceError(error, 'NotFound')) return undefined;
      throw error;
    }
  }, options);
}
