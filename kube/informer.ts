/**
 * kube/: the Kubernetes kit, and only the kit — Resources (cluster and embedded: resources/), the Secret
 * stores (Kubernetes Secrets, or sealed rows of the embedded store: secrets/, with the installation's keys
 * Secret), informers, the work queue and their gauges (controller-metrics.ts), leases, status writes that
 * retry on conflict, kubeconfig and the core object types — plus the opening of an api or operator process
 * on a cluster (cluster-process.ts: settings, the API server connection, the keys), which is made of these
 * parts. It knows nothing of tools or runs. What every role shares that is not Kubernetes (backoff, the
 * secret box, the job supervisor, the metrics server) is platform/'s. This file is the informer
 * (list+watch, resume, relist on 410, backoff, resync).
 *
 * May import: contract, config, store, platform.
 */
import { Backoff, sleep } from '../platform/backoff.ts';
import {
  isResourceError,
  type ResourceClient,
  type WatchEvent,
  type WatchEventType,
  type WireObject,
} from './resources/index.ts';

export interface InformerOptions {
  /** Cache only the objects carrying every one of these labels. */
  labelSelector?: Record<string, string>;
  /** What the cache holds (e.g. Tool): the `kind` label of its metrics and the prefix of its log lines. */
  kind?: string;
  /**
   * Emit 'change' for every cached key this often (default 5 min; 0: never), without listing again: a
   * safety net for reconcilers that depend on time or on things that are not watched.
   */
  resyncMs?: number;
  /** Watch restarts back off exponentially (with jitter) from min to max (defaults 100 ms, 30 s). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Server-side timeout of each watch (default: random between 5 and 10 min, like client-go). */
  watchTimeoutSeconds?: number;
  /** How long an own write (observe) may wait to come back through the watch before a relist (default 30 s). */
  observeTimeoutMs?: number;
  log?: (line: string) => void;
}

type EventListener<T> = (type: WatchEventType, object: T) => void;
type ChangeListener = (key: string) => void;

/** An own write not yet seen on the watch: older events of that key must not undo it. */
interface PendingWrite {
  /** Order of the observe() call; a list started after it supersedes it. */
  seq: number;
  at: number;
  uid: string | undefined;
  /** The version written, or undefined for a deletion. */
  version: string | undefined;
}

/** Versions of a key recently delivered by the watch (or a list), newest last. */
const RECENT_VERSIONS = 4;
/**
 * A watch that stayed open this long was established, even without events: the connection dropped
 * rather than the API server refusing us, so the next restart starts the backoff over (a server that
 * fails answers at once).
 */
const HEALTHY_WATCH_MS = 1_000;

/**
 * An in-memory, always-current copy of one kind: list, then watch from the list's version; resumes from the
 * last version seen (events and bookmarks) when a watch ends or fails, relists on 410 Gone, and backs off
 * with jitter between restarts. Readers get objects by name without I/O.
 *
 *     informer.on('change', (key) => queue.add(key));
 *     await informer.start();
 *
 * resourceVersions are compared for equality only: read-your-writes (observe) holds the written version of
 * a key until the watch delivers that very version (events before it are older), or a list started after
 * the write replaces it.
 */
export class Informer<T extends WireObject> {
  readonly #client: ResourceClient<T>;
  readonly #options: InformerOptions;
  readonly #objects = new Map<string, T>();
  readonly #eventListeners = new Set<EventListener<T>>();
  readonly #changeListeners = new Set<ChangeListener>();
  readonly #pending = new Map<string, PendingWrite>();
  readonly #recent = new Map<string, string[]>();
  readonly #stop = new AbortController();
  readonly #synced: Promise<void>;
  #markSynced: () => void = () => {};
  #hasSynced = false;
  #live = false;
  #lastEventAt: number | undefined;
  #writeSeq = 0;
  #loop: Promise<void> | undefined;
  #watchAbort: AbortController | undefined;
  #relistRequested = false;
  #timers: NodeJS.Timeout[] = [];

  constructor(client: ResourceClient<T>, options: InformerOptions = {}) {
    this.#client = client;
    this.#options = options;
    this.#synced = new Promise((resolve) => {
      this.#markSynced = resolve;
    });
  }

  /** Starts listing and watching; resolves once the first list is in memory (or stop() was called). */
  start(): Promise<void> {
    if (!this.#loop) {
      this.#loop = this.#run();
      const resyncMs = this.#options.resyncMs ?? 5 * 60_000;
      if (resyncMs > 0) this.#timers.push(setInterval(() => this.#resync(), resyncMs).unref());
      const observeTimeoutMs = this.#observeTimeoutMs();
      this.#timers.push(setInterval(() => this.#expirePending(), observeTimeoutMs / 2).unref());
    }
    return this.#synced;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#live = false;
    for (const timer of this.#timers) clearInterval(timer);
    this.#markSynced();
    await this.#loop;
  }

  get kind(): string | undefined {
    return this.#options.kind;
  }

  /** Whether the first list is in memory. */
  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  /**
   * Whether the cache follows the API server now: from a successful list, and whenever a watch is under
   * way; false from a failed list or watch until the next watch starts (it resumes from the last version
   * seen, so it brings what was missed). A reader that must never be served data older than the watch's
   * own delay reads the resources themselves while this is false.
   */
  get live(): boolean {
    return this.#live;
  }

  /** When the API server last spoke to this informer (list, event, bookmark, a watch it ended): ms epoch. */
  get lastEventAt(): number | undefined {
    return this.#lastEventAt;
  }

  get(name: string): T | undefined {
    return this.#objects.get(name);
  }

  values(): T[] {
    return [...this.#objects.values()];
  }

  keys(): string[] {
    return [...this.#objects.keys()];
  }

  /** Every change of the cache, with the object (for DELETED its last state). Returns an unsubscribe. */
  onEvent(listener: EventListener<T>): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  /** The key (name) of every changed object, and of every cached one at each resync. Returns an unsubscribe. */
  on(event: 'change', listener: ChangeListener): () => void {
    if (event !== 'change') throw new Error(`informer: unknown event ${String(event)}`);
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /**
   * Applies this process's own write at once (read-your-writes): pass what create/update/patch returned,
   * or for a delete the object deleted. Events still in flight from before the write cannot undo it.
   */
  observe(type: WatchEventType, object: T): void {
    const name = object.metadata.name;
    const version = object.metadata.resourceVersion;
    const current = this.#objects.get(name);
    if (type === 'DELETED') {
      // Nothing cached, or another incarnation: the watch has moved past this object already.
      if (!current || (object.metadata.uid && current.metadata.uid !== object.metadata.uid)) return;
    } else if (version && this.#recent.get(name)?.includes(version)) {
      // The watch already delivered this version; the cache holds it or something newer.
      return;
    }
    this.#pending.set(name, {
      seq: ++this.#writeSeq,
      at: Date.now(),
      uid: object.metadata.uid,
      version: type === 'DELETED' ? undefined : version,
    });
    this.#apply(type, object);
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    const backoff = new Backoff({
      initialMs: this.#options.minBackoffMs ?? 100,
      maxMs: this.#options.maxBackoffMs ?? 10_000,
    });
    let version: string | undefined;
    while (!signal.aborted) {
      let progressed = false;
      const startedAt = Date.now();
      try {
        if (version === undefined || this.#relistRequested) {
          this.#relistRequested = false;
          version = await this.#relist();
        }
        // An own write expired while listing: that list may predate it.
        if (this.#relistRequested) continue;
        const watchAbort = new AbortController();
        this.#watchAbort = watchAbort;
        this.#live = true;
        const events = this.#client.watch({
          resourceVersion: version,
          signal: AbortSignal.any([signal, watchAbort.signal]),
          bookmarks: true,
          ...(this.#options.labelSelector ? { labelSelector: this.#options.labelSelector } : {}),
          timeoutSeconds: this.#options.watchTimeoutSeconds ?? Math.round(300 * (1 + Math.random())),
        });
        for await (const event of events) {
          this.#lastEventAt = Date.now();
          progressed = true;
          if (event.type === 'BOOKMARK') {
            version = event.object.metadata.resourceVersion;
            continue;
          }
          version = event.object.metadata.resourceVersion || version;
          this.#onWatchEvent(event);
        }
        // The server ended the watch (its timeout): it was alive. Resume from the last version seen.
        if (!signal.aborted && !watchAbort.signal.aborted) this.#lastEventAt = Date.now();
      } catch (error) {
        if (signal.aborted) return;
        this.#live = false;
        if (isResourceError(error, 'Gone')) {
          version = undefined;
          this.#log(`watch history expired; listing again`);
        } else {
          this.#log(`list or watch failed (${(error as Error).message}); retrying`);
        }
      }
      if (signal.aborted) return;
      if (this.#relistRequested) continue;
      if (progressed || Date.now() - startedAt >= HEALTHY_WATCH_MS) backoff.reset();
      await sleep(backoff.next(), signal);
    }
  }

  /** Lists and makes the cache equal to the list, except keys with own writes newer than the list. */
  async #relist(): Promise<string> {
    const listSeq = this.#writeSeq;
    const selector = this.#options.labelSelector;
    const { items, resourceVersion } = await this.#client.list(selector ? { labelSelector: selector } : {});
    this.#lastEventAt = Date.now();
    const listed = new Set<string>();
    for (const item of items) {
      const name = item.metadata.name;
      listed.add(name);
      this.#remember(name, item.metadata.resourceVersion);
      if (this.#newerThanList(name, listSeq)) continue;
      const current = this.#objects.get(name);
      if (!current) this.#apply('ADDED', item);
      else if (current.metadata.resourceVersion !== item.metadata.resourceVersion)
        this.#apply('MODIFIED', item);
    }
    for (const [name, object] of [...this.#objects]) {
      if (listed.has(name) || this.#newerThanList(name, listSeq)) continue;
      this.#recent.delete(name);
      this.#apply('DELETED', object);
    }
    for (const [name, pending] of [...this.#pending]) if (pending.seq <= listSeq) this.#pending.delete(name);
    this.#live = true;
    if (!this.#hasSynced) {
      this.#hasSynced = true;
      this.#markSynced();
    }
    return resourceVersion;
  }

  #newerThanList(name: string, listSeq: number): boolean {
    const pending = this.#pending.get(name);
    return pending !== undefined && pending.seq > listSeq;
  }

  #onWatchEvent(event: WatchEvent<T>): void {
    const { type, object } = event;
    const name = object.metadata.name;
    const pending = this.#pending.get(name);
    if (type === 'DELETED') this.#recent.delete(name);
    else this.#remember(name, object.metadata.resourceVersion);
    if (pending) {
      if (!supersedes(event, pending)) return;
      this.#pending.delete(name);
    }
    this.#apply(type, object);
  }

  /** Changes the cache and tells the listeners, unless nothing changed. */
  #apply(type: WatchEventType, object: T): void {
    const name = object.metadata.name;
    const current = this.#objects.get(name);
    if (type === 'DELETED') {
      if (!current) return;
      this.#objects.delete(name);
    } else {
      if (current && current.metadata.resourceVersion === object.metadata.resourceVersion) return;
      this.#objects.set(name, object);
    }
    for (const listener of this.#eventListeners) this.#call(() => listener(type, object));
    for (const listener of this.#changeListeners) this.#call(() => listener(name));
  }

  #resync(): void {
    if (!this.#hasSynced) return;
    for (const name of this.#objects.keys()) {
      for (const listener of this.#changeListeners) this.#call(() => listener(name));
    }
  }

  /** An own write the watch never brought back (it may have been a no-op): let a fresh list decide. */
  #expirePending(): void {
    const cutoff = Date.now() - this.#observeTimeoutMs();
    for (const pending of this.#pending.values()) {
      if (pending.at > cutoff) continue;
      this.#log('an own write did not come back through the watch; listing again');
      this.#relistRequested = true;
      this.#watchAbort?.abort();
      return;
    }
  }

  #remember(name: string, version: string | undefined): void {
    if (!version) return;
    const versions = this.#recent.get(name) ?? [];
    versions.push(version);
    if (versions.length > RECENT_VERSIONS) versions.shift();
    this.#recent.set(name, versions);
  }

  #observeTimeoutMs(): number {
    return this.#options.observeTimeoutMs ?? 30_000;
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#log(`listener failed: ${(error as Error).message}`);
    }
  }

  #log(line: string): void {
    this.#options.log?.(`informer${this.#options.kind ? ` ${this.#options.kind}` : ''}: ${line}`);
  }
}

/**
 * Whether a watch event is at least as new as an own write of its key. The watch delivers a key's changes
 * in order, so until the written version itself comes, anything else of the same object is older; only a
 * deletion (or the deletion mark of a delete we made) can follow it.
 */
function supersedes<T extends WireObject>(event: WatchEvent<T>, pending: PendingWrite): boolean {
  const { type, object } = event;
  const sameObject = !pending.uid || !object.metadata.uid || pending.uid === object.metadata.uid;
  if (!sameObject) return false;
  if (type === 'DELETED') return true;
  if (pending.version === undefined) return object.metadata.deletionTimestamp !== undefined;
  return object.metadata.resourceVersion === pending.version;
}
