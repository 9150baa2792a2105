import type { KubeObject } from '../../crds/meta.ts';

/**
 * How reconcilers and API handlers read and write resources, whether they live in Kubernetes or in the
 * embedded store. Semantics follow the Kubernetes API server (resourceVersion, generation, status
 * subresource, finalizers, owner references); no Kubernetes client type leaks through.
 */

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent<T> {
  type: WatchEventType;
  /** For DELETED: the object's last state, with the resourceVersion of the deletion. */
  object: T;
}

export interface ListOptions {
  /** Equality selector: every given label must be present with that value. */
  labelSelector?: Record<string, string>;
}

export interface ListResult<T> {
  items: T[];
  /** Watch from this version to see every change after the list. */
  resourceVersion: string;
}

export interface WatchOptions {
  /**
   * Stream changes after this version (from a list, or the last event seen). Absent or "0": first an ADDED
   * event per existing object, then changes. A version that was compacted away fails with 410 Gone: list again.
   */
  resourceVersion?: string;
  /** Aborting ends the iteration without an error. */
  signal: AbortSignal;
}

/** Merge patch (RFC 7386) of the status: objects merge key by key, null removes a key, arrays are replaced. */
export type StatusPatch<T extends KubeObject> = T extends { status?: infer S }
  ? { [K in keyof NonNullable<S>]?: NonNullable<S>[K] | null }
  : never;

export interface PatchStatusOptions {
  /** When given, the patch applies only if the object is still at this version (else 409 Conflict). */
  resourceVersion?: string;
}

export interface ResourceClient<T extends KubeObject> {
  get(name: string): Promise<T | undefined>;
  list(opts?: ListOptions): Promise<ListResult<T>>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
  /** 409 AlreadyExists when the name is taken; 422 Invalid when validation fails. Status is not written. */
  create(obj: T): Promise<T>;
  /**
   * Replaces metadata (labels, annotations, finalizers, ownerReferences) and spec; status is kept.
   * metadata.resourceVersion must equal the stored one, else 409 Conflict. 404 when missing.
   */
  update(obj: T): Promise<T>;
  /** Status subresource: never touches spec or generation. */
  patchStatus(name: string, status: StatusPatch<T>, opts?: PatchStatusOptions): Promise<T>;
  /** Background propagation: dependents are deleted after the owner is gone. 404 when missing. */
  delete(name: string): Promise<void>;
}

/** Resource type per client name, e.g. `{ tools: ToolResource; systems: SystemResource; ... }`. */
export type KindMap = Record<string, KubeObject>;

/** The kinds kubeglue keeps as resources; plug the zod-typed resource types in through M. */
export type CoreKinds = { tools: KubeObject; systems: KubeObject; toolRuns: KubeObject };

export type ResourceClients<M extends KindMap> = { [P in keyof M]: ResourceClient<M[P]> };

export type Resources<M extends CoreKinds & KindMap = CoreKinds> = ResourceClients<M>;

export type ResourceErrorReason = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Gone' | 'Invalid';

const CODES: Record<ResourceErrorReason, 404 | 409 | 410 | 422> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  Invalid: 422,
};

/** The API server's Status error, with its HTTP code and reason. */
export class ResourceError extends Error {
  readonly code: 404 | 409 | 410 | 422;
  readonly reason: ResourceErrorReason;

  constructor(reason: ResourceErrorReason, message: string) {
    super(message);
    this.name = 'ResourceError';
    this.reason = reason;
    this.code = CODES[reason];
  }
}

export function isResourceError(error: unknown, reason?: ResourceErrorReason): error is ResourceError {
  return error instanceof ResourceError && (reason === undefined || error.reason === reason);
}
