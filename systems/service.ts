/**
 * systems/: the SystemService, the systems cache, OAuth (oauth/) and documentation processing with its
 * parsers (documentation/), and the grants of systems to API keys.
 *
 * May import: contract, config, engine, kube, store, platform.
 */
import { randomBytes } from 'node:crypto';
import {
  isApiError,
  KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN,
  KG_ERR_CREDENTIALS_INCOMPLETE,
  KG_ERR_CREDENTIALS_UNREADABLE,
  KG_ERR_SYSTEM_CHANGED_CONCURRENTLY,
  KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH,
  KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED,
  KG_ERR_SYSTEM_EXISTS,
  KG_ERR_SYSTEM_ID_MISMATCH,
  KG_ERR_SYSTEM_IN_USE,
  KG_ERR_SYSTEM_INVALID,
  KG_ERR_SYSTEM_NOT_FOUND,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import {
  type ApiKeyPlacement,
  CREDENTIAL_SHAPES,
  type Environment,
  isLimited,
  type System,
  type SystemCreateBody,
  type SystemUpdateBody,
} from '../contract/api/system.ts';
import { type SystemFields, systemToResource } from '../contract/resources/convert.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';
import { CREDENTIALS_REVISION_ANNOTATION } from '../contract/resources/labels.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { isResourceError, type KubeglueResources } from '../kube/resources/index.ts';
import { type SecretStore, SecretUnreadableError } from '../kube/secrets/interface.ts';
import { KeyedLock } from '../platform/keyed-lock.ts';
import type { BudgetOf } from './budgets.ts';
import { type ResolveOptions, readCredentials, SystemCache } from './cache.ts';
import {
  compareVariants,
  credentialsSecretName,
  environmentOf,
  groupVariants,
  mergeCredentials,
  toApiSystem,
  type Variants,
  variantForMode,
  variantForRequest,
  variantUrls,
  withoutUndefined,
} from './model.ts';

const MAX_UPDATE_ATTEMPTS = 5;

export interface SystemServiceOptions {
  resources: Pick<KubeglueResources, 'systems'>;
  secrets: SecretStore;
  namespace: string;
  log?: (line: string) => void;
  /**
   * Where a variant's documentation says its API key goes (runs/documentation): used for apiKey systems
   * whose credentials name no header or query parameter.
   */
  documentedPlacement?: (key: {
    systemId: string;
    environment: Environment;
  }) => Promise<ApiKeyPlacement | undefined>;
  /** Extra fields of a system's REST shape that depend on more than the resource (OAuth token status). */
  present?: (
    resource: SystemResource,
    credentials: Readonly<Record<string, string>>,
  ) => Promise<Partial<System>>;
  /** Told after a variant was deleted (its OAuth tokens and authorization flows go with it). */
  onDeleted?: (resource: SystemResource) => Promise<void>;
}

/** A system variant with its stored credentials. */
export interface SystemVariant {
  resource: SystemResource;
  credentials: Readonly<Record<string, string>>;
}

export interface SystemPage {
  data: System[];
  page: number;
  limit: number;
  total: number;
  hasMore: boolean;
}

/**
 * Systems over the System resources (one object per id and environment) and the Secrets holding their
 * credentials. Responses carry credentials only as placeholders. Runs resolve systems from the informer-fed
 * cache (cache.ts; start() begins the watch, without it every resolve reads the resources); this process's
 * own writes go into that cache at once.
 */
export class SystemService {
  readonly #systems: KubeglueResources['systems'];
  readonly #secrets: SecretStore;
  readonly #namespace: string;
  readonly #log: (line: string) => void;
  readonly #cache: SystemCache;
  /** Serialises the writes of one system id within this process. */
  readonly #locks = new KeyedLock();
  readonly #documentedPlacement: SystemServiceOptions['documentedPlacement'];
  readonly #extra: SystemServiceOptions['present'];
  readonly #onDeleted: SystemServiceOptions['onDeleted'];

  constructor(options: SystemServiceOptions) {
    this.#extra = options.present;
    this.#onDeleted = options.onDeleted;
    this.#systems = options.resources.systems;
    this.#secrets = options.secrets;
    this.#namespace = options.namespace;
    this.#log = options.log ?? (() => {});
    this.#cache = new SystemCache({ systems: this.#systems, secrets: this.#secrets, log: this.#log });
    this.#documentedPlacement = options.documentedPlacement;
  }

  /** Starts the watch that keeps the run-time cache current. */
  start(): Promise<void> {
    return this.#cache.start();
  }

  close(): Promise<void> {
    return this.#cache.close();
  }

  async create(body: SystemCreateBody): Promise<System> {
    const { id, environment, credentials = {}, ...fields } = body;
    return this.#locks.run(id, async () => {
      if ((await this.#variants(id))?.has(environment)) {
        throw KG_ERR_SYSTEM_EXISTS(id, environment);
      }
      const fieldsOfSystem: SystemFields = withoutUndefined({
        id,
        environment,
        ...fields,
        rateLimit: isLimited(fields.rateLimit) ? fields.rateLimit : undefined,
      });
      let created = await this.#resourceCall(id, () =>
        this.#systems.create(systemToResource(fieldsOfSystem, this.#namespace, undefined)),
      );
      this.#cache.observe('ADDED', created);
      try {
        if (Object.keys(credentials).length > 0) {
          // The object exists before its Secret is written and gets its reference after, so the final
          // write is a change every watcher sees once the Secret is in place (and a losing concurrent
          // create never overwrites the winner's Secret).
          const secretName = credentialsSecretName(created.metadata.name);
          await this.#secrets.put(secretName, credentials);
          created = await this.#resourceCall(id, () => this.#refer(created, secretName));
          this.#cache.observe('MODIFIED', created);
        }
      } catch (error) {
        await this.#systems.delete(created.metadata.name).then(
          () => this.#cache.observe('DELETED', created),
          () => {},
        );
        await this.#secrets.delete(credentialsSecretName(created.metadata.name)).catch(() => {});
        throw error;
      } finally {
        this.#cache.invalidate();
      }
      return this.#present(created, credentials);
    });
  }

  /**
   * Points a new object at its Secret. The operator may write the object's status in between (Kubernetes),
   * which changes its resourceVersion: the current object is read again and the reference reapplied.
   */
  async #refer(created: SystemResource, secretName: string): Promise<SystemResource> {
    let current = created;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#systems.update(withCredentialsRef(current, secretName));
      } catch (error) {
        if (!isResourceError(error, 'Conflict') || attempt >= MAX_UPDATE_ATTEMPTS) throw error;
        const fresh = await this.#systems.get(created.metadata.name);
        // Deleted meanwhile: the create lost to a delete; answer as the conflict it is.
        if (!fresh || fresh.metadata.uid !== created.metadata.uid) throw error;
        current = fresh;
      }
    }
  }

  /** Every variant as its own entry, ordered by id, then dev before prod; `systemIds`: only those. */
  async list(query: {
    page: number;
    limit: number;
    systemIds?: readonly string[] | null;
  }): Promise<SystemPage> {
    const { page, limit, systemIds } = query;
    const listed = await this.#systems.list();
    const all = [...new SystemsById(listed.items).all()]
      .filter((resource) => !systemIds || systemIds.includes(resource.spec.id))
      .sort(compareVariants);
    const slice = all.slice((page - 1) * limit, page * limit);
    const data = await Promise.all(slice.map((resource) => this.#present(resource)));
    return { data, page, limit, total: all.length, hasMore: page * limit < all.length };
  }

  async get(id: string, environment?: Environment): Promise<System> {
    return this.#present(await this.#addressed(id, environment));
  }

  /**
   * Only given fields change. `environment` in the body selects the variant when the query names none,
   * and must agree with the query when both do; it never moves a variant to the other environment.
   */
  async update(id: string, environment: Environment | undefined, body: SystemUpdateBody): Promise<System> {
    if (body.id !== undefined && body.id !== id) {
      throw KG_ERR_SYSTEM_ID_MISMATCH(body.id, id);
    }
    if (environment && body.environment && environment !== body.environment) {
      throw KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH(body.environment, environment);
    }
    const target = environment ?? body.environment;
    return this.#locks.run(id, async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#updateOnce(id, target, body);
        } catch (error) {
          // Someone else wrote the object between our read and write: read again and reapply.
          if (!isResourceError(error, 'Conflict') || attempt >= MAX_UPDATE_ATTEMPTS) {
            throw this.#toApiError(id, error);
          }
        } finally {
          this.#cache.invalidate();
        }
      }
    });
  }

  async #updateOnce(id: string, target: Environment | undefined, body: SystemUpdateBody): Promise<System> {
    const current = await this.#addressed(id, target);
    const stored = await this.#credentialsOf(current);
    let credentials = stored;
    if (body.credentials) {
      const merged = mergeCredentials(id, stored, body.credentials);
      if (!merged.ok) {
        throw KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN(merged.unknownPlaceholders);
      }
      credentials = merged.credentials;
    }
    const authType = body.authType ?? current.spec.authType;
    if ((body.credentials || body.authType) && authType) checkShape(authType, credentials);

    const spec = current.spec;
    const fields: SystemFields = withoutUndefined({
      id: spec.id,
      environment: environmentOf(current),
      name: body.name ?? spec.name,
      url: body.url ?? spec.url,
      documentationUrl: body.documentationUrl ?? spec.documentationUrl,
      documentationKeywords: body.documentationKeywords ?? spec.documentationKeywords,
      authType,
      gateway: body.gateway ?? spec.gateway,
      // {} removes the budget.
      rateLimit:
        body.rateLimit === undefined
          ? spec.rateLimit
          : isLimited(body.rateLimit)
            ? body.rateLimit
            : undefined,
      codeAccess: body.codeAccess ?? spec.codeAccess,
      extraOrigins: body.extraOrigins ?? spec.extraOrigins,
      allowedNetworks: body.allowedNetworks ?? spec.allowedNetworks,
    });
    const oldRef = spec.credentialsSecretRef?.name;
    let ref = oldRef;
    if (body.credentials) {
      ref = undefined;
      if (Object.keys(credentials).length > 0) {
        ref = oldRef ?? credentialsSecretName(current.metadata.name);
        await this.#secrets.put(ref, credentials);
      }
    }
    let next = systemToResource(fields, this.#namespace, ref, current);
    // Objects created outside the API may have other names; the object stays where it is.
    next = { ...next, metadata: { ...next.metadata, name: current.metadata.name } };
    if (body.credentials) next = withRevision(next);
    const updated = await this.#systems.update(next);
    this.#cache.observe('MODIFIED', updated);
    if (oldRef && !ref) await this.#deleteSecret(oldRef);
    return this.#present(updated, credentials);
  }

  /** Without an environment: the only variant; when both exist the caller must choose. */
  /**
   * Deletes one variant. Deleting the last one while tools use the system (`usedBy`) is refused with 409
   * naming them, unless `force`: then the answer lists them as brokenTools. Deleting one of two variants
   * breaks nothing (the other serves both modes).
   */
  async delete(
    id: string,
    environment?: Environment,
    guard: { usedBy?: (systemId: string) => string[]; force?: boolean } = {},
  ): Promise<{ success: true; brokenTools?: string[] }> {
    return this.#locks.run(id, async () => {
      const variants = await this.#variants(id);
      if (!variants) throw KG_ERR_SYSTEM_NOT_FOUND(id);
      if (!environment && variants.size > 1) {
        throw KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED(id);
      }
      const target = environment ? variants.get(environment) : variantForRequest(variants, undefined);
      if (!target) throw KG_ERR_SYSTEM_NOT_FOUND(id, environment);
      const users = variants.size === 1 ? (guard.usedBy?.(id) ?? []) : [];
      if (users.length > 0 && !guard.force) throw KG_ERR_SYSTEM_IN_USE(id, users);
      try {
        await this.#resourceCall(id, () => this.#systems.delete(target.metadata.name));
        this.#cache.observe('DELETED', target);
      } finally {
        this.#cache.invalidate();
      }
      const ref = target.spec.credentialsSecretRef?.name;
      if (ref) await this.#deleteSecret(ref);
      await this.#onDeleted?.(target).catch((error: unknown) => {
        // The system is gone either way; what is left behind is unreachable and replaced on re-creation.
        this.#log(`could not clean up after system ${id}: ${(error as Error).message}`);
      });
      return users.length > 0 ? { success: true, brokenTools: users } : { success: true };
    });
  }

  /** Whether any variant of the id exists (served from the run-time cache). */
  async exists(id: string): Promise<boolean> {
    return (await this.#cache.snapshot()).variants.has(id);
  }

  /** The base URLs of the id's variants (run-time cache); none when it does not exist. */
  async urls(id: string): Promise<string[]> {
    return variantUrls((await this.#cache.snapshot()).variants.get(id));
  }

  /**
   * The systems a run in `mode` uses, with decrypted credentials: per id the variant of that environment,
   * or the only variant when the id has no counterpart. Each call gets its own credential objects.
   */
  async resolveForRun(
    systemIds: readonly string[],
    mode: Environment,
    options?: ResolveOptions,
  ): Promise<ResolvedSystem[]> {
    try {
      const snapshot = await this.#cache.snapshot();
      const resolved = await snapshot.resolve(systemIds, mode, options);
      const lookup = this.#documentedPlacement;
      if (!lookup) return resolved;
      return await Promise.all(
        resolved.map(async (system) => {
          const { credentials } = system;
          if (system.authType !== 'apiKey' || credentials.apiKeyHeader || credentials.apiKeyQueryParam)
            return system;
          const variants = snapshot.variants.get(system.id);
          const resource = variants && variantForMode(variants, mode);
          if (!resource) return system;
          const placement = await lookup({ systemId: system.id, environment: environmentOf(resource) });
          return placement ? { ...system, apiKeyPlacement: placement } : system;
        }),
      );
    } catch (error) {
      throw this.#toApiError(undefined, error);
    }
  }

  /** The gateways the systems of a run in `mode` sit behind (run-time cache, no credentials read). */
  async gatewaysForRun(
    systemIds: readonly string[],
    mode: Environment,
  ): Promise<{ tunnelId: string; target: string }[]> {
    const snapshot = await this.#cache.snapshot();
    return systemIds.flatMap((id) => {
      const variants = snapshot.variants.get(id);
      const gateway = variants && variantForMode(variants, mode)?.spec.gateway;
      return gateway ? [gateway] : [];
    });
  }

  /**
   * The rate budget of the variant a run in `mode` uses (run-time cache, no credentials read): its key in
   * the store and its limits; undefined when it has none.
   */
  async budgetOf(systemId: string, mode: Environment): Promise<BudgetOf | undefined> {
    const snapshot = await this.#cache.snapshot();
    const variants = snapshot.variants.get(systemId);
    const resource = variants && variantForMode(variants, mode);
    const limit = resource?.spec.rateLimit;
    return resource && isLimited(limit) ? { key: resource.metadata.name, limit } : undefined;
  }

  /** The REST shape of a variant; `known`: its credentials when the caller holds them (create, update). */
  async #present(resource: SystemResource, known?: Readonly<Record<string, string>>): Promise<System> {
    const credentials = known ?? (await this.#credentialsOf(resource));
    const system = toApiSystem(resource, Object.keys(credentials));
    return this.#extra ? { ...system, ...(await this.#extra(resource, credentials)) } : system;
  }

  /** The variant a REST call addresses, read from the resources, with its credentials. */
  async variantForRequest(id: string, environment: Environment | undefined): Promise<SystemVariant> {
    const resource = await this.#addressed(id, environment);
    return { resource, credentials: await this.#credentialsOf(resource) };
  }

  /** The variant a run in `mode` uses (run-time cache), with its credentials; undefined when there is none. */
  async variantForRun(id: string, mode: Environment): Promise<SystemVariant | undefined> {
    const snapshot = await this.#cache.snapshot();
    const variants = snapshot.variants.get(id);
    const resource = variants && variantForMode(variants, mode);
    if (!resource) return undefined;
    try {
      return { resource, credentials: await snapshot.credentials(resource) };
    } catch (error) {
      throw this.#toApiError(id, error);
    }
  }

  /**
   * Sets (or with undefined removes) an annotation of a variant, so every watcher sees the change (the
   * operator's System reconciler reads the OAuth status from it).
   */
  async annotate(resourceName: string, key: string, value: string | undefined): Promise<void> {
    const current = await this.#systems.get(resourceName);
    if (!current || current.metadata.annotations?.[key] === value) return;
    const patched = await this.#systems.patch(resourceName, {
      metadata: { annotations: { [key]: value ?? null } },
    } as Parameters<KubeglueResources['systems']['patch']>[1]);
    this.#cache.observe('MODIFIED', patched);
  }

  async #addressed(id: string, environment: Environment | undefined): Promise<SystemResource> {
    const variants = await this.#variants(id);
    const resource = variants && variantForRequest(variants, environment);
    if (!resource) throw KG_ERR_SYSTEM_NOT_FOUND(id, environment);
    return resource;
  }

  /** Read from the resources, not the cache: REST answers reflect every write that completed before. */
  async #variants(id: string): Promise<Variants | undefined> {
    const listed = await this.#systems.list();
    return new SystemsById(listed.items).get(id);
  }

  async #credentialsOf(resource: SystemResource): Promise<Readonly<Record<string, string>>> {
    try {
      return await readCredentials(this.#secrets, resource);
    } catch (error) {
      throw this.#toApiError(resource.spec.id, error);
    }
  }

  async #deleteSecret(name: string): Promise<void> {
    try {
      await this.#secrets.delete(name);
    } catch (error) {
      // The system is already changed; a leftover Secret is overwritten when the variant is created again.
      this.#log(`could not delete the credentials Secret ${name}: ${(error as Error).message}`);
    }
  }

  async #resourceCall<T>(id: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.#toApiError(id, error);
    }
  }

  #toApiError(id: string | undefined, error: unknown): unknown {
    if (isApiError(error)) return error;
    if (error instanceof SecretUnreadableError) return KG_ERR_CREDENTIALS_UNREADABLE(id);
    if (isResourceError(error, 'NotFound')) return KG_ERR_SYSTEM_NOT_FOUND(id);
    if (isResourceError(error, 'AlreadyExists')) return KG_ERR_SYSTEM_EXISTS(id);
    if (isResourceError(error, 'Conflict')) return KG_ERR_SYSTEM_CHANGED_CONCURRENTLY(id);
    // The resource holds no credentials, so its validation message is safe to show.
    if (isResourceError(error, 'Invalid')) return KG_ERR_SYSTEM_INVALID(error.message);
    return error;
  }
}

/** Variants grouped once per listing. */
class SystemsById {
  readonly #byId: Map<string, Map<Environment, SystemResource>>;

  constructor(items: Iterable<SystemResource>) {
    this.#byId = groupVariants(items);
  }

  get(id: string): Variants | undefined {
    return this.#byId.get(id);
  }

  *all(): Iterable<SystemResource> {
    for (const variants of this.#byId.values()) yield* variants.values();
  }
}

function checkShape(authType: keyof typeof CREDENTIAL_SHAPES, credentials: Record<string, string>): void {
  if (Object.keys(credentials).length === 0) return;
  const result = CREDENTIAL_SHAPES[authType].safeParse(credentials);
  if (result.success) return;
  // A value that is there but wrong (an authorizationUrl that is no http(s) URL) is named with its rule;
  // these shapes' messages never quote the value.
  const wrong = result.error.issues.filter((issue) => issue.code !== 'invalid_type');
  if (wrong.length > 0) {
    throw KG_ERR_VALIDATION(
      'body',
      wrong.map((issue) => ({ path: ['credentials', ...issue.path.map(String)], message: issue.message })),
    );
  }
  // Field names only: a value never appears in an error.
  const fields = new Set(
    result.error.issues.map((issue) => ['credentials', ...issue.path.map(String)].join('.')),
  );
  throw KG_ERR_CREDENTIALS_INCOMPLETE([...fields], authType);
}

function withCredentialsRef(resource: SystemResource, secretName: string): SystemResource {
  return withRevision({
    ...resource,
    spec: { ...resource.spec, credentialsSecretRef: { name: secretName } },
  });
}

function withRevision(resource: SystemResource): SystemResource {
  return {
    ...resource,
    metadata: {
      ...resource.metadata,
      annotations: {
        ...resource.metadata.annotations,
        [CREDENTIALS_REVISION_ANNOTATION]: randomBytes(8).toString('hex'),
      },
    },
  };
}
