import { KG_ERR_RUN_SYSTEM_MISSING } from '../contract/api/errors.ts';
import type { Environment } from '../contract/api/system.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { isResourceError, type ListResult, type ResourceClient } from '../kube/resources/index.ts';
import type { SecretStore } from '../kube/secrets/interface.ts';
import { credentialsSecretName, groupVariants, variantForMode, withoutUndefined } from './model.ts';
import { isManagedOAuth } from './oauth/config.ts';

/** Every System variant at one moment, with each variant's credentials read once, on first use. */
export class SystemSnapshot {
  readonly variants: ReadonlyMap<string, ReadonlyMap<Environment, SystemResource>>;
  readonly #secrets: SecretStore;
  readonly #credentials = new Map<string, Promise<Readonly<Record<string, string>>>>();

  constructor(resources: Iterable<SystemResource>, secrets: SecretStore) {
    this.variants = groupVariants(resources);
    this.#secrets = secrets;
  }

  /**
   * The systems a run in `mode` uses, with their credentials: per id the variant of that environment, or
   * the only variant when the id has no counterpart. Each call gets its own credential objects.
   */
  async resolve(systemIds: readonly string[], mode: Environment): Promise<ResolvedSystem[]> {
    const chosen: SystemResource[] = [];
    const seen = new Set<string>();
    for (const id of systemIds) {
      if (seen.has(id)) continue;
      seen.add(id);
      const variants = this.variants.get(id);
      const resource = variants && variantForMode(variants, mode);
      if (!resource) throw KG_ERR_RUN_SYSTEM_MISSING(id);
      chosen.push(resource);
    }
    const credentials = await Promise.all(chosen.map((resource) => this.credentials(resource)));
    return chosen.map((resource, index) =>
      withoutUndefined({
        id: resource.spec.id,
        url: resource.spec.url,
        authType: resource.spec.authType,
        credentials: { ...credentials[index] },
        extraOrigins: resource.spec.extraOrigins,
        codeAccess: resource.spec.codeAccess === true || undefined,
        allowedNetworks: resource.spec.allowedNetworks,
        tokenManaged: isManagedOAuth(resource.spec.authType, credentials[index] ?? {}) || undefined,
        gateway: resource.spec.gateway,
      }),
    );
  }

  /** Shared and frozen: callers copy before handing them on. */
  credentials(resource: SystemResource): Promise<Readonly<Record<string, string>>> {
    const key = resource.metadata.name;
    let reading = this.#credentials.get(key);
    if (!reading) {
      reading = readCredentials(this.#secrets, resource);
      this.#credentials.set(key, reading);
      const installed = reading;
      installed.catch(() => {
        if (this.#credentials.get(key) === installed) this.#credentials.delete(key);
      });
    }
    return reading;
  }
}

/** A variant's stored credentials; no reference or a missing Secret means none. */
export async function readCredentials(
  secrets: SecretStore,
  resource: SystemResource,
): Promise<Readonly<Record<string, string>>> {
  const name = resource.spec.credentialsSecretRef?.name;
  if (!name) return EMPTY;
  return Object.freeze((await secrets.get(name)) ?? {});
}

/** A watch open this long was established: its end is a dropped connection, not a refusal to back off from. */
const ESTABLISHED_WATCH_MS = 1_000;

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

export interface SystemCacheOptions {
  systems: ResourceClient<SystemResource>;
  secrets: SecretStore;
  log?: (line: string) => void;
  /** Backoff bounds of the watch restarts (ms). */
  retryMinMs?: number;
  retryMaxMs?: number;
}

/**
 * The systems runs resolve against, kept in memory while a watch on the System resources is running. Any
 * watch event (a write by this process, another replica, kubectl or GitOps) and every write of this process
 * drops the snapshot; the next read lists again. Without a running watch nothing is cached, so a reader
 * never sees data older than the watch's own delay.
 */
export class SystemCache {
  readonly #systems: ResourceClient<SystemResource>;
  readonly #secrets: SecretStore;
  readonly #log: (line: string) => void;
  readonly #retryMinMs: number;
  readonly #retryMaxMs: number;
  /** Installed when a load starts, cleared by invalidate(): a load that started earlier is never reinstalled. */
  #current: Promise<SystemSnapshot> | undefined;
  #caching = false;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: SystemCacheOptions) {
    this.#systems = options.systems;
    this.#secrets = options.secrets;
    this.#log = options.log ?? (() => {});
    this.#retryMinMs = options.retryMinMs ?? 200;
    this.#retryMaxMs = options.retryMaxMs ?? 10_000;
  }

  /** Lists the systems, then keeps watching them; caching is on from then until close(). */
  async start(): Promise<void> {
    if (this.#abort) return;
    const abort = new AbortController();
    this.#abort = abort;
    let listed: ListResult<SystemResource>;
    try {
      listed = await this.#systems.list();
    } catch (error) {
      this.#abort = undefined;
      throw error;
    }
    this.#current = Promise.resolve(new SystemSnapshot(listed.items, this.#secrets));
    this.#caching = true;
    this.#loop = this.#watch(listed.resourceVersion, abort.signal);
  }

  async close(): Promise<void> {
    this.#abort?.abort();
    await this.#loop;
    this.#caching = false;
    this.#current = undefined;
  }

  /** Whether reads are currently served from memory. */
  get caching(): boolean {
    return this.#caching;
  }

  snapshot(): Promise<SystemSnapshot> {
    if (!this.#caching) return this.#load();
    if (!this.#current) {
      const loading = this.#load();
      this.#current = loading;
      loading.catch(() => {
        if (this.#current === loading) this.#current = undefined;
      });
    }
    return this.#current;
  }

  invalidate(): void {
    this.#current = undefined;
  }

  async #load(): Promise<SystemSnapshot> {
    const listed = await this.#systems.list();
    return new SystemSnapshot(listed.items, this.#secrets);
  }

  #onChange(resource: SystemResource): void {
    // The Secret may have been rewritten by another process; its cached copy must go with the snapshot.
    const ref = resource.spec.credentialsSecretRef?.name;
    if (ref) this.#secrets.forget?.(ref);
    this.#secrets.forget?.(credentialsSecretName(resource.metadata.name));
    this.invalidate();
  }

  async #watch(initialVersion: string, signal: AbortSignal): Promise<void> {
    let version: string | undefined = initialVersion;
    let delay = this.#retryMinMs;
    while (!signal.aborted) {
      const startedAt = Date.now();
      try {
        if (version === undefined) {
          version = (await this.#systems.list()).resourceVersion;
          this.invalidate();
          this.#caching = true;
          this.#log('system watch restored');
        }
        let events = 0;
        for await (const event of this.#systems.watch({ resourceVersion: version, signal })) {
          events += 1;
          delay = this.#retryMinMs;
          version = event.object.metadata.resourceVersion ?? version;
          this.#onChange(event.object);
        }
        // The server ended the stream (Kubernetes does so periodically): resume where it stopped.
        if (events === 0 && !signal.aborted) await sleep(delay, signal);
      } catch (error) {
        if (signal.aborted) break;
        // A watch that was open a while lost its connection; the API server is not refusing us.
        if (Date.now() - startedAt >= ESTABLISHED_WATCH_MS) delay = this.#retryMinMs;
        // Events may have been missed: stop caching until a fresh list and watch are in place.
        this.#caching = false;
        this.invalidate();
        version = undefined;
        const reason = isResourceError(error, 'Gone') ? 'history compacted' : (error as Error).message;
        this.#log(`system watch interrupted (${reason}); serving systems uncached, retrying in ${delay} ms`);
        await sleep(delay, signal);
        delay = Math.min(delay * 2, this.#retryMaxMs);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
