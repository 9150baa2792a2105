import { isKubeApiError, type KubeApi } from './api.ts';
import type { Pod } from './types.ts';

export type PodEventHandler = (type: 'UPSERT' | 'DELETED', pod: Pod) => void;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Every Pod of the cluster, kept current by list + watch: the watch resumes from the last version it
 * saw, a 410 Gone relists (reporting Pods that vanished meanwhile as deleted), and any other failure
 * reconnects with backoff. Keyed by UID, so a Pod re-created under the same name is a new Pod.
 */
export class PodSource {
  readonly #api: KubeApi;
  readonly #onEvent: PodEventHandler;
  readonly #log: (line: string) => void;
  readonly #pods = new Map<string, Pod>();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #markSynced: () => void = () => {};
  readonly #synced = new Promise<void>((resolve) => {
    this.#markSynced = resolve;
  });

  constructor(api: KubeApi, onEvent: PodEventHandler, log: (line: string) => void) {
    this.#api = api;
    this.#onEvent = onEvent;
    this.#log = log;
  }

  /** Resolves once the first list has been delivered. */
  start(): Promise<void> {
    this.#loop ??= this.#run();
    return this.#synced;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  values(): Pod[] {
    return [...this.#pods.values()];
  }

  #deliver(type: 'UPSERT' | 'DELETED', pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    if (type === 'DELETED') this.#pods.delete(uid);
    else this.#pods.set(uid, pod);
    try {
      this.#onEvent(type, pod);
    } catch (error) {
      this.#log(`pod handler failed: ${(error as Error).stack}`);
    }
  }

  async #relist(): Promise<string> {
    const list = await this.#api.get<{ metadata: { resourceVersion: string }; items: Pod[] }>(
      '/api/v1/pods',
      {
        signal: this.#stop.signal,
      },
    );
    const seen = new Set<string>();
    for (const pod of list.items) {
      seen.add(pod.metadata.uid ?? '');
      const known = this.#pods.get(pod.metadata.uid ?? '');
      if (known?.metadata.resourceVersion !== pod.metadata.resourceVersion) this.#deliver('UPSERT', pod);
    }
    for (const [uid, pod] of this.#pods) if (!seen.has(uid)) this.#deliver('DELETED', pod);
    this.#markSynced();
    return list.metadata.resourceVersion;
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    let backoff = 200;
    let version: string | undefined;
    while (!signal.aborted) {
      try {
        version ??= await this.#relist();
        for await (const event of this.#api.watch<Pod>('/api/v1/pods', version, signal)) {
          version = event.object.metadata.resourceVersion ?? version;
          if (event.type !== 'BOOKMARK')
            this.#deliver(event.type === 'DELETED' ? 'DELETED' : 'UPSERT', event.object);
          backoff = 200;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (isKubeApiError(error, 410)) {
          version = undefined;
          continue;
        }
        this.#log(`pod watch failed (${(error as Error).message}); retrying in ${backoff} ms`);
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  }
}
