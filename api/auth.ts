import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Scope } from '../contract/api/bodies.ts';
import {
  type ApiError,
  KG_ERR_INTERNAL,
  KG_ERR_INVALID_API_KEY,
  KG_ERR_KEY_RESTRICTED,
  KG_ERR_MISSING_API_KEY,
  KG_ERR_SCOPE_REQUIRED,
  KG_ERR_SYSTEM_NOT_FOUND,
  KG_ERR_TOOL_NOT_FOUND,
} from '../contract/api/errors.ts';
import type { RouteAccess } from '../contract/api/routes.ts';
import type { ApiKeyQuotas, StoredApiKey } from '../store/index.ts';
import { type ApiKeyStore, hashApiKey, isPlausibleApiKey } from './api-keys.ts';
import {
  accessOf,
  GUARDED_PATHS_OUTSIDE_V1,
  type RouteAccessTable,
  routeAccessTable,
  scopesOfKey,
} from './scopes.ts';
import { sendError } from './server.ts';

/** Who made a request: the API key it carried, without the secret. */
export interface Principal {
  id: string;
  name: string;
  /** Every scope and no restriction. */
  admin: boolean;
  scopes: Scope[];
  /** null = every tool. */
  toolIds: string[] | null;
  /** The systems the key may use in tools and runs; null = every system. */
  systemIds: string[] | null;
  /** The key's quotas (docs/operations.md#quotas-per-api-key); absent: none. */
  quotas?: ApiKeyQuotas | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every protected route; null on public ones. */
    principal: Principal | null;
  }
}

export interface AuthOptions {
  store: Pick<ApiKeyStore, 'findApiKeyByHash' | 'touchApiKeys'>;
  /** Paths under /v1/ that need no key (matched as prefixes of the path); outside /v1 only /mcp needs one. */
  publicPrefixes: readonly string[];
  /** Who may call each route; default: the route table (contract/api/routes.ts). */
  routes?: RouteAccessTable;
  /** How long a looked-up key is trusted before the store is asked again. */
  cacheTtlMs?: number;
  /** At most this many keys (and as many unknown hashes) are cached. */
  cacheSize?: number;
  /** How often lastUsedAt is written. */
  touchIntervalMs?: number;
}

/** What route modules get from installAuth. */
export interface Auth {
  /** Forget a key at once (after revoking it), so this process stops accepting it now. */
  evict(keyId: string): void;
  /** Writes the pending lastUsedAt updates. */
  flush(): Promise<void>;
  /** Every /v1 route that needs a key, as registered, with the access declared for it. */
  guardedRoutes(): ReadonlyArray<GuardedRoute>;
}

export interface GuardedRoute {
  method: string;
  /** fastify's pattern: `/v1/tools/:toolId`. */
  url: string;
  access: RouteAccess;
}

/** The scheme name is case-insensitive (RFC 9110). */
const BEARER_SCHEME = /^bearer(?:\s|$)/i;

interface CacheEntry {
  expiresAt: number;
  /** Shared by concurrent requests with the same key, so a burst costs one store query. */
  lookup: Promise<Principal | null>;
  /** Set once the lookup settles; what eviction by key id looks at. */
  principal?: Principal | null;
}

type KeyFromRequest = { kind: 'missing' } | { kind: 'invalid' } | { kind: 'key'; key: string };

function keyFromRequest(request: FastifyRequest): KeyFromRequest {
  const header = request.headers.authorization;
  if (header !== undefined && BEARER_SCHEME.test(header)) {
    const credentials = header.slice('bearer'.length).trim();
    if (credentials !== '')
      return /\s/.test(credentials) ? { kind: 'invalid' } : { kind: 'key', key: credentials };
  }
  // Another scheme (say Basic, added by a proxy) does not hide a key given as ?token=.
  const token = (request.query as Record<string, unknown> | undefined)?.token;
  if (typeof token === 'string' && token !== '') return { kind: 'key', key: token };
  // `?token=a&token=b` is refused rather than guessed at.
  if (Array.isArray(token)) return { kind: 'invalid' };
  return { kind: 'missing' };
}

export function toPrincipal(key: StoredApiKey): Principal {
  return {
    id: key.id,
    name: key.name,
    admin: key.admin,
    scopes: scopesOfKey(key),
    toolIds: key.toolIds,
    systemIds: key.systemIds,
    ...(key.quotas ? { quotas: key.quotas } : {}),
  };
}

/**
 * Why the key may not call a route with this access (the error to answer), or undefined when it may. A
 * tool restriction is named first: no scope would get a key limited to tools past it.
 */
export function accessProblem(
  principal: Pick<Principal, 'scopes' | 'toolIds'>,
  access: RouteAccess,
  operation: string,
): ApiError | undefined {
  if (access.public) return undefined;
  if (access.unrestricted && principal.toolIds !== null) return KG_ERR_KEY_RESTRICTED();
  const missing = access.scopes.find((scope) => !principal.scopes.includes(scope));
  return missing === undefined ? undefined : KG_ERR_SCOPE_REQUIRED(missing, operation);
}

/**
 * Protects every route under /v1/ except the public prefixes, and the MCP endpoint, with an API key. Looked-up keys are cached
 * for cacheTtlMs (10 s): a key revoked through another replica stops working within that time, one
 * revoked through this process at once (Auth.evict). lastUsedAt is written in batches.
 */
export function installAuth(app: FastifyInstance, options: AuthOptions): Auth {
  const { store, publicPrefixes } = options;
  const routes = options.routes ?? routeAccessTable();
  const ttlMs = options.cacheTtlMs ?? 10_000;
  const maxEntries = options.cacheSize ?? 10_000;
  const touchIntervalMs = options.touchIntervalMs ?? 5_000;

  // Known keys and unknown hashes are kept apart, so a flood of made-up keys cannot push out real ones.
  const known = new Map<string, CacheEntry>();
  const unknown = new Map<string, CacheEntry>();

  function remember(map: Map<string, CacheEntry>, keyHash: string, entry: CacheEntry): void {
    map.delete(keyHash);
    if (map.size >= maxEntries) {
      // Maps iterate in insertion order: the first entry is the oldest.
      const oldest = map.keys().next();
      if (!oldest.done) map.delete(oldest.value);
    }
    map.set(keyHash, entry);
  }

  function lookUp(keyHash: string, now: number): Promise<Principal | null> {
    const cached = known.get(keyHash) ?? unknown.get(keyHash);
    if (cached && cached.expiresAt > now) return cached.lookup;

    const entry: CacheEntry = { expiresAt: now + ttlMs, lookup: Promise.resolve(null) };
    entry.lookup = store.findApiKeyByHash(keyHash).then(
      (stored) => {
        entry.principal = stored ? toPrincipal(stored) : null;
        if (stored && unknown.get(keyHash) === entry) {
          unknown.delete(keyHash);
          remember(known, keyHash, entry);
        }
        return entry.principal;
      },
      (error: unknown) => {
        // A failed lookup must not be cached: the next request asks the store again.
        if (unknown.get(keyHash) === entry) unknown.delete(keyHash);
        throw error;
      },
    );
    // Pending lookups wait with the unknown hashes, so a flood of made-up keys only ever displaces those.
    known.delete(keyHash);
    remember(unknown, keyHash, entry);
    return entry.lookup;
  }

  function isPublicPath(path: string): boolean {
    if (!path.startsWith('/v1/')) return !GUARDED_PATHS_OUTSIDE_V1.includes(path);
    return publicPrefixes.some((prefix) => path.startsWith(prefix));
  }

  function pathOf(request: FastifyRequest): string {
    // The matched route's pattern decides, not the raw URL, so encodings cannot steer a request
    // past the check; an unmatched request (404) falls back to its path.
    return request.routeOptions.url ?? request.url.split('?', 1)[0] ?? '';
  }

  function isPublic(request: FastifyRequest): boolean {
    return isPublicPath(pathOf(request));
  }

  /**
   * A request that carries a credential: a key (every guarded route, /mcp included), or a URL that is
   * itself one (the public /v1 routes: presigned downloads, the OAuth callback). Its answer holds what the
   * credential unlocks (a new key, results, key lists, state), so no browser or proxy may keep it. The
   * dashboard's files, the probes and /metrics keep their own caching.
   */
  function carriesCredential(request: FastifyRequest): boolean {
    const path = pathOf(request);
    return path.startsWith('/v1/') || !isPublicPath(path);
  }

  // A /v1 route nobody declared access for would be open to every key: the server refuses to start.
  const guarded: GuardedRoute[] = [];
  app.addHook('onRoute', (route) => {
    if (isPublicPath(route.url)) return;
    for (const method of [route.method].flat()) {
      const access = accessOf(routes, method, route.url);
      if (!access) {
        throw new Error(
          `route ${method} ${route.url} declares no access: add it with its scopes to contract/api/routes.ts`,
        );
      }
      if (access.public) {
        throw new Error(
          `route ${method} ${route.url} is public in contract/api/routes.ts but not in publicPrefixes`,
        );
      }
      guarded.push({ method, url: route.url, access });
    }
  });

  const usedIds = new Set<string>();
  let touchTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (touchTimer) clearTimeout(touchTimer);
    touchTimer = undefined;
    if (usedIds.size === 0) return flushing;
    const ids = [...usedIds];
    usedIds.clear();
    const at = new Date().toISOString();
    flushing = flushing
      .then(() => store.touchApiKeys(ids, at))
      .catch((error: unknown) => {
        // lastUsedAt is informational; a failed write is logged and the next batch tries again.
        app.log.warn({ err: error }, 'could not record API key use');
      });
    return flushing;
  }

  function noteUse(id: string): void {
    usedIds.add(id);
    if (!touchTimer) {
      touchTimer = setTimeout(() => void flush(), touchIntervalMs);
      touchTimer.unref();
    }
  }

  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) return;
    const found = keyFromRequest(request);
    // The errors carry their WWW-Authenticate challenge.
    if (found.kind === 'missing') return sendError(reply, KG_ERR_MISSING_API_KEY());
    const invalid = () => sendError(reply, KG_ERR_INVALID_API_KEY());
    if (found.kind === 'invalid' || !isPlausibleApiKey(found.key)) return invalid();
    const principal = await lookUp(hashApiKey(found.key), Date.now());
    if (!principal) return invalid();
    request.principal = principal;
    noteUse(principal.id);
    // An unmatched request has no route (and answers 404 next); every matched one has its access, and
    // one without (registered before this hook could check it) is refused rather than open to any key.
    const url = request.routeOptions.url;
    if (url === undefined) return;
    const access = accessOf(routes, request.method, url);
    if (!access) {
      request.log.error(`route ${request.method} ${url} declares no access in contract/api/routes.ts`);
      return sendError(reply, KG_ERR_INTERNAL());
    }
    const problem = accessProblem(principal, access, `${request.method} ${url}`);
    if (problem) return sendError(reply, problem);
  });
  // One rule for every answer, errors and streams included; an answer's own `no-transform` (event
  // streams: proxies must not buffer or compress them) is kept. A web Response (the MCP transport's)
  // brings headers that fastify applies after this hook, so they get the rule too.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!carriesCredential(request)) return payload;
    const response = payload instanceof Response ? payload : undefined;
    const own = response?.headers.get('cache-control') ?? reply.getHeader('cache-control');
    const value = /\bno-transform\b/i.test(String(own ?? '')) ? 'no-store, no-transform' : 'no-store';
    reply.header('cache-control', value);
    response?.headers.set('cache-control', value);
    return payload;
  });
  app.addHook('onClose', async () => {
    await flush();
  });

  return {
    evict(keyId) {
      for (const map of [known, unknown]) {
        for (const [keyHash, entry] of map) {
          // A lookup still in flight may be for this key: drop it too, the next request asks again.
          if (entry.principal === undefined || entry.principal?.id === keyId) map.delete(keyHash);
        }
      }
    },
    flush,
    guardedRoutes: () => [...guarded],
  };
}

/** The request's principal; 401 on a route the auth hook does not protect. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw KG_ERR_MISSING_API_KEY();
  return request.principal;
}

/** Whether the request's key may use (and so see) the tool. */
export function canUseTool(request: FastifyRequest, toolId: string): boolean {
  const { toolIds } = principalOf(request);
  return toolIds === null || toolIds.includes(toolId);
}

/**
 * A tool the key may not use does not exist as far as the key can tell: the same 404 as for an unknown
 * id, decided before the tool is looked up, so neither the answer nor its timing tells them apart.
 */
export function assertToolAccess(request: FastifyRequest, toolId: string): void {
  if (!canUseTool(request, toolId)) throw KG_ERR_TOOL_NOT_FOUND(toolId);
}

/** The tools the request's key may use; null = every tool. */
export function allowedToolIds(request: FastifyRequest): string[] | null {
  return principalOf(request).toolIds;
}

/**
 * A key limited to tools may create only tools it is limited to (decided before the id is looked up, so
 * the answer does not tell whether a tool with it exists).
 */
export function assertMayCreateTool(request: FastifyRequest, toolId: string): void {
  if (!canUseTool(request, toolId)) throw KG_ERR_KEY_RESTRICTED();
}

/** The systems the request's key may use in tools and runs; null = every system. */
export function allowedSystemIds(request: FastifyRequest): string[] | null {
  return principalOf(request).systemIds;
}

/** Whether the request's key may use (and so see) the system. */
export function canUseSystem(request: FastifyRequest, systemId: string): boolean {
  const { systemIds } = principalOf(request);
  return systemIds === null || systemIds.includes(systemId);
}

/**
 * A system the key may not use answers 404 exactly like one that does not exist (systems routes), decided
 * before the lookup. `environment` as the route passes it on, so the message matches the unknown one's.
 */
export function assertSystemAccess(
  request: FastifyRequest,
  systemId: string,
  environment?: 'dev' | 'prod' | undefined,
): void {
  if (!canUseSystem(request, systemId)) throw KG_ERR_SYSTEM_NOT_FOUND(systemId, environment);
}
