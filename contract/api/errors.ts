/**
 * The error catalog: every error the API answers with is declared here once, with a stable code, its HTTP
 * status and a message template, and raised by name (`throw KG_ERR_TOOL_NOT_FOUND(toolId)`), as fastify
 * does with its `FST_ERR_*`. Clients match on `error.code`; messages may be reworded, codes never change
 * meaning. A code is never reused for another condition.
 */

/** An error the API answers with; its message is safe to show to the client. */
export class ApiError extends Error {
  readonly code: string;
  readonly statusCode: number;
  /** Response headers that belong to the error (Retry-After, WWW-Authenticate). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: string, statusCode: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = statusCode;
    this.headers = headers;
  }
}

/** A catalog entry: call it with the template's arguments to get the error to throw. */
export interface ErrorDefinition<Args extends unknown[]> {
  (...args: Args): ApiError;
  readonly code: string;
  readonly statusCode: number;
}

export interface CatalogEntry {
  code: string;
  statusCode: number;
}

const catalog = new Map<string, CatalogEntry>();

function define<Args extends unknown[]>(
  code: string,
  statusCode: number,
  message: (...args: Args) => string,
  headers?: Record<string, string> | ((...args: Args) => Record<string, string>),
): ErrorDefinition<Args> {
  // A second declaration of a code would give one code two meanings: refuse it when the module loads.
  if (catalog.has(code)) throw new Error(`error code ${code} is declared twice`);
  catalog.set(code, { code, statusCode });
  const raise = (...args: Args) =>
    new ApiError(
      code,
      statusCode,
      message(...args),
      typeof headers === 'function' ? headers(...args) : headers,
    );
  return Object.assign(raise, { code, statusCode });
}

/** Whether `error` was raised from this catalog entry. */
export function isApiError(error: unknown, definition?: { code: string }): error is ApiError {
  return error instanceof ApiError && (definition === undefined || error.code === definition.code);
}

// --- Requests in general ---

export const KG_ERR_VALIDATION = define(
  'KG_ERR_VALIDATION',
  400,
  (what: string, issues: string) => `Invalid ${what}: ${issues}`,
);
export const KG_ERR_INPUTS_INVALID = define(
  'KG_ERR_INPUTS_INVALID',
  400,
  (toolId: string, violations: readonly string[]) =>
    `Inputs do not match the inputSchema of tool '${toolId}': ${violations.join('; ')}`,
);
/** Fastify refused the request before a route saw it (malformed JSON, bad URL, bad Content-Length). */
export const KG_ERR_MALFORMED_REQUEST = define('KG_ERR_MALFORMED_REQUEST', 400, (detail: string) => detail);
export const KG_ERR_BODY_TOO_LARGE = define(
  'KG_ERR_BODY_TOO_LARGE',
  413,
  (limitBytes: number, setting: string) =>
    `Request body is larger than the limit of ${limitBytes} bytes; ${setting} raises it`,
);
export const KG_ERR_UNSUPPORTED_MEDIA_TYPE = define(
  'KG_ERR_UNSUPPORTED_MEDIA_TYPE',
  415,
  (contentType: string) =>
    `Unsupported Content-Type ${contentType || '(none)'}: send the body as JSON with Content-Type: application/json`,
);
export const KG_ERR_METHOD_NOT_ALLOWED = define(
  'KG_ERR_METHOD_NOT_ALLOWED',
  405,
  (method: string, path: string, allowed: readonly string[]) =>
    `Method ${method} is not allowed on ${path}; it accepts ${allowed.join(', ')}`,
  (_method: string, _path: string, allowed: readonly string[]) => ({ Allow: allowed.join(', ') }),
);
export const KG_ERR_ROUTE_NOT_FOUND = define(
  'KG_ERR_ROUTE_NOT_FOUND',
  404,
  (method: string, path: string) => `Route ${method} ${path} not found`,
);
export const KG_ERR_NOT_READY = define('KG_ERR_NOT_READY', 503, () => 'Not ready');
export const KG_ERR_SHUTTING_DOWN = define(
  'KG_ERR_SHUTTING_DOWN',
  503,
  () => 'The server is shutting down; retry (another replica, or this one once it is back)',
);
/** Never with details: whatever went wrong is logged, not shown. */
export const KG_ERR_INTERNAL = define('KG_ERR_INTERNAL', 500, () => 'Internal server error');

// --- API keys and authorisation ---

/** Every 401 names the scheme to use (RFC 9110); an unknown key is `invalid_token` (RFC 6750). */
const API_REALM = 'Bearer realm="kubeglue"';
export const KG_ERR_MISSING_API_KEY = define(
  'KG_ERR_MISSING_API_KEY',
  401,
  () => 'Missing API key: send Authorization: Bearer <key> or ?token=<key>',
  { 'WWW-Authenticate': API_REALM },
);
export const KG_ERR_INVALID_API_KEY = define(
  'KG_ERR_INVALID_API_KEY',
  401,
  () => 'Invalid or revoked API key',
  { 'WWW-Authenticate': `${API_REALM}, error="invalid_token"` },
);
/** The key lacks a scope the route declares (contract/api/routes.ts). */
export const KG_ERR_SCOPE_REQUIRED = define(
  'KG_ERR_SCOPE_REQUIRED',
  403,
  (scope: string, operation: string) =>
    `This API key lacks the scope '${scope}' that ${operation} needs: use a key with it, or ask an admin to create one (POST /v1/api-keys with "scopes")`,
);
/** A key limited to some tools asked for something that is not about one of its tools. */
export const KG_ERR_KEY_RESTRICTED = define(
  'KG_ERR_KEY_RESTRICTED',
  403,
  () => 'This API key is limited to specific tools',
);
/**
 * A tool saved or run, or a system created, names a system outside the key's systemIds. Decided by name
 * before the system is looked up, so the answer is the same whether the system exists or not.
 */
export const KG_ERR_SYSTEM_NOT_GRANTED = define(
  'KG_ERR_SYSTEM_NOT_GRANTED',
  403,
  (systemId: string, where?: string) =>
    `This API key may not use system '${systemId}'${where ? ` (${where})` : ''}: its systemIds do not include it; use a key that may, or ask an admin for one`,
);
/** A key tried to create a key with more than it has itself, or to revoke such a key. */
export const KG_ERR_GRANT_EXCEEDS_KEY = define(
  'KG_ERR_GRANT_EXCEEDS_KEY',
  403,
  (action: 'create' | 'revoke', problem: string) =>
    `An API key can ${action} only keys with no more than it has itself, and this one ${problem}`,
);
export const KG_ERR_API_KEY_NOT_FOUND = define('KG_ERR_API_KEY_NOT_FOUND', 404, () => 'API key not found');
export const KG_ERR_ADMIN_KEY_WITH_TOOLS = define(
  'KG_ERR_ADMIN_KEY_WITH_TOOLS',
  400,
  () =>
    'An admin API key has every scope and no restriction: give "scopes", "toolIds" or "systemIds" without "admin": true',
);
export const KG_ERR_LAST_ADMIN_KEY = define(
  'KG_ERR_LAST_ADMIN_KEY',
  409,
  () =>
    'Cannot revoke the last admin API key: nobody could manage API keys any more. Create another admin key first.',
);

// --- Tools ---

/** Also the answer for a tool the key may not use: "not yours" and "does not exist" look the same. */
export const KG_ERR_TOOL_NOT_FOUND = define(
  'KG_ERR_TOOL_NOT_FOUND',
  404,
  (toolId: string) => `Tool '${toolId}' not found`,
);
export const KG_ERR_TOOL_EXISTS = define(
  'KG_ERR_TOOL_EXISTS',
  409,
  (toolId: string) => `Tool '${toolId}' already exists`,
);
export const KG_ERR_TOOL_ID_MISMATCH = define(
  'KG_ERR_TOOL_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) => `The body's id '${bodyId}' differs from the path's '${pathId}'`,
);
export const KG_ERR_TOOL_CHANGED_CONCURRENTLY = define(
  'KG_ERR_TOOL_CHANGED_CONCURRENTLY',
  409,
  (toolId: string) => `Tool '${toolId}' is being changed concurrently; retry`,
);
/** Save-time validation: every problem, each naming its step and field. */
export const KG_ERR_TOOL_INVALID = define(
  'KG_ERR_TOOL_INVALID',
  422,
  (problems: readonly string[]) => `Invalid tool: ${problems.join('; ')}`,
);
export const KG_ERR_TOOL_ARCHIVED = define(
  'KG_ERR_TOOL_ARCHIVED',
  400,
  (toolId: string) => `Tool '${toolId}' is archived and cannot be run`,
);

// --- Runs ---

/** Also the answer for a run of a tool the key may not use. */
export const KG_ERR_RUN_NOT_FOUND = define(
  'KG_ERR_RUN_NOT_FOUND',
  404,
  (runId: string) => `Run '${runId}' not found`,
);
export const KG_ERR_RUN_ID_CONFLICT = define(
  'KG_ERR_RUN_ID_CONFLICT',
  409,
  (runId: string) => `Run id '${runId}' is already used by another tool or other inputs`,
);
export const KG_ERR_RUN_NOT_CANCELLABLE = define(
  'KG_ERR_RUN_NOT_CANCELLABLE',
  400,
  (runId: string, status: 'success' | 'failed') =>
    `Run '${runId}' already ${status === 'success' ? 'succeeded' : 'failed'}; only running runs can be cancelled`,
);
/**
 * The key may not use the chain target. Answered before the target is looked up, so it is the same
 * whether that tool exists or not; the name is the caller's own input.
 */
export const KG_ERR_CHAIN_TARGET_FORBIDDEN = define(
  'KG_ERR_CHAIN_TARGET_FORBIDDEN',
  403,
  (toolId: string) =>
    `options.webhookUrl: this API key may not chain to tool '${toolId}'; it may chain only to the tools it is limited to`,
);
export const KG_ERR_WEBHOOK_URL_CREDENTIALS = define(
  'KG_ERR_WEBHOOK_URL_CREDENTIALS',
  400,
  () =>
    'options.webhookUrl must not contain credentials (user:password@): they would be stored and returned with the run. ' +
    'Notifications are signed instead: verify the webhook-signature header with KUBEGLUE_NOTIFY_SECRET (Standard Webhooks)',
);
/** The run names a system that does not exist (anymore) in the run's mode. */
export const KG_ERR_RUN_SYSTEM_MISSING = define(
  'KG_ERR_RUN_SYSTEM_MISSING',
  400,
  (systemId: string) => `system '${systemId}' does not exist`,
);
/** Sync runs beyond KUBEGLUE_MAX_SYNC_RUNS are refused at once rather than held. */
export const KG_ERR_RUN_LIMIT = define(
  'KG_ERR_RUN_LIMIT',
  429,
  (limit: number) =>
    `Too many synchronous runs in progress (at most ${limit} at once); retry shortly, or start the run ` +
    'with options.async: true (asynchronous runs wait in a queue)',
  { 'Retry-After': '1' },
);
/** A field superglue's clients send for a feature kubeglue does not have, given a value that would matter. */
export const KG_ERR_UNSUPPORTED_FIELD = define(
  'KG_ERR_UNSUPPORTED_FIELD',
  400,
  (field: string, why: string) => `${field}: ${why} (send it empty or leave it out)`,
);
export const KG_ERR_PAGE_TOO_DEEP = define(
  'KG_ERR_PAGE_TOO_DEEP',
  400,
  (page: number, limit: number, maxRows: number) =>
    `page ${page} with limit ${limit} reaches past the first ${maxRows} runs of the list; narrow it with ` +
    'filters (toolId, status, requestSources, userId, systemId), or page with the cursor: pass the ' +
    'nextCursor of the previous page as ?cursor=',
);
export const KG_ERR_CURSOR_INVALID = define(
  'KG_ERR_CURSOR_INVALID',
  400,
  () => 'cursor: not a cursor this API returned (use the nextCursor of the previous page as it is)',
);

// --- Files ---

export const KG_ERR_FILE_NOT_FOUND = define(
  'KG_ERR_FILE_NOT_FOUND',
  404,
  (fileKey: string, runId: string) => `File '${fileKey}' of run '${runId}' not found`,
);
export const KG_ERR_DOWNLOAD_LINK_INVALID = define(
  'KG_ERR_DOWNLOAD_LINK_INVALID',
  403,
  () => 'Download link is invalid',
);
export const KG_ERR_DOWNLOAD_LINK_EXPIRED = define(
  'KG_ERR_DOWNLOAD_LINK_EXPIRED',
  403,
  () => 'Download link expired',
);

// --- Incoming webhooks ---

export const KG_ERR_WEBHOOK_BODY_INVALID = define(
  'KG_ERR_WEBHOOK_BODY_INVALID',
  400,
  () => 'The webhook body is not valid JSON',
);
export const KG_ERR_NO_CHALLENGE = define(
  'KG_ERR_NO_CHALLENGE',
  400,
  () =>
    'No challenge to answer: expected hub.mode=subscribe with hub.challenge, validationToken or challenge',
);

// --- Systems ---

export const KG_ERR_SYSTEM_NOT_FOUND = define(
  'KG_ERR_SYSTEM_NOT_FOUND',
  404,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`}${environment ? ` (${environment})` : ''} not found`,
);
// --- System documentation ---

export const KG_ERR_DOCUMENTATION_NOT_FOUND = define(
  'KG_ERR_DOCUMENTATION_NOT_FOUND',
  404,
  (systemId: string) =>
    `system '${systemId}' has no documentation: set documentationUrl or PUT a file to /v1/systems/${systemId}/documentation`,
);
export const KG_ERR_DOCUMENTATION_NOT_READY = define(
  'KG_ERR_DOCUMENTATION_NOT_READY',
  409,
  (systemId: string, status: string, error?: string) =>
    `the documentation of system '${systemId}' is ${status}${error ? `: ${error}` : ''}; no summary is kept yet`,
);
export const KG_ERR_DOCUMENTATION_EMPTY = define(
  'KG_ERR_DOCUMENTATION_EMPTY',
  400,
  () => 'the documentation upload is empty: send the file as the request body',
);

export const KG_ERR_SYSTEM_EXISTS = define(
  'KG_ERR_SYSTEM_EXISTS',
  409,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} already exists${environment ? ` in environment ${environment}` : ''}`,
);
export const KG_ERR_SYSTEM_CHANGED_CONCURRENTLY = define(
  'KG_ERR_SYSTEM_CHANGED_CONCURRENTLY',
  409,
  (systemId?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} was changed concurrently; try again`,
);
export const KG_ERR_SYSTEM_ID_MISMATCH = define(
  'KG_ERR_SYSTEM_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) =>
    `id in the body ('${bodyId}') does not match the system addressed ('${pathId}')`,
);
export const KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH',
  400,
  (bodyEnvironment: string, queryEnvironment: string) =>
    `environment in the body (${bodyEnvironment}) does not match ?environment=${queryEnvironment}`,
);
export const KG_ERR_SYSTEM_IN_USE = define(
  'KG_ERR_SYSTEM_IN_USE',
  409,
  (systemId: string, toolIds: readonly string[]) =>
    `system '${systemId}' is used by ${toolIds.length === 1 ? 'tool' : 'tools'} ${toolIds.map((t) => `'${t}'`).join(', ')}: ` +
    'change them to use another system first, or delete with ?force=true (they then fail to run)',
);
export const KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED',
  400,
  (systemId: string) =>
    `system '${systemId}' exists in dev and prod; choose one with ?environment=dev or ?environment=prod`,
);
/** The resource was refused by its schema (the message names fields, never credential values). */
export const KG_ERR_SYSTEM_INVALID = define('KG_ERR_SYSTEM_INVALID', 400, (detail: string) => detail);
export const KG_ERR_SYSTEM_URL_CREDENTIALS = define(
  'KG_ERR_SYSTEM_URL_CREDENTIALS',
  400,
  () =>
    'url must not contain credentials (user:password@): the URL is stored and returned in clear. Give them as ' +
    'credentials.username and credentials.password (authType basic for HTTP, dataStore for Postgres, FTP and ' +
    'SFTP), which are stored encrypted and never returned',
);
export const KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN = define(
  'KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN',
  400,
  (fields: readonly string[]) =>
    `credentials.${fields.join(', credentials.')}: a placeholder keeps a stored value, but this system has none under that name`,
);
export const KG_ERR_CREDENTIALS_INCOMPLETE = define(
  'KG_ERR_CREDENTIALS_INCOMPLETE',
  400,
  (fields: readonly string[], authType: string) => `${fields.join(', ')}: required for authType ${authType}`,
);
/** Deliberately a 500 with a message: the operator must learn the master key is wrong. */
export const KG_ERR_CREDENTIALS_UNREADABLE = define(
  'KG_ERR_CREDENTIALS_UNREADABLE',
  500,
  (systemId?: string) =>
    `the stored credentials of system${systemId === undefined ? '' : ` '${systemId}'`} cannot be decrypted: the master ` +
    'key (KUBEGLUE_MASTER_KEY or master.key in the data directory) is not the one they were stored with, or the data was altered',
);

// --- Internal runner API (api/internal/): answers to runner Pods, which hold only their per-run token ---

const RUNNER_REALM = { 'WWW-Authenticate': 'Bearer realm="kubeglue-internal"' };
export const KG_ERR_MISSING_RUN_TOKEN = define(
  'KG_ERR_MISSING_RUN_TOKEN',
  401,
  () => 'Missing run token: send Authorization: Bearer <token>',
  RUNNER_REALM,
);
export const KG_ERR_INVALID_RUN_TOKEN = define(
  'KG_ERR_INVALID_RUN_TOKEN',
  401,
  () => 'Invalid run token, or its run is no longer running',
  RUNNER_REALM,
);
export const KG_ERR_RUN_TOKEN_OTHER_RUN = define(
  'KG_ERR_RUN_TOKEN_OTHER_RUN',
  403,
  () => 'This token belongs to another run',
);
export const KG_ERR_RUN_ATTEMPT_MISMATCH = define(
  'KG_ERR_RUN_ATTEMPT_MISMATCH',
  409,
  (attempt: number) => `Attempt ${attempt} is not the attempt this token was issued for`,
);
export const KG_ERR_RUN_EVENTS_GAP = define(
  'KG_ERR_RUN_EVENTS_GAP',
  409,
  (firstSeq: number, lastSeq: number) =>
    `Events refused: the batch starts at ${firstSeq}, but events were accepted only up to ${lastSeq}`,
);
export const KG_ERR_RUN_NOT_RUNNING = define(
  'KG_ERR_RUN_NOT_RUNNING',
  409,
  (runId: string) => `Run '${runId}' is no longer running`,
);
/** A runner asked for the OAuth token of a system its run's tool does not use. */
export const KG_ERR_RUN_SYSTEM_NOT_USED = define(
  'KG_ERR_RUN_SYSTEM_NOT_USED',
  403,
  (systemId: string) => `This run's tool does not use system '${systemId}'`,
);
/** The API serving the internal port manages no OAuth tokens (started without OAuth). */
export const KG_ERR_RUN_TOKENS_UNAVAILABLE = define(
  'KG_ERR_RUN_TOKENS_UNAVAILABLE',
  409,
  (systemId: string) => `system '${systemId}': this API manages no OAuth tokens`,
);
/** The run's order cannot be built, ever (timed out while queued, a system gone): the run was failed. */
export const KG_ERR_RUN_ORDER_REFUSED = define('KG_ERR_RUN_ORDER_REFUSED', 409, (reason: string) => reason);

// --- Gateways ---

export const KG_ERR_GATEWAY_NOT_CONNECTED = define(
  'KG_ERR_GATEWAY_NOT_CONNECTED',
  404,
  (tunnelId: string) => `gateway ${tunnelId} is not connected`,
);

export const KG_ERR_TUNNEL_OWNER_NOT_FOUND = define(
  'KG_ERR_TUNNEL_OWNER_NOT_FOUND',
  404,
  (tunnelId: string) => `No API key owns tunnel id '${tunnelId}'`,
);

// --- OAuth (systems/oauth/) ---

const authorizeHint = (systemId: string, environment: string) =>
  `GET /v1/systems/${encodeURIComponent(systemId)}/oauth/authorize?environment=${environment}`;

/** The provider refused the refresh token (invalid_grant): only the user can grant access again. */
export const KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED = define(
  'KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED',
  409,
  (systemId: string, environment: string) =>
    `System '${systemId}' (${environment}) needs re-authorization: the provider refused its refresh token ` +
    `(invalid_grant). Authorize it again: ${authorizeHint(systemId, environment)}`,
);
export const KG_ERR_OAUTH_NOT_AUTHORIZED = define(
  'KG_ERR_OAUTH_NOT_AUTHORIZED',
  409,
  (systemId: string, environment: string) =>
    `System '${systemId}' (${environment}) uses the authorization-code grant and has not been authorized ` +
    `yet: ${authorizeHint(systemId, environment)}`,
);
/** The token endpoint answered an RFC 6749 error (names the code and the provider's description only). */
export const KG_ERR_OAUTH_TOKEN_REFUSED = define(
  'KG_ERR_OAUTH_TOKEN_REFUSED',
  502,
  (systemId: string, error: string, description?: string) =>
    `The token endpoint of system '${systemId}' refused the request: ${error}${description ? ` (${description})` : ''}`,
);
export const KG_ERR_OAUTH_PROVIDER_UNREACHABLE = define(
  'KG_ERR_OAUTH_PROVIDER_UNREACHABLE',
  502,
  (systemId: string, reason: string) => `The token endpoint of system '${systemId}' failed: ${reason}`,
);
export const KG_ERR_OAUTH_REFRESH_BUSY = define(
  'KG_ERR_OAUTH_REFRESH_BUSY',
  503,
  (systemId: string) =>
    `The access token of system '${systemId}' is being refreshed by another process that has not finished; retry`,
  { 'Retry-After': '1' },
);
export const KG_ERR_OAUTH_NOT_CONFIGURED = define(
  'KG_ERR_OAUTH_NOT_CONFIGURED',
  400,
  (systemId: string, what: string) => `System '${systemId}' cannot use OAuth: ${what}`,
);
/** Unknown, used, expired, or its API key was revoked: the same answer, so a guess learns nothing. */
export const KG_ERR_OAUTH_STATE_INVALID = define(
  'KG_ERR_OAUTH_STATE_INVALID',
  400,
  () =>
    'The authorization state is unknown, was used already or has expired (10 minutes); start again with ' +
    'GET /v1/systems/{id}/oauth/authorize',
);
export const KG_ERR_OAUTH_DENIED = define(
  'KG_ERR_OAUTH_DENIED',
  400,
  (error: string, description?: string) =>
    `The provider did not grant access: ${error}${description ? ` (${description})` : ''}`,
);

// Last: every define() above has run.
/** Every code with its status, in declaration order (documentation, tests). */
export const ERROR_CATALOG: readonly CatalogEntry[] = [...catalog.values()];
