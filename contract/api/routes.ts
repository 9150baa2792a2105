/**
 * contract/: the one source of truth for shapes — the /v1 bodies, the route table and the error catalog
 * (api/), the Tool, System and ToolRun resources and their keys (resources/), the wire protocols between
 * processes (wire/: runner ↔ internal API, gateway tunnel frames) and the RBAC rules; `npm run generate`
 * turns them into the CRD YAML, the OpenAPI document and the chart's rules. This file is the /v1 route table:
 * the server registers its routes from it (api/routes/register.ts) and the OpenAPI document is made of it.
 * The operations are declared by tag in routes/ (runs.ts, tools.ts, systems.ts, …; spec.ts says what a
 * route is); the table here puts them in the document's order.
 *
 * May import: nothing of kubeglue's (zod only).
 */
import type { Scope } from './bodies.ts';
import { API_KEY_ROUTES } from './routes/api-keys.ts';
import { FILE_ROUTES } from './routes/files.ts';
import { GATEWAY_ROUTES } from './routes/gateways.ts';
import { HOOK_ROUTES } from './routes/hooks.ts';
import { LOG_ROUTES } from './routes/logs.ts';
import { RUN_ROUTES } from './routes/runs.ts';
import { SCHEDULE_ROUTES } from './routes/schedules.ts';
import type { HttpVerb, RouteAccess, RouteSpec } from './routes/spec.ts';
import { SYSTEM_DOCUMENTATION_ROUTES, SYSTEM_ROUTES } from './routes/systems.ts';
import { TOOL_ROUTES, TOOL_RUN_ROUTES, TOOL_STATE_ROUTES } from './routes/tools.ts';

export type { HttpVerb, RouteAccess, RouteBody, RouteResponse, RouteSpec } from './routes/spec.ts';
export { queryOf, tokenQuery } from './routes/spec.ts';
export { MANIFEST_YAML } from './routes/tools.ts';

/**
 * The /v1 routes that are not operations of the table, and why; the server registers no other /v1 route
 * (test/integration/api/route-table.test.ts). Outside /v1 there are only the probes, /metrics, the MCP
 * endpoint (MCP_ROUTE) and the identity tokens' public keys (JWKS_ROUTE).
 */
export const OPENAPI_ROUTE = {
  method: 'GET',
  /** The document of this table itself. */
  path: '/openapi.json',
  public: true,
} as const satisfies { method: HttpVerb; path: string } & RouteAccess;

/** The gateway agents' WebSocket (`GET /v1/tunnel`, upgraded on the server's socket, not a fastify route). */
export const TUNNEL_ROUTE = {
  method: 'GET',
  path: '/tunnel',
  scopes: ['gateways:host'],
} as const satisfies { method: HttpVerb; path: string; scopes: readonly Scope[] };

/**
 * The Model Context Protocol endpoint (api/mcp/, docs/mcp.md): JSON-RPC over the Streamable HTTP transport,
 * not a REST operation, so outside /v1 and the OpenAPI document. Its tools are the tools the key may run, and
 * they carry the tools' definitions: the key needs both scopes to connect.
 */
export const MCP_ROUTE = {
  method: 'POST',
  path: '/mcp',
  scopes: ['tools:read', 'runs:execute'],
} as const satisfies { method: HttpVerb; path: string; scopes: readonly Scope[] };

/**
 * The public keys that verify the identity tokens request steps send (`<<kubeglue_identity_jwt>>`,
 * docs/operations.md#outbound-identity): a JSON Web Key Set (RFC 7517), where verifiers look for it
 * (`<issuer>/.well-known/jwks.json`), so outside /v1 and without a key.
 */
export const JWKS_ROUTE = {
  method: 'GET',
  path: '/.well-known/jwks.json',
  public: true,
} as const satisfies { method: HttpVerb; path: string } & RouteAccess;

/**
 * Every /v1 operation. The order is the OpenAPI document's; `as const` keeps each route's schemas in its
 * type, so a handler's input is typed from its route (api/routes/register.ts).
 */
export const ROUTE_TABLE = [
  ...RUN_ROUTES,
  ...FILE_ROUTES,
  ...TOOL_ROUTES,
  ...SYSTEM_DOCUMENTATION_ROUTES,
  ...TOOL_RUN_ROUTES,
  ...LOG_ROUTES,
  ...HOOK_ROUTES,
  ...SYSTEM_ROUTES,
  ...API_KEY_ROUTES,
  ...GATEWAY_ROUTES,
  ...TOOL_STATE_ROUTES,
  ...SCHEDULE_ROUTES,
] as const satisfies readonly RouteSpec[];

/** The route table as data (for code that walks every route without needing each one's own types). */
export const ROUTES: readonly RouteSpec[] = ROUTE_TABLE;
