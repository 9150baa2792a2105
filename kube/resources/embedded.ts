import { randomUUID } from 'node:crypto';
import type { JsonValue } from '../../crds/json.ts';
import { API_VERSION, type KubeObject, type ObjectMeta } from '../../crds/meta.ts';
import type { ResourceRecord, ResourceStore, ResourceWriter } from '../../store/index.ts';
import {
  type CoreKinds,
  type KindMap,
  type ListOptions,
  type ListResult,
  type PatchStatusOptions,
  type ResourceClient,
  type ResourceClients,
  ResourceError,
  type StatusPatch,
  type WatchEvent,
  type WatchOptions,
} from './interface.ts';
import {
  canonicalJson,
  fromJsonObject,
  mergePatch,
  toJsonObject,
  withoutEmptyFields,
} from './object-json.ts';

export type ValidationResult = { ok: true } | { ok: false; message: string };

export interface KindSpec<T extends KubeObject> {
  kind: string;
  /** Lower-case plural, as in the resource's REST path (`tools`). */
  plural: string;
  apiVersion: string;
  /** CRD-schema-like check of the object about to be stored; failure answers 422 Invalid. */
  validate?: (obj: T) => ValidationResult;
}

export type KindSpecs<M extends KindMap> = { [P in keyof M]: KindSpec<M[P]> };

export const CORE_KIND_SPECS: KindSpecs<CoreKinds> = {
  tools: { kind: 'Tool', plural: 'tools', apiVersion: API_VERSION },
  systems: { kind: 'System', plural: 'systems', apiVersion: API_VERSION },
  toolRuns: { kind: 'ToolRun', plural: 'toolruns', apiVersion: API_VERSION },
};

export interface EmbeddedResourcesOptions<M extends KindMap> {
  /** Every object lives in this namespace. */
  namespace: string;
  kinds: KindSpecs<M>;
  /** Revisions of change history kept for watches (default 10 000); older versions answer 410 Gone. */
  eventRetention?: number;
  /** Compact the change feed every this many revisions (default 1 000). */
  compactEvery?: number;
}

/**
 * Resources kept in the store, served with the API server's rules: uid and creationTimestamp on create, a
 * resourceVersion from one global revision on every write, generation bumped by spec changes only, optimistic
 * concurrency, status subresource, finalizers, background garbage collection of dependents, and watch with
 * replay from a resourceVersion (410 Gone once compacted). Watches are woken by LISTEN/NOTIFY, so writes
 * from other processes on the same database are seen too.
 */
export function createEmbeddedResources<M extends KindMap>(
  store: ResourceStore,
  options: EmbeddedResourcesOptions<M>,
): ResourceClients<M> {
  const feed = new FeedCompaction(store, options.eventRetention ?? 10_000, options.compactEvery ?? 1_000);
  const clients = {} as ResourceClients<M>;
  for (const key of Object.keys(options.kinds) as (keyof M & string)[]) {
    clients[key] = new EmbeddedResourceClient(store, options.namespace, options.kinds[key], feed);
  }
  return clients;
}

class FeedCompaction {
  readonly #store: ResourceStore;
  readonly #retention: number;
  readonly #every: number;
  #lastCompactionAt = 0;

  constructor(store: ResourceStore, retention: number, every: number) {
    this.#store = store;
    this.#retention = retention;
    this.#every = every;
  }

  /** Runs after a committed write; compaction failures only delay compaction to the next round. */
  afterWrite(revision: number): void {
    if (revision - this.#lastCompactionAt < this.#every) return;
    this.#lastCompactionAt = revision;
    this.#store.compact(this.#retention).catch(() => {});
  }
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const WATCH_PAGE = 500;

function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function recordOf(obj: KubeObject, namespace: string): ResourceRecord {
  return {
    kind: obj.kind,
    namespace,
    name: obj.metadata.name,
    uid: obj.metadata.uid ?? '',
    resourceVersion: Number(obj.metadata.resourceVersion),
    generation: obj.metadata.generation ?? 1,
    ownerUids: (obj.metadata.ownerReferences ?? []).map((ref) => ref.uid),
    object: toJsonObject(obj),
  };
}

function withMetadata<T extends KubeObject>(obj: T, metadata: Partial<ObjectMeta>): T {
  return { ...obj, metadata: withoutEmptyFields({ ...obj.metadata, ...metadata }) };
}

/**
 * Deletes an object now, records it in the feed and collects its dependents (background propagation).
 * Returns the object's final state.
 */
async function removeNow<T extends KubeObject>(
  writer: ResourceWriter,
  obj: T,
  namespace: string,
): Promise<T> {
  const revision = await writer.nextRevision();
  const removed = withMetadata(obj, { resourceVersion: String(revision) });
  await writer.remove(recordOf(removed, namespace));
  const uid = obj.metadata.uid;
  if (!uid) return removed;
  for (const dependent of await writer.dependents(namespace, uid)) {
    const child = fromJsonObject<KubeObject>(dependent.object);
    const references = child.metadata.ownerReferences ?? [];
    const otherOwners = references.map((ref) => ref.uid).filter((ownerUid) => ownerUid !== uid);
    if ((await writer.existingUids(otherOwners)).size > 0) {
      // Still owned by someone else: only the dangling reference goes, as the Kubernetes GC does.
      const childRevision = await writer.nextRevision();
      const updated = withMetadata(child, {
        ownerReferences: references.filter((ref) => ref.uid !== uid),
        resourceVersion: String(childRevision),
      });
      await writer.put(recordOf(updated, namespace), 'MODIFIED');
    } else {
      await deleteOrMarkForDeletion(writer, child, namespace);
    }
  }
  return removed;
}

/** With finalizers the object only gets a deletionTimestamp; whoever removes the last finalizer deletes it. */
async function deleteOrMarkForDeletion(
  writer: ResourceWriter,
  obj: KubeObject,
  namespace: string,
): Promise<void> {
  if ((obj.metadata.finalizers ?? []).length === 0) {
    await removeNow(writer, obj, namespace);
    return;
  }
  if (obj.metadata.deletionTimestamp) return;
  const revision = await writer.nextRevision();
  const marked = withMetadata(obj, { deletionTimestamp: timestamp(), resourceVersion: String(revision) });
  await writer.put(recordOf(marked, namespace), 'MODIFIED');
}

class EmbeddedResourceClient<T extends KubeObject> implements ResourceClient<T> {
  readonly #store: ResourceStore;
  readonly #namespace: string;
  readonly #spec: KindSpec<T>;
  readonly #feed: FeedCompaction;
  /** `tools.kubeglue.dev`, as in the API server's messages. */
  readonly #resource: string;
  /** `Tool.kubeglue.dev`. */
  readonly #qualifiedKind: string;

  constructor(store: ResourceStore, namespace: string, spec: KindSpec<T>, feed: FeedCompaction) {
    this.#store = store;
    this.#namespace = namespace;
    this.#spec = spec;
    this.#feed = feed;
    const group = spec.apiVersion.includes('/') ? spec.apiVersion.split('/')[0] : '';
    this.#resource = group ? `${spec.plural}.${group}` : spec.plural;
    this.#qualifiedKind = group ? `${spec.kind}.${group}` : spec.kind;
  }

  async get(name: string): Promise<T | undefined> {
    const record = await this.#store.get(this.#key(name));
    return record ? fromJsonObject<T>(record.object) : undefined;
  }

  async list(opts: ListOptions = {}): Promise<ListResult<T>> {
    const listed = await this.#store.list(this.#spec.kind, this.#namespace, opts.labelSelector);
    return {
      items: listed.records.map((record) => fromJsonObject<T>(record.object)),
      resourceVersion: String(listed.revision),
    };
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    return this.#watch(opts);
  }

  async create(obj: T): Promise<T> {
    const name = this.#checkIdentity(obj);
    if (obj.metadata.resourceVersion) {
      throw this.#invalid(
        name,
        'metadata.resourceVersion: Invalid value: must be empty when creating an object',
      );
    }
    if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) {
      throw this.#invalid(
        name,
        `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case ` +
          "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      );
    }
    const { labels, annotations, finalizers, ownerReferences } = obj.metadata;
    // Status is a subresource: a create does not write it.
    const candidate = {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: withoutEmptyFields({
        name,
        namespace: this.#namespace,
        uid: randomUUID(),
        generation: 1,
        creationTimestamp: timestamp(),
        labels,
        annotations,
        finalizers,
        ownerReferences,
      }),
      spec: obj.spec,
    } as T;
    this.#validate(candidate);
    return this.#write(async (writer) => {
      if (await writer.get(this.#key(name))) {
        throw new ResourceError('AlreadyExists', `${this.#resource} "${name}" already exists`);
      }
      const revision = await writer.nextRevision();
      const created = withMetadata(candidate, { resourceVersion: String(revision) });
      await writer.put(recordOf(created, this.#namespace), 'ADDED');
      return created;
    });
  }

  async update(obj: T): Promise<T> {
    const name = this.#checkIdentity(obj);
    const expectedVersion = obj.metadata.resourceVersion;
    if (!expectedVersion) {
      throw this.#invalid(
        name,
        'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
      );
    }
    const input = structuredClone(obj);
    return this.#write(async (writer) => {
      const current = await this.#current(writer, name, expectedVersion);
      const newFinalizers = input.metadata.finalizers ?? [];
      if (current.metadata.deletionTimestamp) {
        const oldFinalizers = new Set(current.metadata.finalizers ?? []);
        if (newFinalizers.some((finalizer) => !oldFinalizers.has(finalizer))) {
          throw this.#invalid(
            name,
            'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted',
          );
        }
      }
      const specChanged = canonicalJson(input.spec) !== canonicalJson(current.spec);
      const next = withMetadata(
        { ...current, spec: input.spec },
        {
          labels: input.metadata.labels,
          annotations: input.metadata.annotations,
          finalizers: input.metadata.finalizers,
          ownerReferences: input.metadata.ownerReferences,
          generation: (current.metadata.generation ?? 1) + (specChanged ? 1 : 0),
        },
      );
      // A write that changes nothing is not a write: no new resourceVersion, no watch event.
      if (canonicalJson(next) === canonicalJson(current)) return current;
      this.#validate(next);
      if (next.metadata.deletionTimestamp && newFinalizers.length === 0) {
        return removeNow(writer, next, this.#namespace);
      }
      return this.#put(writer, next);
    });
  }

  async patchStatus(name: string, status: StatusPatch<T>, opts: PatchStatusOptions = {}): Promise<T> {
    const patch = toJsonObject({ status }).status ?? {};
    return this.#write(async (writer) => {
      const current = await this.#current(writer, name, opts.resourceVersion);
      const merged = mergePatch(current.status as JsonValue | undefined, patch);
      const next = { ...current, status: merged } as T;
      if (canonicalJson(next) === canonicalJson(current)) return current;
      this.#validate(next);
      return this.#put(writer, next);
    });
  }

  async delete(name: string): Promise<void> {
    await this.#write(async (writer) => {
      const current = await this.#current(writer, name, undefined);
      await deleteOrMarkForDeletion(writer, current, this.#namespace);
    });
  }

  async *#watch(opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    const { signal } = opts;
    if (signal.aborted) return;
    let cursor = opts.resourceVersion ? this.#parseVersion(opts.resourceVersion) : 0;
    const wakeup = new Wakeup();
    const onAbort = () => wakeup.fire();
    let unlisten: (() => Promise<void>) | undefined;
    try {
      signal.addEventListener('abort', onAbort, { once: true });
      // Listen before the first read, so a write between that read and the wait still wakes us.
      unlisten = await this.#store.onChange(() => wakeup.fire());
      if (cursor === 0) {
        const listed = await this.list();
        for (const object of listed.items) {
          if (signal.aborted) return;
          yield { type: 'ADDED', object };
        }
        cursor = Number(listed.resourceVersion);
      }
      while (!signal.aborted) {
        wakeup.clear();
        const page = await this.#store.eventsAfter(this.#spec.kind, this.#namespace, cursor, WATCH_PAGE);
        if (cursor < page.compactedRevision) {
          throw new ResourceError('Gone', `too old resource version: ${cursor} (${page.compactedRevision})`);
        }
        for (const event of page.events) {
          if (signal.aborted) return;
          yield { type: event.type, object: fromJsonObject<T>(event.object) };
          cursor = event.revision;
        }
        if (page.events.length === WATCH_PAGE) continue;
        // Nothing of this kind is missing up to the revision the page was read at; moving the cursor there
        // keeps an idle watch from falling behind compaction driven by other kinds' writes.
        cursor = Math.max(cursor, page.revision);
        await wakeup.wait();
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      await unlisten?.().catch(() => {});
    }
  }

  #key(name: string) {
    return { kind: this.#spec.kind, namespace: this.#namespace, name };
  }

  async #write<R>(fn: (writer: ResourceWriter) => Promise<R>): Promise<R> {
    let lastRevision = 0;
    const result = await this.#store.write((writer) =>
      fn({
        ...writer,
        nextRevision: async () => {
          lastRevision = await writer.nextRevision();
          return lastRevision;
        },
      }),
    );
    if (lastRevision > 0) this.#feed.afterWrite(lastRevision);
    return result;
  }

  async #current(writer: ResourceWriter, name: string, expectedVersion: string | undefined): Promise<T> {
    const record = await writer.get(this.#key(name));
    if (!record) throw new ResourceError('NotFound', `${this.#resource} "${name}" not found`);
    if (expectedVersion !== undefined && expectedVersion !== String(record.resourceVersion)) {
      throw new ResourceError(
        'Conflict',
        `Operation cannot be fulfilled on ${this.#resource} "${name}": the object has been modified; ` +
          'please apply your changes to the latest version and try again',
      );
    }
    return fromJsonObject<T>(record.object);
  }

  async #put(writer: ResourceWriter, obj: T): Promise<T> {
    const revision = await writer.nextRevision();
    const written = withMetadata(obj, { resourceVersion: String(revision) });
    await writer.put(recordOf(written, this.#namespace), 'MODIFIED');
    return written;
  }

  /** Kind, apiVersion and namespace must be this client's; returns the name. */
  #checkIdentity(obj: T): string {
    const name = obj.metadata?.name ?? '';
    if (!name) throw this.#invalid(name, 'metadata.name: Required value: name is required');
    if (obj.kind !== this.#spec.kind || obj.apiVersion !== this.#spec.apiVersion) {
      throw this.#invalid(
        name,
        `kind: Invalid value: "${obj.apiVersion}, Kind=${obj.kind}": must be ${this.#spec.apiVersion}, Kind=${this.#spec.kind}`,
      );
    }
    const namespace = obj.metadata.namespace;
    if (namespace !== undefined && namespace !== this.#namespace) {
      throw this.#invalid(
        name,
        `metadata.namespace: Invalid value: "${namespace}": does not match the namespace of the request (${this.#namespace})`,
      );
    }
    return name;
  }

  #validate(obj: T): void {
    const result = this.#spec.validate?.(obj);
    if (result && !result.ok) throw this.#invalid(obj.metadata.name, result.message);
  }

  #invalid(name: string, message: string): ResourceError {
    return new ResourceError('Invalid', `${this.#qualifiedKind} "${name}" is invalid: ${message}`);
  }

  #parseVersion(version: string): number {
    if (!/^\d+$/.test(version)) {
      throw new ResourceError('Invalid', `resourceVersion: Invalid value: "${version}": must be a number`);
    }
    return Number(version);
  }
}

/** A level-triggered wake-up: a fire() between clear() and wait() is not lost. */
class Wakeup {
  #fired = false;
  #resolve: (() => void) | undefined;

  fire(): void {
    this.#fired = true;
    this.#resolve?.();
    this.#resolve = undefined;
  }

  clear(): void {
    this.#fired = false;
  }

  wait(): Promise<void> {
    if (this.#fired) return Promise.resolve();
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
}
