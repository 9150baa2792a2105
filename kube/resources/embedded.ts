import { randomUUID } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { ObjectMeta } from '../../contract/resources/meta.ts';
import type { ResourceRecord, ResourceStore, ResourceWriter } from '../../store/index.ts';
import { checkCreatable, checkUpdatable, invalid } from './identity.ts';
import type {
  BookmarkEvent,
  DeleteOptions,
  KindMap,
  ListOptions,
  ListResult,
  MergePatch,
  PatchOptions,
  PatchStatusOptions,
  ResourceClient,
  ResourceClients,
  StatusPatch,
  WatchEvent,
  WatchOptions,
  WireObject,
} from './interface.ts';
import { ResourceError } from './interface.ts';
import { type KindSpec, type KindSpecs, qualifiedResource } from './kinds.ts';
import {
  canonicalJson,
  fromJsonObject,
  mergePatch,
  toJsonObject,
  withoutEmptyFields,
} from './object-json.ts';

export {
  CORE_KIND_SPECS,
  type KindSpec,
  type KindSpecs,
  type ValidationResult,
} from './kinds.ts';

export interface EmbeddedResourcesOptions<M extends KindMap> {
  /** Every object lives in this namespace. */
  namespace: string;
  kinds: KindSpecs<M>;
  /** Revisions of change history kept for watches (default 10 000); older versions answer 410 Gone. */
  eventRetention?: number;
  /** Compact the change feed every this many revisions (default 1 000). */
  compactEvery?: number;
  /** The clock of creationTimestamp (tests that move time by hand, like the schedules' clock). */
  now?: () => Date;
}

/**
 * Resources kept in the store, served with the API server's rules: uid and creationTimestamp on create, a
 * resourceVersion from one global revision on every write, generation bumped by content (spec) changes only,
 * optimistic concurrency, status subresource, merge patches, delete preconditions, finalizers, background
 * garbage collection of dependents, and watch with replay from a resourceVersion (410 Gone once compacted),
 * server-side timeouts and bookmarks. Watches are woken by LISTEN/NOTIFY, so writes from other processes on
 * the same database are seen too. Any kind works (COORDINATION_KIND_SPECS adds Leases and Events); this
 * resourceVersion is the store's revision, which only this module may read as a number.
 */
export function createEmbeddedResources<M extends KindMap>(
  store: ResourceStore,
  options: EmbeddedResourcesOptions<M>,
): ResourceClients<M> {
  const feed = new FeedCompaction(store, options.eventRetention ?? 10_000, options.compactEvery ?? 1_000);
  const clients = {} as ResourceClients<M>;
  for (const key of Object.keys(options.kinds) as (keyof M & string)[]) {
    clients[key] = new EmbeddedResourceClient(
      store,
      options.namespace,
      options.kinds[key],
      feed,
      options.now,
    );
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

  /**
   * How far the feed may move on past an idle watch's version before the watch reads again to catch up,
   * although nothing of its kind changed: well inside the retention, so compaction never overtakes it.
   */
  get catchUpRevisions(): number {
    return Math.max(1, Math.floor(this.#retention / 2));
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

function timestamp(now = new Date()): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function recordOf(obj: WireObject, namespace: string): ResourceRecord {
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

function withMetadata<T extends WireObject>(obj: T, metadata: Partial<ObjectMeta>): T {
  return { ...obj, metadata: withoutEmptyFields({ ...obj.metadata, ...metadata }) };
}

/**
 * Deletes an object now, records it in the feed and collects its dependents (background propagation).
 * Returns the object's final state.
 */
async function removeNow<T extends WireObject>(
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
    const child = fromJsonObject<WireObject>(dependent.object);
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
  obj: WireObject,
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

/** Top-level fields that are neither identity nor metadata (nor status, when status is a subresource). */
function contentOf(obj: WireObject, statusSubresource: boolean): JsonObject {
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = toJsonObject(obj);
  if (statusSubresource) delete rest.status;
  return rest;
}

class EmbeddedResourceClient<T extends WireObject> implements ResourceClient<T> {
  readonly #store: ResourceStore;
  readonly #namespace: string;
  readonly #spec: KindSpec<T>;
  readonly #feed: FeedCompaction;
  readonly #statusSubresource: boolean;
  /** `tools.kubeglue.dev`, as in the API server's messages. */
  readonly #resource: string;
  readonly #now: () => Date;

  constructor(
    store: ResourceStore,
    namespace: string,
    spec: KindSpec<T>,
    feed: FeedCompaction,
    now: () => Date = () => new Date(),
  ) {
    this.#now = now;
    this.#store = store;
    this.#namespace = namespace;
    this.#spec = spec;
    this.#feed = feed;
    this.#statusSubresource = spec.statusSubresource ?? true;
    this.#resource = qualifiedResource(spec);
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

  watch(opts: WatchOptions & { bookmarks: true }): AsyncIterable<WatchEvent<T> | BookmarkEvent>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T> | BookmarkEvent> {
    return this.#watch(opts);
  }

  async create(obj: T): Promise<T> {
    const name = checkCreatable(obj, this.#spec, this.#namespace);
    if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) {
      throw this.#invalid(
        name,
        `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case ` +
          "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      );
    }
    const { labels, annotations, finalizers, ownerReferences } = obj.metadata;
    // With a status subresource, a create does not write status.
    const candidate = fromJsonObject<T>({
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: toJsonObject(
        withoutEmptyFields({
          name,
          namespace: this.#namespace,
          uid: randomUUID(),
          generation: 1,
          creationTimestamp: timestamp(this.#now()),
          labels,
          annotations,
          finalizers,
          ownerReferences,
        }),
      ),
      ...contentOf(obj, this.#statusSubresource),
    });
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
    const name = checkUpdatable(obj, this.#spec, this.#namespace);
    const expectedVersion = obj.metadata.resourceVersion;
    const input = structuredClone(obj);
    return this.#write(async (writer) => {
      const current = await this.#current(writer, name, expectedVersion);
      return this.#replace(writer, current, input);
    });
  }

  async patch(
    name: string,
    patch: MergePatch<Omit<T, 'apiVersion' | 'kind'>>,
    opts: PatchOptions = {},
  ): Promise<T> {
    const json = toJsonObject(patch);
    const patchMeta = json.metadata;
    // As on the API server, a resourceVersion in the patch is a precondition.
    const inPatch =
      patchMeta && typeof patchMeta === 'object' && !Array.isArray(patchMeta)
        ? patchMeta.resourceVersion
        : undefined;
    const expected = opts.resourceVersion ?? (typeof inPatch === 'string' ? inPatch : undefined);
    return this.#write(async (writer) => {
      const current = await this.#current(writer, name, expected);
      const patched = fromJsonObject<T>(mergePatch(toJsonObject(current), json) as JsonObject);
      if (!patched.metadata || typeof patched.metadata !== 'object') {
        throw this.#invalid(name, 'metadata: Required value');
      }
      return this.#replace(writer, current, patched);
    });
  }

  async patchStatus(name: string, status: StatusPatch<T>, opts: PatchStatusOptions = {}): Promise<T> {
    if (!this.#statusSubresource) {
      throw new ResourceError('NotFound', 'the server could not find the requested resource');
    }
    const patch = toJsonObject({ status }).status ?? {};
    return this.#write(async (writer) => {
      const current = await this.#current(writer, name, opts.resourceVersion);
      const currentStatus = (current as { status?: JsonValue }).status;
      const next = fromJsonObject<T>({ ...toJsonObject(current), status: mergePatch(currentStatus, patch) });
      if (canonicalJson(next) === canonicalJson(current)) return current;
      this.#validate(next);
      return this.#put(writer, next);
    });
  }

  async delete(name: string, opts: DeleteOptions = {}): Promise<void> {
    await this.#write(async (writer) => {
      const current = await this.#current(writer, name, undefined);
      this.#checkPreconditions(current, opts.preconditions);
      await deleteOrMarkForDeletion(writer, current, this.#namespace);
    });
  }

  /** What update and patch share: input's metadata fields and content replace current's. */
  async #replace(writer: ResourceWriter, current: T, input: T): Promise<T> {
    const name = current.metadata.name;
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
    const content = contentOf(input, this.#statusSubresource);
    const contentChanged =
      canonicalJson(content) !== canonicalJson(contentOf(current, this.#statusSubresource));
    const currentStatus = (current as { status?: JsonValue }).status;
    const next = withMetadata(
      fromJsonObject<T>({
        apiVersion: current.apiVersion,
        kind: current.kind,
        metadata: toJsonObject(current.metadata),
        ...content,
        ...(this.#statusSubresource && currentStatus !== undefined ? { status: currentStatus } : {}),
      }),
      {
        labels: input.metadata.labels,
        annotations: input.metadata.annotations,
        finalizers: input.metadata.finalizers,
        ownerReferences: input.metadata.ownerReferences,
        generation: (current.metadata.generation ?? 1) + (contentChanged ? 1 : 0),
      },
    );
    // A write that changes nothing is not a write: no new resourceVersion, no watch event.
    if (canonicalJson(next) === canonicalJson(current)) return current;
    this.#validate(next);
    if (next.metadata.deletionTimestamp && newFinalizers.length === 0) {
      return removeNow(writer, next, this.#namespace);
    }
    return this.#put(writer, next);
  }

  async *#watch(opts: WatchOptions): AsyncGenerator<WatchEvent<T> | BookmarkEvent> {
    const { signal } = opts;
    if (signal.aborted) return;
    let cursor = opts.resourceVersion ? this.#parseVersion(opts.resourceVersion) : 0;
    const wakeup = new Wakeup();
    const onAbort = () => wakeup.fire();
    const deadline = opts.timeoutSeconds ? Date.now() + opts.timeoutSeconds * 1000 : undefined;
    const timer = deadline ? setTimeout(() => wakeup.fire(), deadline - Date.now()) : undefined;
    let unlisten: (() => Promise<void>) | undefined;
    try {
      signal.addEventListener('abort', onAbort, { once: true });
      // Listen before the first read, so a write between that read and the wait still wakes us. Only a
      // write of this kind concerns this watch (every watch reading after every write of any kind cost more
      // than the writes); a notification that does not say what changed wakes it too, and so does the feed
      // moving far past its version, so it never falls behind compaction driven by other kinds' writes.
      const kind = this.#spec.kind;
      const catchUp = this.#feed.catchUpRevisions;
      unlisten = await this.#store.onChange((change) => {
        if (!change || change.kinds.has(kind) || change.revision - cursor >= catchUp) wakeup.fire();
      });
      const selection = new Selection(opts.labelSelector);
      if (cursor === 0) {
        const listed = await this.list(opts.labelSelector ? { labelSelector: opts.labelSelector } : {});
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
          const selected = selection.event(event.type, fromJsonObject<T>(event.object));
          if (selected) yield selected;
          cursor = event.revision;
        }
        if (page.events.length === WATCH_PAGE) continue;
        // Nothing of this kind is missing up to the revision the page was read at; moving the cursor there
        // keeps an idle watch from falling behind compaction driven by other kinds' writes.
        cursor = Math.max(cursor, page.revision);
        if (deadline !== undefined && Date.now() >= deadline) {
          // Like the API server: a bookmark just before the timeout lets the watcher resume from here.
          if (opts.bookmarks) {
            yield { type: 'BOOKMARK', object: { metadata: { resourceVersion: String(cursor) } } };
          }
          return;
        }
        await wakeup.wait();
      }
    } finally {
      clearTimeout(timer);
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
      throw this.#conflict(
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return fromJsonObject<T>(record.object);
  }

  #checkPreconditions(current: T, preconditions: DeleteOptions['preconditions']): void {
    const name = current.metadata.name;
    const { uid, resourceVersion } = preconditions ?? {};
    if (uid !== undefined && uid !== current.metadata.uid) {
      throw this.#conflict(
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid ?? ''}`,
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== current.metadata.resourceVersion) {
      throw this.#conflict(
        name,
        `Precondition failed: ResourceVersion in precondition: ${resourceVersion}, ` +
          `ResourceVersion in meta: ${current.metadata.resourceVersion ?? ''}`,
      );
    }
  }

  async #put(writer: ResourceWriter, obj: T): Promise<T> {
    const revision = await writer.nextRevision();
    const written = withMetadata(obj, { resourceVersion: String(revision) });
    await writer.put(recordOf(written, this.#namespace), 'MODIFIED');
    return written;
  }

  #validate(obj: T): void {
    const result = this.#spec.validate?.(obj);
    if (result && !result.ok) throw this.#invalid(obj.metadata.name, result.message);
  }

  #invalid(name: string, message: string): ResourceError {
    return invalid(this.#spec, name, message);
  }

  #conflict(name: string, message: string): ResourceError {
    return new ResourceError(
      'Conflict',
      `Operation cannot be fulfilled on ${this.#resource} "${name}": ${message}`,
    );
  }

  #parseVersion(version: string): number {
    if (!/^\d+$/.test(version)) {
      throw new ResourceError('Invalid', `resourceVersion: Invalid value: "${version}": must be a number`);
    }
    return Number(version);
  }
}

/** A watch's label selection: what the API server's watch filter does, from the events alone. */
class Selection {
  readonly #labels: [string, string][];
  /** Names this stream knows to be outside the selection (no DELETED for them again). */
  readonly #outside = new Set<string>();

  constructor(labels: Record<string, string> | undefined) {
    this.#labels = Object.entries(labels ?? {});
  }

  event<T extends WireObject>(type: WatchEvent<T>['type'], object: T): WatchEvent<T> | undefined {
    if (this.#labels.length === 0) return { type, object };
    const name = object.metadata.name;
    const matches = this.#labels.every(([key, value]) => object.metadata.labels?.[key] === value);
    if (matches) {
      // Coming into the selection is an addition for the watcher.
      const entering = this.#outside.delete(name) && type === 'MODIFIED';
      return { type: entering ? 'ADDED' : type, object };
    }
    if (type === 'DELETED' || this.#outside.has(name)) return undefined;
    this.#outside.add(name);
    // Like the API server: a change that takes an object out of the selection is its deletion for the
    // watcher. Which objects were in it before this stream began is unknown, so some of these are spurious.
    return type === 'MODIFIED' ? { type: 'DELETED', object } : undefined;
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
