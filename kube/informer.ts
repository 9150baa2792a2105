import type { KubeObject } from '../crds/meta.ts';
import { isResourceError, type ResourceClient, type WatchEventType } from './resources/index.ts';

export interface InformerOptions {
  /** Full relist this often even when the watch is healthy (a safety net against missed events). */
  resyncMs?: number;
  maxBackoffMs?: number;
  log?: (line: string) => void;
}

type Listener<T> = (type: WatchEventType, object: T) => void;

function newer(a: KubeObject, b: KubeObject): boolean {
  return Number(a.metadata.resourceVersion ?? 0) > Number(b.metadata.resourceVersion ?? 0);
}

/**
 * An in-memory, always-current copy of one kind: list, then watch from the list's version; restarts
 * with backoff on errors and relists on 410 Gone. Readers get objects by name without I/O.
 */
export class Informer<T extends KubeObject> {
  readonly #client: ResourceClient<T>;
  readonly #options: Required<Omit<InformerOptions, 'log'>> & Pick<InformerOptions, 'log'>;
  readonly #objects = new Map<string, T>();
  readonly #listeners = new Set<Listener<T>>();
  readonly #stop = new AbortController();
  #synced: Promise<void>;
  #markSynced: () => void = () => {};
  #loop: Promise<void> | undefined;

  constructor(client: ResourceClient<T>, options: InformerOptions = {}) {
    this.#client = client;
    this.#options = { resyncMs: 5 * 60_000, maxBackoffMs: 30_000, ...options };
    this.#synced = new Promise((resolve) => {
      this.#markSynced = resolve;
    });
  }

  /** Resolves once the first list is in memory. */
  start(): Promise<void> {
    this.#loop ??= this.#run();
    return this.#synced;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  get(name: string): T | undefined {
    return this.#objects.get(name);
  }

  values(): T[] {
    return [...this.#objects.values()];
  }

  onEvent(listener: Listener<T>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Applies this process's own write at once (read-your-writes), unless the cache already has newer. */
  observe(type: WatchEventType, object: T): void {
    const current = this.#objects.get(object.metadata.name);
    if (current && !newer(object, current) && type !== 'DELETED') return;
    this.#apply(type, object);
  }

  #apply(type: WatchEventType, object: T): void {
    if (type === 'DELETED') this.#objects.delete(object.metadata.name);
    else this.#objects.set(object.metadata.name, object);
    for (const listener of this.#listeners) listener(type, object);
  }

  async #relist(): Promise<string> {
    const { items, resourceVersion } = await this.#client.list();
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(item.metadata.name);
      const current = this.#objects.get(item.metadata.name);
      if (!current) this.#apply('ADDED', item);
      else if (newer(item, current)) this.#apply('MODIFIED', item);
    }
    for (const [name, object] of this.#objects) if (!seen.has(name)) this.#apply('DELETED', object);
    this.#markSynced();
    return resourceVersion;
  }

  async #run(): Promise<void> {
    let backoff = 100;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        let version = await this.#relist();
        const resync = AbortSignal.any([signal, AbortSignal.timeout(this.#options.resyncMs)]);
        for await (const event of this.#client.watch({ resourceVersion: version, signal: resync })) {
          version = event.object.metadata.resourceVersion ?? version;
          const current = this.#objects.get(event.object.metadata.name);
          // observe() may already hold a newer version written by this process.
          if (event.type !== 'DELETED' && current && newer(current, event.object)) continue;
          this.#apply(event.type, event.object);
          backoff = 100;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (!(isResourceError(error) && error.code === 410)) {
          this.#options.log?.(
            `informer: watch failed (${(error as Error).message}); retrying in ${backoff} ms`,
          );
          await new Promise((resolve) => setTimeout(resolve, backoff));
          backoff = Math.min(backoff * 2, this.#options.maxBackoffMs);
        }
      }
    }
  }
}
