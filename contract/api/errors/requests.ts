/**
 * Errors of requests in general: validation, malformed or oversized bodies, unknown routes, a server not
 * ready or failing.
 */
import { type CatalogEntry, errorArea } from './define.ts';
import { type ErrorIssue, listIssues } from './issues.ts';

const { define, defineRefusal, entries } = errorArea();

export const KG_ERR_VALIDATION = defineRefusal(
  'KG_ERR_VALIDATION',
  400,
  (what: string, issues: string | readonly ErrorIssue[]) => `Invalid ${what}: ${listIssues(issues)}`,
  'Fix each field the message names (it gives the path and the rule) and send the request again; GET /v1/openapi.json has the schema of every body.',
);
export const KG_ERR_INPUTS_INVALID = defineRefusal(
  'KG_ERR_INPUTS_INVALID',
  400,
  (toolId: string, violations: readonly ErrorIssue[]) =>
    `Inputs do not match the inputSchema of tool '${toolId}': ${listIssues(violations)}`,
  "Send inputs that satisfy the tool's inputSchema (GET /v1/tools/{id} shows it); every violation is listed by path, and no run was stored.",
);
/** Fastify refused the request before a route saw it (malformed JSON, bad URL, bad Content-Length). */
export const KG_ERR_MALFORMED_REQUEST = define(
  'KG_ERR_MALFORMED_REQUEST',
  400,
  (detail: string) => detail,
  'The request could not be read (malformed JSON, a bad URL or Content-Length, JSON nested deeper than 512 levels): correct it as the message says.',
);
export const KG_ERR_BODY_TOO_LARGE = define(
  'KG_ERR_BODY_TOO_LARGE',
  413,
  (limitBytes: number, setting: string) =>
    `Request body is larger than the limit of ${limitBytes} bytes; ${setting} raises it`,
  'Send a smaller body, or raise the setting the message names (KUBEGLUE_BODY_LIMIT_BYTES; KUBEGLUE_DOCS_MAX_BYTES for documentation uploads).',
);
export const KG_ERR_UNSUPPORTED_MEDIA_TYPE = define(
  'KG_ERR_UNSUPPORTED_MEDIA_TYPE',
  415,
  (contentType: string) =>
    `Unsupported Content-Type ${contentType || '(none)'}: send the body as JSON with Content-Type: application/json`,
  'Send the body as JSON with Content-Type: application/json (documentation uploads take any type).',
);
export const KG_ERR_METHOD_NOT_ALLOWED = define(
  'KG_ERR_METHOD_NOT_ALLOWED',
  405,
  (method: string, path: string, allowed: readonly string[]) =>
    `Method ${method} is not allowed on ${path}; it accepts ${allowed.join(', ')}`,
  'Use one of the methods the Allow header lists.',
  (_method: string, _path: string, allowed: readonly string[]) => ({ Allow: allowed.join(', ') }),
);
export const KG_ERR_ROUTE_NOT_FOUND = define(
  'KG_ERR_ROUTE_NOT_FOUND',
  404,
  (method: string, path: string) => `Route ${method} ${path} not found`,
  'Check the method and path: every route is under /v1 and listed in GET /v1/openapi.json.',
);
export const KG_ERR_NOT_READY = define(
  'KG_ERR_NOT_READY',
  503,
  () => 'Not ready',
  'The server is still starting (store, engine workers): retry shortly; GET /readyz answers 200 once it is ready.',
);
export const KG_ERR_SHUTTING_DOWN = define(
  'KG_ERR_SHUTTING_DOWN',
  503,
  () => 'The server is shutting down; retry (another replica, or this one once it is back)',
  'Retry: another replica answers, or this one once it is back.',
);
/** Never with details: whatever went wrong is logged, not shown. */
export const KG_ERR_INTERNAL = define(
  'KG_ERR_INTERNAL',
  500,
  () => 'Internal server error',
  "A bug: the details are in the server's log, never in the answer. Report it with the answer's X-Trace-Id.",
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const REQUEST_ERRORS: readonly CatalogEntry[] = entries;
