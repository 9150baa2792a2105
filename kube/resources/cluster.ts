import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { ClusterTransport } from './cluster-transport.ts';
import { checkCreatable, checkUpdatable } from './identity.ts';
import {
  type BookmarkEvent,
  type DeleteOptions,
  isResourceError,
  type KindMap,
  type ListOptions,
  type ListResult,
  type MergePatch,
  type PatchOptions,
  type PatchStatusOptions,
  type ResourceClient,
  type ResourceClients,
  ResourceError,
  type StatusPatch,
  type WatchEvent,
  type WatchOptions,
  type WireObject,
} from './interface.ts';
import { apiPrefix, type KindSpec, type KindSpecs, qualifiedResource } from './kinds.ts';
import { toJsonObject } from './object-json.ts';
import { isStatus, statusError } from './status-error.ts';

export interface ClusterResourcesOptions<M extends KindMap> {
  /** Every object lives in this namespace. */
  namespace: string;
  kinds: KindSpecs<M>;
  /** Objects per list request (default 500); lists follow `continue` tokens to the end. */
  pageSize?: number;
  /** Recorded in managedFields for our writes (default kubeglue). */
  fieldManager?: string;
}

const MERGE_PATCH = 'application/merge-patch+json';

/**
 * Resources on a real API server: typed clients of the given kinds in one namespace, speaking the API's
 * JSON (no client-node model classes). Lists are whole (pages followed), watches ask for bookmarks and turn
 * an expired version (HTTP 410 or an ERROR event) into ResourceError 'Gone', every write uses the verbs'
 * preconditions, and Status errors become ResourceErrors.
 */
export function createClusterResources<M extends KindMap>(
  transport: ClusterTransport,
  options: ClusterResourcesOptions<M>,
): ResourceClients<M> {
  const clients = {} as ResourceClients<M>;
  for (const key of Object.keys(options.kinds) as (keyof M & string)[]) {
    clients[key] = new ClusterResourceClient(transport, options, options.kinds[key]);
  }
  return clients;
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class ClusterResourceClient<T extends WireObject> implements ResourceClient<T> {
  readonly #transport: ClusterTransport;
  readonly #namespace: string;
  readonly #spec: KindSpec<T>;
  readonly #pageSize: number;
  readonly #fieldManager: string;
  readonly #collection: string;

  constructor(
    transport: ClusterTransport,
    options: Omit<ClusterResourcesOptions<KindMap>, 'kinds'>,
    spec: KindSpec<T>,
  ) {
    this.#transport = transport;
    this.#namespace = options.namespace;
    this.#spec = spec;
    this.#pageSize = options.pageSize ?? 500;
    this.#fieldManager = options.fieldManager ?? 'kubeglue';
    this.#collection = `${apiPrefix(spec.apiVersion)}/namespaces/${encodeURIComponent(options.namespace)}/${spec.plural}`;
  }

  async get(name: string): Promise<T | undefined> {
    try {
      return this.#object(await this.#transport.json({ method: 'GET', path: this.#item(name) }));
    } catch (error) {
      if (isResourceError(error, 'NotFound')) return undefined;
      throw error;
    }
  }

  async list(opts: ListOptions = {}): Promise<ListResult<T>> {
    const labelSelector = selector(opts.labelSelector);
    const limit = String(Math.max(1, opts.pageSize ?? this.#pageSize));
    const items: T[] = [];
    let resourceVersion: string | undefined;
    let token: string | undefined;
    do {
      let page: ListPage<T>;
      try {
        page = await this.#listPage({ labelSelector, limit, continue: token });
      } catch (error) {
        // A continue token dies with etcd's compaction (minutes): start over, in one request this time.
        if (token === undefined || !isResourceError(error, 'Gone')) throw error;
        const whole = await this.#listPage({ labelSelector });
        return { items: whole.items, resourceVersion: whole.resourceVersion };
      }
      items.push(...page.items);
      // Every page is served from the first one's snapshot; its version is the list's.
      resourceVersion ??= page.resourceVersion;
      token = page.continue;
    } while (token);
    return { items, resourceVersion: resourceVersion ?? '' };
  }

  watch(opts: WatchOptions & { bookmarks: true }): AsyncIterable<WatchEvent<T> | BookmarkEvent>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T> | BookmarkEvent> {
    return this.#watch(opts);
  }

  async create(obj: T): Promise<T> {
    checkCreatable(obj, this.#spec, this.#namespace);
    return this.#object(
      await this.#transport.json({
        method: 'POST',
        path: this.#collection,
        query: { fieldManager: this.#fieldManager },
        body: { ...obj, metadata: { ...obj.metadata, namespace: this.#namespace } },
      }),
    );
  }

  async update(obj: T): Promise<T> {
    const name = checkUpdatable(obj, this.#spec, this.#namespace);
    return this.#object(
      await this.#transport.json({
        method: 'PUT',
        path: this.#item(name),
        query: { fieldManager: this.#fieldManager },
        body: { ...obj, metadata: { ...obj.metadata, namespace: this.#namespace } },
      }),
    );
  }

  async patch(
    name: string,
    patch: MergePatch<Omit<T, 'apiVersion' | 'kind'>>,
    opts: PatchOptions = {},
  ): Promise<T> {
    return this.#mergePatch(this.#item(name), withVersion(toJsonObject(patch), opts.resourceVersion));
  }

  async patchStatus(name: string, status: StatusPatch<T>, opts: PatchStatusOptions = {}): Promise<T> {
    const body = withVersion(toJsonObject({ status: status ?? {} }), opts.resourceVersion);
    return this.#mergePatch(`${this.#item(name)}/status`, body);
  }

  async delete(name: string, opts: DeleteOptions = {}): Promise<void> {
    await this.#transport.json({
      method: 'DELETE',
      path: this.#item(name),
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
        ...(opts.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: opts.gracePeriodSeconds } : {}),
        ...(opts.preconditions ? { preconditions: opts.preconditions } : {}),
      },
    });
  }

  async *#watch(opts: WatchOptions): AsyncGenerator<WatchEvent<T> | BookmarkEvent> {
    const { signal, timeoutSeconds } = opts;
    const lines = this.#transport.stream({
      path: this.#collection,
      query: {
        watch: 'true',
        allowWatchBookmarks: 'true',
        labelSelector: selector(opts.labelSelector),
        resourceVersion: opts.resourceVersion || undefined,
        timeoutSeconds: timeoutSeconds ? String(Math.ceil(timeoutSeconds)) : undefined,
      },
      signal,
      // The server ends the stream at its timeout; silence well beyond that means a dead connection.
      idleTimeoutMs: timeoutSeconds ? (timeoutSeconds + 30) * 1000 : 0,
    });
    for await (const line of lines) {
      if (signal.aborted) return;
      if (!isJsonObject(line) || typeof line.type !== 'string') throw this.#malformed('a watch event', line);
      switch (line.type) {
        case 'ADDED':
        case 'MODIFIED':
        case 'DELETED':
          yield { type: line.type, object: this.#object(line.object) };
          break;
        case 'BOOKMARK': {
          const metadata = isJsonObject(line.object) ? line.object.metadata : undefined;
          const version = isJsonObject(metadata) ? metadata.resourceVersion : undefined;
          if (typeof version !== 'string') throw this.#malformed('a bookmark', line);
          if (opts.bookmarks) yield { type: 'BOOKMARK', object: { metadata: { resourceVersion: version } } };
          break;
        }
        case 'ERROR': {
          // Typically 410 Expired: the version asked for is older than the server's history.
          const status = line.object;
          const code = isStatus(status) && typeof status.code === 'number' ? status.code : 500;
          throw statusError(code, status);
        }
        default:
          throw this.#malformed('a watch event', line);
      }
    }
  }

  async #listPage(query: Record<string, string | undefined>): Promise<ListPage<T>> {
    const page = await this.#transport.json({ method: 'GET', path: this.#collection, query });
    if (!isJsonObject(page) || !Array.isArray(page.items)) throw this.#malformed('a list', page);
    const metadata = isJsonObject(page.metadata) ? page.metadata : {};
    const resourceVersion = typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '';
    const token = typeof metadata.continue === 'string' && metadata.continue ? metadata.continue : undefined;
    return { items: page.items.map((item) => this.#object(item)), resourceVersion, continue: token };
  }

  async #mergePatch(path: string, body: JsonObject): Promise<T> {
    return this.#object(
      await this.#transport.json({
        method: 'PATCH',
        path,
        query: { fieldManager: this.#fieldManager },
        body,
        contentType: MERGE_PATCH,
      }),
    );
  }

  /**
   * The object as the API server sent it, checked enough that callers can rely on metadata.name and
   * resourceVersion; list items (which come without them) get apiVersion and kind, and managedFields
   * (bookkeeping of server-side apply, often larger than the object) are dropped.
   */
  #object(value: unknown): T {
    if (!isJsonObject(value) || !isJsonObject(value.metadata)) throw this.#malformed('an object', value);
    const { managedFields: _managed, ...metadata } = value.metadata;
    if (typeof metadata.name !== 'string' || typeof metadata.resourceVersion !== 'string') {
      throw this.#malformed('an object', value);
    }
    const { apiVersion, kind, metadata: _metadata, ...content } = value;
    const object: Record<string, JsonValue> = {
      apiVersion: typeof apiVersion === 'string' ? apiVersion : this.#spec.apiVersion,
      kind: typeof kind === 'string' ? kind : this.#spec.kind,
      metadata,
      ...content,
    };
    return object as unknown as T;
  }

  #item(name: string): string {
    return `${this.#collection}/${encodeURIComponent(name)}`;
  }

  #malformed(what: string, value: unknown): ResourceError {
    const sample = JSON.stringify(value)?.slice(0, 200) ?? String(value);
    return new ResourceError(
      'InternalError',
      `the API server sent ${what} of ${qualifiedResource(this.#spec)} that kubeglue cannot read: ${sample}`,
      { code: 502 },
    );
  }
}

interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continue: string | undefined;
}

/** `a=1,b=2`: equality requirements, which the API server ANDs. */
function selector(labels: Record<string, string> | undefined): string | undefined {
  const entries = Object.entries(labels ?? {});
  return entries.length > 0 ? entries.map(([key, value]) => `${key}=${value}`).join(',') : undefined;
}

/** A resourceVersion in a patch body is the API server's precondition for it. */
function withVersion(body: JsonObject, resourceVersion: string | undefined): JsonObject {
  if (resourceVersion === undefined) return body;
  const metadata = isJsonObject(body.metadata) ? body.metadata : {};
  return { ...body, metadata: { ...metadata, resourceVersion } };
}
