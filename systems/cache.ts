import { KG_ERR_RUN_SYSTEM_MISSING, KG_ERR_RUN_SYSTEM_NOT_READY } from '../contract/api/errors.ts';
import { type Environment, isLimited } from '../contract/api/system.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { Informer } from '../kube/informer.ts';
import type { ResourceClient } from '../kube/resources/index.ts';
import type { SecretStore } from '../kube/secrets/interface.ts';
import { credentialsSecretName, groupVariants, variantForMode, withoutUndefined } from './model.ts';
import { isManagedOAuth } from './oauth/settings.ts';
import { systemUnreadiness } from './readiness.ts';

export interface ResolveOptions {
  /**
   * 'refuse' (the default, for runs): a chosen System that is Ready=False is KG_ERR_RUN_SYSTEM_NOT_READY
   * before anything is sent. 'allow': only the credentials are wanted (to keep them out of stored data).
   */
  unready?: 'refuse' | 'allow';
}

/** What needs a run's systems with their credentials (SystemService is one). */
export interface SystemResolver {
  resolveForRun(systemIds: string[], mode: Environment, options?: ResolveOptions): Promise<ResolvedSystem[]>;
}

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
  async resolve(
    systemIds: readonly string[],
    mode: Environment,
    options: ResolveOptions = {},
  ): Promise<ResolvedSystem[]> {
    const chosen: SystemResource[] = [];
    const seen = new Set<string>();
    for (const id of systemIds) {
      if (seen.has(id)) continue;
      seen.add(id);
      const variants = this.variants.get(id);
      const resource = variants && variantForMode(variants, mode);
      if (!resource) throw KG_ERR_RUN_SYSTEM_MISSING(id);
      const unready = options.unready === 'allow' ? undefined : systemUnreadiness(resource);
      if (unready)
        throw KG_ERR_RUN_SYSTEM_NOT_READY(unready.systemId, unready.name, unready.reason, unready.message);
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
        rateLimit: isLimited(resource.spec.rateLimit) ? resource.spec.rateLimit : undefined,
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

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

export interface SystemCacheOptions {
  systems: ResourceClient<SystemResource>;
  secrets: SecretStore;
  log?: (line: string) => void;
}

/**
 * The systems runs resolve against: the System resources in memory through the kit's informer, grouped
 * into a snapshot whose credentials are read once each. Any change the informer sees (a write by this
 * process, another replica, kubectl or GitOps) drops the snapshot and the cached copy of the changed
 * system's Secret. While the informer's watch is not live (not started, closed, or interrupted) nothing
 * is served from memory: every read lists the resources, so a reader never sees data older than the
 * watch's own delay.
 */
export class SystemCache {
  readonly #systems: ResourceClient<SystemResource>;
  readonly #secrets: SecretStore;
  readonly #informer: Informer<SystemResource>;
  #started = false;
  #current: SystemSnapshot | undefined;

  constructor(options: SystemCacheOptions) {
    this.#systems = options.systems;
    this.#secrets = options.secrets;
    this.#informer = new Informer(options.systems, {
      kind: 'System',
      // Readers look systems up when a run starts; nothing here needs a periodic nudge.
      resyncMs: 0,
      ...(options.log ? { log: options.log } : {}),
    });
    this.#informer.onEvent((_type, resource) => this.#onChange(resource));
  }

  /** Lists the systems, then keeps watching them; reads are served from memory from then until close(). */
  async start(): Promise<void> {
    if (this.#started) return;
    await this.#informer.start();
    this.#started = true;
  }

  async close(): Promise<void> {
    this.#started = false;
    this.#current = undefined;
    await this.#informer.stop();
  }

  snapshot(): Promise<SystemSnapshot> {
    if (!this.#started || !this.#informer.live) {
      this.#current = undefined;
      return this.#load();
    }
    this.#current ??= new SystemSnapshot(this.#informer.values(), this.#secrets);
    return Promise.resolve(this.#current);
  }

  /**
   * A write of this process, applied to the cache at once (read-your-writes): what create, update or patch
   * returned, or for a delete the object deleted.
   */
  observe(type: 'ADDED' | 'MODIFIED' | 'DELETED', resource: SystemResource): void {
    this.#informer.observe(type, resource);
  }

  /** Drops the snapshot (its credentials are read again): after a write whose outcome is not known. */
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
}
