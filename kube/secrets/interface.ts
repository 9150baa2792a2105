import type { OwnerReference } from '../../contract/resources/meta.ts';

export interface SecretPutOptions {
  /** The object the set belongs to; Kubernetes deletes the Secret with it. Ignored where there is no GC. */
  owner?: OwnerReference;
}

/**
 * Named sets of secret strings (system credentials). In Kubernetes a set is a v1 Secret in the kubeglue
 * namespace (its `data` keys); in the embedded deployment it is a sealed row in the store.
 */
export interface SecretStore {
  /** The set, or undefined when no secret has that name. */
  get(name: string): Promise<Record<string, string> | undefined>;
  /** Creates or replaces the whole set. */
  put(name: string, data: Record<string, string>, options?: SecretPutOptions): Promise<void>;
  /** Removes the set; no error when it does not exist. */
  delete(name: string): Promise<void>;
  /**
   * Drops any cached copy, so the next get reads storage. Called when another writer is known to have
   * changed the secret (e.g. the System that references it changed in another process).
   */
  forget?(name: string): void;
}

/** A stored secret exists but cannot be read back (wrong master key, altered data). Never holds the data. */
export class SecretUnreadableError extends Error {
  readonly secretName: string;

  constructor(secretName: string, reason: string) {
    super(`secret '${secretName}' cannot be read: ${reason}`);
    this.name = 'SecretUnreadableError';
    this.secretName = secretName;
  }
}
