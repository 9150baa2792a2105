import { z } from 'zod';
import { type SecretBox, SecretBoxError } from '../../platform/secret-box.ts';
import { type SecretStore, SecretUnreadableError } from './interface.ts';

/** The store's raw secret rows (store/): opaque bytes per namespace and name. */
export interface SecretBytesStore {
  putSecret(namespace: string, name: string, bytes: Uint8Array): Promise<unknown>;
  getSecret(namespace: string, name: string): Promise<Uint8Array | null | undefined>;
  deleteSecret(namespace: string, name: string): Promise<unknown>;
}

export interface EmbeddedSecretStoreOptions {
  store: SecretBytesStore;
  namespace: string;
  /** Seals with a key derived from the master key (`credentialsBox(master)`). */
  box: SecretBox;
  /** Opened secrets kept in memory (default 10 000); the oldest entry goes first. */
  maxCachedSecrets?: number;
}

const SecretData = z.record(z.string(), z.string());

/**
 * Secrets kept in the store as AES-256-GCM sealed JSON, bound to their namespace and name (a row copied
 * under another name does not open). Opened secrets are cached; put, delete and forget drop the entry.
 */
export class EmbeddedSecretStore implements SecretStore {
  readonly #store: SecretBytesStore;
  readonly #namespace: string;
  readonly #box: SecretBox;
  /**
   * One promise per name, installed when the read starts: a read that began before a write cannot put
   * its older result back into the cache after the write dropped the entry.
   */
  readonly #cache = new Map<string, Promise<Readonly<Record<string, string>> | undefined>>();
  readonly #maxEntries: number;

  constructor(options: EmbeddedSecretStoreOptions) {
    this.#store = options.store;
    this.#namespace = options.namespace;
    this.#box = options.box;
    this.#maxEntries = options.maxCachedSecrets ?? 10_000;
  }

  async get(name: string): Promise<Record<string, string> | undefined> {
    let reading = this.#cache.get(name);
    if (!reading) {
      reading = this.#read(name);
      this.#cache.set(name, reading);
      if (this.#cache.size > this.#maxEntries) this.#evictOldest();
      const installed = reading;
      const drop = () => {
        if (this.#cache.get(name) === installed) this.#cache.delete(name);
      };
      // Misses are not kept: names looked up once (per-run secrets) would otherwise pile up.
      void installed.then((data) => data ?? drop(), drop);
    }
    const data = await reading;
    return data ? { ...data } : undefined;
  }

  async put(name: string, data: Record<string, string>): Promise<void> {
    const sealed = this.#box.sealJson(data, this.#context(name));
    try {
      await this.#store.putSecret(this.#namespace, name, sealed);
    } finally {
      // Dropped rather than set: with two concurrent puts the cache could otherwise keep the loser's value.
      this.#cache.delete(name);
    }
  }

  async delete(name: string): Promise<void> {
    try {
      await this.#store.deleteSecret(this.#namespace, name);
    } finally {
      this.#cache.delete(name);
    }
  }

  forget(name: string): void {
    this.#cache.delete(name);
  }

  #evictOldest(): void {
    const oldest = this.#cache.keys().next();
    if (!oldest.done) this.#cache.delete(oldest.value);
  }

  async #read(name: string): Promise<Readonly<Record<string, string>> | undefined> {
    const sealed = await this.#store.getSecret(this.#namespace, name);
    if (!sealed) return undefined;
    try {
      return Object.freeze(this.#box.openJson(sealed, this.#context(name), SecretData, 'a map of strings'));
    } catch (error) {
      if (error instanceof SecretBoxError) throw new SecretUnreadableError(name, error.message);
      throw error;
    }
  }

  #context(name: string): string {
    return `kubeglue/secret/${this.#namespace}/${name}`;
  }
}
