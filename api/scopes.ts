/**
 * What an API key may do: its scopes (contract/api/bodies.ts SCOPES), and on top of them the tools and systems it is
 * limited to. Which scope each route needs is declared in the route table (contract/api/routes.ts); this module
 * turns a stored key into its effective grant and decides what a key may grant to a new one.
 */
import { SCOPES, type Scope } from '../contract/api/bodies.ts';
import { MCP_ROUTE, OPENAPI_ROUTE, ROUTES, type RouteAccess, TUNNEL_ROUTE } from '../contract/api/routes.ts';
import type { StoredApiKey } from '../store/index.ts';

export const ALL_SCOPES: readonly Scope[] = SCOPES;

/** What a key that names no scopes gets: what such a key could do before keys had scopes. */
const UNRESTRICTED_DEFAULT: readonly Scope[] = SCOPES.filter(
  (scope) => scope !== 'keys:admin' && scope !== 'gateways:host',
);
const TOOL_LIMITED_DEFAULT: readonly Scope[] = ['tools:read', 'runs:read', 'runs:execute'];

/** A key's powers: its scopes and the tools and systems it is limited to (null: every one). */
export interface Grant {
  scopes: readonly Scope[];
  toolIds: readonly string[] | null;
  systemIds: readonly string[] | null;
}

function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Scopes in the table's order, each once. */
export function normalizeScopes(scopes: Iterable<string>): Scope[] {
  const given = new Set(scopes);
  return SCOPES.filter((scope) => given.has(scope));
}

/**
 * The scopes a stored key has. An admin key has every scope, also those added to the set after it was
 * created; a scope the code does not know (written by a newer version) grants nothing.
 */
export function scopesOfKey(key: Pick<StoredApiKey, 'admin' | 'scopes'>): Scope[] {
  return key.admin ? [...ALL_SCOPES] : normalizeScopes(key.scopes.filter(isScope));
}

/** The scopes of a key created without `scopes` (POST /v1/api-keys keeps its old meaning). */
export function defaultScopes(limitedToTools: boolean): Scope[] {
  return [...(limitedToTools ? TOOL_LIMITED_DEFAULT : UNRESTRICTED_DEFAULT)];
}

/** Every scope, no restriction: an admin key. */
export function isFullGrant(grant: Grant): boolean {
  return (
    grant.toolIds === null && grant.systemIds === null && ALL_SCOPES.every((s) => grant.scopes.includes(s))
  );
}

function outside(wanted: readonly string[] | null, held: readonly string[] | null): string[] | 'all' {
  if (held === null) return [];
  if (wanted === null) return 'all';
  return wanted.filter((id) => !held.includes(id));
}

const quoted = (ids: readonly string[]) => ids.map((id) => `'${id}'`).join(', ');

/**
 * Why `granter` may not create (or revoke) a key with `wanted`, or undefined when it may: a key can grant
 * only scopes it has, only tools and only systems it may use itself.
 */
export function grantProblem(granter: Grant, wanted: Grant): string | undefined {
  const scopes = wanted.scopes.filter((scope) => !granter.scopes.includes(scope));
  if (scopes.length > 0) return `lacks the scope${scopes.length > 1 ? 's' : ''} ${quoted(scopes)}`;
  const tools = outside(wanted.toolIds, granter.toolIds);
  if (tools === 'all') return 'is limited to some tools, and that key is not';
  if (tools.length > 0) return `may not use the tool${tools.length > 1 ? 's' : ''} ${quoted(tools)}`;
  const systems = outside(wanted.systemIds, granter.systemIds);
  if (systems === 'all') return 'is limited to some systems, and that key is not';
  if (systems.length > 0) return `may not use the system${systems.length > 1 ? 's' : ''} ${quoted(systems)}`;
  return undefined;
}

/** Route access by `METHOD /v1/path` in fastify's form (`:param`). */
export type RouteAccessTable = ReadonlyMap<string, RouteAccess>;

/** `/tools/{toolId}` → `/v1/tools/:toolId`, the form fastify registers and reports a route in. */
export function fastifyPath(openApiPath: string): string {
  return `/v1${openApiPath.replace(/\{(\w+)\}/g, ':$1')}`;
}

/** `GET /tools/{toolId}` → `GET /v1/tools/:toolId`. */
export function routeKey(method: string, openApiPath: string): string {
  return `${method.toUpperCase()} ${fastifyPath(openApiPath)}`;
}

/** Paths outside /v1 that need a key all the same: the MCP endpoint. */
export const GUARDED_PATHS_OUTSIDE_V1: readonly string[] = [MCP_ROUTE.path];

/** The access table of the route table (and the tunnel and MCP endpoint), or of routes a test declares. */
export function routeAccessTable(
  routes: ReadonlyArray<RouteAccess & { method: string; path: string }> = ROUTES,
): RouteAccessTable {
  const table = new Map<string, RouteAccess>();
  const tunnel: RouteAccess = { scopes: TUNNEL_ROUTE.scopes };
  table.set(routeKey(TUNNEL_ROUTE.method, TUNNEL_ROUTE.path), tunnel);
  table.set(`${MCP_ROUTE.method} ${MCP_ROUTE.path}`, { scopes: MCP_ROUTE.scopes });
  for (const route of routes) {
    const access: RouteAccess = route.public
      ? { public: true }
      : { scopes: route.scopes, ...(route.unrestricted ? { unrestricted: true } : {}) };
    table.set(routeKey(route.method, route.path), access);
  }
  return table;
}

/**
 * The path prefixes under which a request needs no key: the public routes' paths up to their first
 * parameter (an unmatched path under them answers 404, not 401).
 */
export function publicPrefixes(
  routes: ReadonlyArray<RouteAccess & { path: string }> = [...ROUTES, OPENAPI_ROUTE],
): string[] {
  return routes.filter((route) => route.public).map((route) => `/v1${route.path.split('{', 1)[0]}`);
}

/** A HEAD request is answered by its GET route, and needs what that route needs. */
export function accessOf(table: RouteAccessTable, method: string, url: string): RouteAccess | undefined {
  const asked = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  return table.get(`${asked} ${url}`);
}
