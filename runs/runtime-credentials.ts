/**
 * Runtime credentials of accepted async runs, until the run executes (DESIGN.md "Async run"). They are
 * sealed here with AES-256-GCM under a key of their own, bound to the exact run id (a sealed value copied to
 * another run does not open), and stored in run_credentials by the run's own insert: keyed by the run id
 * itself, so no run id can name a system's Secret or another run's credentials, and only the request that
 * stored the run stores credentials for it. Both deployments use it: the store is the same Postgres.
 */
import { RuntimeCredentials } from '../contract/api/run.ts';
import { deriveKey, SecretBox, SecretBoxError } from '../platform/secret-box.ts';
import type { StoreQueries } from '../store/index.ts';

/** HKDF purpose of the key sealing runtime credentials (distinct from system credentials' key). */
export const RUN_CREDENTIALS_KEY_PURPOSE = 'kubeglue/run-credentials/v1';

/** Where runtime credentials of queued async runs wait, sealed, until the run executes. */
export interface RuntimeCredentialVault {
  /** Seals credentials for this run id only; the run insert stores them (InsertRunOptions.sealedCredentials). */
  seal(runId: string, credentials: RuntimeCredentials): Uint8Array;
  /** The run's credentials (read, not removed: an order may be fetched again); undefined when it has none. */
  get(runId: string): Promise<RuntimeCredentials | undefined>;
  /** Removes them once the run ran; no error when there are none. */
  delete(runId: string): Promise<void>;
}

/** The stored credentials exist but cannot be opened (another master key, altered or misplaced data). */
export class RuntimeCredentialsUnreadableError extends Error {
  constructor(runId: string, reason: string) {
    super(`the runtime credentials of run '${runId}' cannot be read: ${reason}`);
    this.name = 'RuntimeCredentialsUnreadableError';
  }
}

export class StoreRuntimeCredentialVault implements RuntimeCredentialVault {
  readonly #store: Pick<StoreQueries, 'getRunCredentials' | 'deleteRunCredentials'>;
  readonly #box: SecretBox;

  constructor(options: {
    store: Pick<StoreQueries, 'getRunCredentials' | 'deleteRunCredentials'>;
    masterKey: Buffer;
  }) {
    this.#store = options.store;
    this.#box = new SecretBox(deriveKey(options.masterKey, RUN_CREDENTIALS_KEY_PURPOSE));
  }

  seal(runId: string, credentials: RuntimeCredentials): Uint8Array {
    return this.#box.sealJson(credentials, context(runId));
  }

  async get(runId: string): Promise<RuntimeCredentials | undefined> {
    const sealed = await this.#store.getRunCredentials(runId);
    if (!sealed) return undefined;
    try {
      return this.#box.openJson(sealed, context(runId), RuntimeCredentials, 'a credentials map');
    } catch (error) {
      if (error instanceof SecretBoxError) throw new RuntimeCredentialsUnreadableError(runId, error.message);
      throw error;
    }
  }

  async delete(runId: string): Promise<void> {
    await this.#store.deleteRunCredentials(runId);
  }
}

function context(runId: string): string {
  return `kubeglue/run-credentials/${runId}`;
}
