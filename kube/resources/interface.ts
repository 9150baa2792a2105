import type { KubeObject, ObjectMeta } from '../../contract/resources/meta.ts';

/**
 * How reconcilers and API handlers read and write resources, whether they live in Kubernetes or in the
 * embedded store. Semantics follow the Kubernetes API server (resourceVersion, generation, status
 * subresource, finalizers, owner references); objects cross it in the API server's JSON form and no
 * Kubernetes client type leaks through. resourceVersions are opaque: compare them for equality only.
 */

/** Any object the API server serves: kubeglue's kinds (which also have a spec) and core ones like Secret. */
export interface WireObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent<T> {
  type: WatchEventType;
  /** For DELETED: the object's last state, with the resourceVersion of the deletion. */
  object: T;
}

/**
 * Nothing of this kind changed up to object.metadata.resourceVersion: resume a watch from there. As on the
 * wire, the object carries nothing but that version. Only delivered to watches that ask for bookmarks; the
 * API server sends them when it likes (v1.20: shortly before the watch's timeout).
 */
export interface BookmarkEvent {
  type: 'BOOKMARK';
  object: { metadata: { resourceVersion: string } };
}

export interface ListOptions {
  /** Equality selector: every given label must be present with that value. */
  labelSelector?: Record<string, string>;
  /** Objects per request while listing (the cluster follows `continue` tokens); the result is always whole. */
  pageSize?: number;
}

export interface ListResult<T> {
  items: T[];
  /** Watch from this version to see every change after the list. */
  resourceVersion: string;
}

export interface WatchOptions {
  /**
   * Stream changes after this version (from a list, the last event or a bookmark). Absent or "0": first an
   * ADDED event per existing object, then changes. A version that was compacted away fails with 410 Gone
   * (ResourceError 'Gone'): list again.
   */
  resourceVersion?: string;
  /** Aborting ends the iteration without an error. */
  signal: AbortSignal;
  /** The stream ends cleanly (no error) after about this long; resume from the last version seen. */
  timeoutSeconds?: number;
  /** Also deliver BOOKMARK events. */
  bookmarks?: boolean;
  /**
   * Only objects carrying every given label. An object whose change takes it out of the selection arrives
   * as DELETED (embedded: possibly also one the watcher never saw; ignore deletions of unknown objects).
   */
  labelSelector?: Record<string, string>;
}

/**
 * A JSON merge patch (RFC 7386) of T: objects merge key by key, null removes a key, arrays are replaced.
 * Only plain objects recurse: arrays and primitives are given whole.
 */
export type MergePatch<T> = {
  [K in keyof T]?: MergePatchValue<T[K]> | null;
};
type MergePatchValue<V> = V extends readonly unknown[] ? V : V extends object ? MergePatch<V> : V;

/** Merge patch of the status: objects merge key by key, null removes a key, arrays are replaced. */
export type StatusPatch<T extends WireObject> = T extends { status?: infer S }
  ? { [K in keyof NonNullable<S>]?: NonNullable<S>[K] | null }
  : never;

export interface PatchOptions {
  /** When given, the patch applies only if the object is still at this version (else 409 Conflict). */
  resourceVersion?: string;
}

export type PatchStatusOptions = PatchOptions;

export interface DeleteOptions {
  /** Pods: seconds the containers get to stop (0: at once). Ignored by kinds without graceful deletion. */
  gracePeriodSeconds?: number;
  /** Delete only this incarnation (uid) and/or this version of the object; else 409 Conflict. */
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ResourceClient<T extends WireObject> {
  get(name: string): Promise<T | undefined>;
  list(opts?: ListOptions): Promise<ListResult<T>>;
  watch(opts: WatchOptions & { bookmarks: true }): AsyncIterable<WatchEvent<T> | BookmarkEvent>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
  /** 409 AlreadyExists when the name is taken; 422 Invalid when validation fails. Status is not written. */
  create(obj: T): Promise<T>;
  /**
   * Replaces metadata (labels, annotations, finalizers, ownerReferences) and everything but status;
   * status is kept. metadata.resourceVersion must equal the stored one, else 409 Conflict. 404 when missing.
   */
  update(obj: T): Promise<T>;
  /**
   * JSON merge patch of the object (metadata's labels, annotations, finalizers, ownerReferences and the
   * content; status is ignored when the kind has a status subresource). 404 when missing.
   */
  patch(name: string, patch: MergePatch<Omit<T, 'apiVersion' | 'kind'>>, opts?: PatchOptions): Promise<T>;
  /** Status subresource (merge patch): never touches spec or generation. */
  patchStatus(name: string, status: StatusPatch<T>, opts?: PatchStatusOptions): Promise<T>;
  /** Background propagation: dependents are deleted after the owner is gone. 404 when missing. */
  delete(name: string, opts?: DeleteOptions): Promise<void>;
}

/** Resource type per client name, e.g. `{ tools: ToolResource; systems: SystemResource; ... }`. */
export type KindMap = Record<string, WireObject>;

/** The kinds kubeglue keeps as resources; plug the zod-typed resource types in through M. */
export type CoreKinds = {
  tools: KubeObject;
  systems: KubeObject;
  toolRuns: KubeObject;
  toolSchedules: KubeObject;
};

export type ResourceClients<M extends KindMap> = { [P in keyof M]: ResourceClient<M[P]> };

export type Resources<M extends CoreKinds & KindMap = CoreKinds> = ResourceClients<M>;

export type ResourceErrorReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'ServerTimeout';

/** The HTTP code each reason has when the server did not say otherwise. */
export const REASON_CODES: Readonly<Record<ResourceErrorReason, number>> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  ServerTimeout: 504,
};

export interface ResourceErrorOptions {
  /** The HTTP code, when it differs from the reason's usual one (e.g. a ServerTimeout answered with 500). */
  code?: number;
  /** From Retry-After or the Status details: how long the server asked us to wait. */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** The API server's Status error, with its HTTP code and reason. */
export class ResourceError extends Error {
  readonly code: number;
  readonly reason: ResourceErrorReason;
  readonly retryAfterSeconds: number | undefined;

  constructor(reason: ResourceErrorReason, message: string, options: ResourceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ResourceError';
    this.reason = reason;
    this.code = options.code ?? REASON_CODES[reason];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export function isResourceError(error: unknown, reason?: ResourceErrorReason): error is ResourceError {
  return error instanceof ResourceError && (reason === undefined || error.reason === reason);
}
