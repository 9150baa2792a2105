/**
 * The error catalog: every error the API answers with is declared here once, with a stable code, its HTTP
 * status, a message template and what a client should do about it, and raised by name
 * (`throw KG_ERR_TOOL_NOT_FOUND(toolId)`), as fastify does with its `FST_ERR_*`. Clients match on
 * `error.code`; messages may be reworded, codes never change meaning. A code is never reused for another
 * condition. docs/errors.md is generated from this file (`npm run generate`).
 */

/** A path into a request, from its body's (or query's) root: `['steps', 0, 'config', 'transformCode']`. */
export type IssuePath = ReadonlyArray<string | number>;

/**
 * One problem of a refused request, where it is: the path of the field from the body's root and, for
 * JavaScript in a field, the line and column inside that code. Clients show each at its field (the
 * dashboard's forms and JSON editor) without reading the message, which may be reworded.
 */
export interface ErrorIssue {
  path: IssuePath;
  message: string;
  /** In the field's own text (a transform's source), 1-based. */
  line?: number;
  column?: number;
}

/** `steps[0].config.transformCode`: how messages name a path. */
export function formatIssuePath(path: IssuePath): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${part}` : part;
  }
  return out;
}

/** `path: message`, or the message alone for the root. */
export function formatIssue(issue: Pick<ErrorIssue, 'path' | 'message'>): string {
  const path = formatIssuePath(issue.path);
  return path ? `${path}: ${issue.message}` : issue.message;
}

/**
 * Issues as one message (`a: …; b[0]: …`); a string is already formatted (docs/errors.md renders the
 * templates with strings in place of every argument).
 */
function listIssues(issues: string | readonly (ErrorIssue | string)[]): string {
  if (typeof issues === 'string') return issues;
  return issues.map((issue) => (typeof issue === 'string' ? issue : formatIssue(issue))).join('; ');
}

/** The structured issues of an argument that may hold them. */
function structured(issues: string | readonly (ErrorIssue | string)[]): ErrorIssue[] | undefined {
  if (typeof issues === 'string') return undefined;
  const found = issues.filter((issue): issue is ErrorIssue => typeof issue !== 'string');
  return found.length > 0
    ? found.map(({ path, message, line, column }) => ({
        path,
        message,
        ...(line !== undefined ? { line } : {}),
        ...(column !== undefined ? { column } : {}),
      }))
    : undefined;
}

/** A problem of a tool, as the 422 message names it (`steps[1] (shape).config.transformCode`). */
export interface ToolProblem extends ErrorIssue {
  /** The path with the step's id beside its index, for people. */
  field: string;
  /** The step URL's scheme (`mssql:`) when no step can speak it: the save is KG_ERR_PROTOCOL_UNSUPPORTED. */
  unsupportedScheme?: string;
}

/** An error the API answers with; its message is safe to show to the client. */
export class ApiError extends Error {
  readonly code: string;
  readonly statusCode: number;
  /** Response headers that belong to the error (Retry-After, WWW-Authenticate). */
  readonly headers: Readonly<Record<string, string>>;
  /** What the client can do about it: the catalog's text, the same as docs/errors.md. */
  readonly hint: string | undefined;
  /** Each problem at its field, for the errors that refuse input field by field. */
  readonly issues: readonly ErrorIssue[] | undefined;

  constructor(
    code: string,
    statusCode: number,
    message: string,
    headers: Record<string, string> = {},
    hint?: string,
    issues?: readonly ErrorIssue[],
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.statusCode = statusCode;
    this.headers = headers;
    this.hint = hint;
    this.issues = issues;
  }

  /** The `error` object of the answer's body: `{ message, code, hint, issues }`. */
  body(): { message: string; code: string; hint?: string; issues?: ErrorIssue[] } {
    return {
      message: this.message,
      code: this.code,
      ...(this.hint !== undefined ? { hint: this.hint } : {}),
      ...(this.issues !== undefined && this.issues.length > 0 ? { issues: [...this.issues] } : {}),
    };
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
  /** The message for the raise's arguments (docs/errors.md renders it with the parameters' names). */
  message: (args: unknown[]) => string;
  /** The source of the message function: docs/errors.md names the template's parameters after it. */
  source: string;
  /** The headers the answer carries besides the body (Allow, Retry-After, WWW-Authenticate). */
  headers: (args: unknown[]) => Record<string, string>;
  /** What a client does about it: one or two sentences for docs/errors.md. */
  fix: string;
}

const catalog = new Map<string, CatalogEntry>();

function define<Args extends unknown[]>(
  code: string,
  statusCode: number,
  message: (...args: Args) => string,
  fix: string,
  headers?: Record<string, string> | ((...args: Args) => Record<string, string>),
  /** The problems field by field, for errors raised with them (`error.issues` of the body). */
  issues?: (...args: Args) => readonly ErrorIssue[] | undefined,
): ErrorDefinition<Args> {
  // A second declaration of a code would give one code two meanings: refuse it when the module loads.
  if (catalog.has(code)) throw new Error(`error code ${code} is declared twice`);
  const headersOf = (...args: Args) => (typeof headers === 'function' ? headers(...args) : headers);
  catalog.set(code, {
    code,
    statusCode,
    message: (args) => message(...(args as Args)),
    source: message.toString(),
    headers: (args) => headersOf(...(args as Args)) ?? {},
    fix,
  });
  const raise = (...args: Args) =>
    new ApiError(code, statusCode, message(...args), headersOf(...args), fix, issues?.(...args));
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
  (what: string, issues: string | readonly ErrorIssue[]) => `Invalid ${what}: ${listIssues(issues)}`,
  'Fix each field the message names (it gives the path and the rule) and send the request again; GET /v1/openapi.json has the schema of every body.',
  undefined,
  (_what, issues) => structured(issues),
);
export const KG_ERR_INPUTS_INVALID = define(
  'KG_ERR_INPUTS_INVALID',
  400,
  (toolId: string, violations: readonly ErrorIssue[]) =>
    `Inputs do not match the inputSchema of tool '${toolId}': ${listIssues(violations)}`,
  "Send inputs that satisfy the tool's inputSchema (GET /v1/tools/{id} shows it); every violation is listed by path, and no run was stored.",
  undefined,
  (_toolId, violations) => structured(violations),
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

// --- API keys and authorisation ---

/** Every 401 names the scheme to use (RFC 9110); an unknown key is `invalid_token` (RFC 6750). */
const API_REALM = 'Bearer realm="kubeglue"';
export const KG_ERR_MISSING_API_KEY = define(
  'KG_ERR_MISSING_API_KEY',
  401,
  () => 'Missing API key: send Authorization: Bearer <key> or ?token=<key>',
  'Send an API key: Authorization: Bearer <key>, or ?token=<key>.',
  { 'WWW-Authenticate': API_REALM },
);
export const KG_ERR_INVALID_API_KEY = define(
  'KG_ERR_INVALID_API_KEY',
  401,
  () => 'Invalid or revoked API key',
  'Use a valid key: this one is unknown or revoked (a revocation made on another replica applies within 10 s). Keys are created with POST /v1/api-keys.',
  { 'WWW-Authenticate': `${API_REALM}, error="invalid_token"` },
);
/** The key lacks a scope the route declares (contract/api/routes.ts). */
export const KG_ERR_SCOPE_REQUIRED = define(
  'KG_ERR_SCOPE_REQUIRED',
  403,
  (scope: string, operation: string) =>
    `This API key lacks the scope '${scope}' that ${operation} needs: use a key with it, or ask an admin to create one (POST /v1/api-keys with "scopes")`,
  'Use a key with the scope the message names, or ask an admin for one (docs/security.md lists what each scope allows).',
);
/** A key limited to some tools asked for something that is not about one of its tools. */
export const KG_ERR_KEY_RESTRICTED = define(
  'KG_ERR_KEY_RESTRICTED',
  403,
  () => 'This API key is limited to specific tools',
  'The key is limited to some tools and the request is not about one of them (an unsaved definition, a step run, a new tool outside its list): use a key that is not limited, or one whose toolIds include the tool.',
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
  'Use a key whose systemIds include the system, or ask an admin to grant it.',
);
/** A key tried to create a key with more than it has itself, or to revoke such a key. */
export const KG_ERR_GRANT_EXCEEDS_KEY = define(
  'KG_ERR_GRANT_EXCEEDS_KEY',
  403,
  (action: 'create' | 'revoke', problem: string) =>
    `An API key can ${action} only keys with no more than it has itself, and this one ${problem}`,
  'Create or revoke only keys with no more scopes, tools and systems than the key you use, or use an admin key.',
);
export const KG_ERR_API_KEY_NOT_FOUND = define(
  'KG_ERR_API_KEY_NOT_FOUND',
  404,
  () => 'API key not found',
  "Check the key's id: GET /v1/api-keys lists the keys; it may have been revoked already.",
);
export const KG_ERR_ADMIN_KEY_WITH_TOOLS = define(
  'KG_ERR_ADMIN_KEY_WITH_TOOLS',
  400,
  () =>
    'An admin API key has every scope and no restriction: give "scopes", "toolIds" or "systemIds" without "admin": true',
  'Send either "admin": true alone, or scopes, toolIds and systemIds without admin.',
);
export const KG_ERR_LAST_ADMIN_KEY = define(
  'KG_ERR_LAST_ADMIN_KEY',
  409,
  () =>
    'Cannot revoke the last admin API key: nobody could manage API keys any more. Create another admin key first.',
  'Create another admin key first, then revoke this one.',
);

// --- Tools ---

/** Also the answer for a tool the key may not use: "not yours" and "does not exist" look the same. */
export const KG_ERR_TOOL_NOT_FOUND = define(
  'KG_ERR_TOOL_NOT_FOUND',
  404,
  (toolId: string) => `Tool '${toolId}' not found`,
  'Check the id: GET /v1/tools lists the tools the key may see (archived ones with ?includeArchived=true). A key limited to tools gets this answer for every other tool.',
);
export const KG_ERR_TOOL_EXISTS = define(
  'KG_ERR_TOOL_EXISTS',
  409,
  (toolId: string) => `Tool '${toolId}' already exists`,
  'Choose another id, or change the tool with PUT /v1/tools/{id}.',
);
export const KG_ERR_TOOL_ID_MISMATCH = define(
  'KG_ERR_TOOL_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) => `The body's id '${bodyId}' differs from the path's '${pathId}'`,
  "Leave id out of the body or make it the path's id; a tool is not renamed (create it under the new id, then delete the old one).",
);
export const KG_ERR_TOOL_CHANGED_CONCURRENTLY = define(
  'KG_ERR_TOOL_CHANGED_CONCURRENTLY',
  409,
  (toolId: string) => `Tool '${toolId}' is being changed concurrently; retry`,
  'Another write changed the tool at the same moment: read it again and retry.',
);
/** `field: message; …` (docs/errors.md renders the templates with strings in place of the problems). */
const toolProblemList = (problems: readonly ToolProblem[]): string =>
  problems
    .map((problem) => (typeof problem === 'string' ? problem : `${problem.field}: ${problem.message}`))
    .join('; ');

/** Save-time validation: every problem, each naming its step and field. */
export const KG_ERR_TOOL_INVALID = define(
  'KG_ERR_TOOL_INVALID',
  422,
  (problems: readonly ToolProblem[]) => `Invalid tool: ${toolProblemList(problems)}`,
  'Fix every problem listed (each names its step and field: a transform that does not compile, an invalid JSON Schema, an unknown system, a step URL without scheme or system, an expression in SQL text) and save again.',
  undefined,
  (problems) => structured(problems),
);
/** Save-time validation found a step that speaks a protocol kubeglue does not (MSSQL, MongoDB, …). */
export const KG_ERR_PROTOCOL_UNSUPPORTED = define(
  'KG_ERR_PROTOCOL_UNSUPPORTED',
  422,
  (problems: readonly ToolProblem[]) => `Unsupported protocol: ${toolProblemList(problems)}`,
  'A step URL (or the base URL of the system a relative step uses) has a scheme no step speaks: MSSQL and MongoDB systems can be stored but no step can use them yet (docs/tools.md#other-protocols lists the protocols). Use a supported protocol and save again. A connection test of such a system (POST /v1/systems/{id}/test) is refused the same way.',
  undefined,
  (problems) => structured(problems),
);
export const KG_ERR_TOOL_ARCHIVED = define(
  'KG_ERR_TOOL_ARCHIVED',
  400,
  (toolId: string) => `Tool '${toolId}' is archived and cannot be run`,
  'Unarchive the tool first: PUT /v1/tools/{id} with {"archived": false}.',
);

// --- Runs ---

/** Also the answer for a run of a tool the key may not use. */
export const KG_ERR_RUN_NOT_FOUND = define(
  'KG_ERR_RUN_NOT_FOUND',
  404,
  (runId: string) => `Run '${runId}' not found`,
  'Check the run id: GET /v1/runs lists runs. Runs are deleted after KUBEGLUE_RUN_RETENTION, and a key limited to tools sees only their runs.',
);
export const KG_ERR_RUN_ID_CONFLICT = define(
  'KG_ERR_RUN_ID_CONFLICT',
  409,
  (runId: string) => `Run id '${runId}' is already used by another tool or other inputs`,
  'Choose a new runId: a repeated runId returns the existing run only with the same tool and inputs.',
);
export const KG_ERR_RUN_NOT_CANCELLABLE = define(
  'KG_ERR_RUN_NOT_CANCELLABLE',
  400,
  (runId: string, status: 'success' | 'failed') =>
    `Run '${runId}' already ${status === 'success' ? 'succeeded' : 'failed'}; only running runs can be cancelled`,
  'Nothing to cancel: the run already succeeded or failed (only running runs can be cancelled; cancelling an aborted run answers 200).',
);
/** `POST /v1/runs/{runId}/resume` of a run that did not fail: there is no failed step to start at. */
export const KG_ERR_RUN_NOT_RESUMABLE = define(
  'KG_ERR_RUN_NOT_RESUMABLE',
  409,
  (runId: string, status: 'success' | 'running') =>
    `Run '${runId}' ${status === 'success' ? 'succeeded' : 'is still running'}; only a failed or aborted (cancelled) run can be resumed`,
  'Resume a run that failed or was aborted. To run a tool that succeeded again, use POST /v1/tools/{id}/run; wait for (or cancel) a run still running.',
);
/**
 * The steps a resume would reuse have no stored results in full: retention removed them, the run stored
 * none, or they were stored without their data (the run's result was larger than its bound).
 */
export const KG_ERR_RUN_RESULTS_NOT_STORED = define(
  'KG_ERR_RUN_RESULTS_NOT_STORED',
  409,
  (runId: string, reason: string) =>
    `Run '${runId}' cannot be resumed: ${reason}; its earlier steps cannot be reused`,
  "Run the tool again from its first step (POST /v1/tools/{id}/run with the run's inputs). Results are kept for KUBEGLUE_RESULT_RETENTION; a run whose result exceeded KUBEGLUE_MAX_RESULT_BYTES keeps its step results without data.",
);
/** The tool of the run to resume was deleted: a resumed run runs the tool's current definition. */
export const KG_ERR_RESUME_TOOL_GONE = define(
  'KG_ERR_RESUME_TOOL_GONE',
  409,
  (runId: string, toolId: string) =>
    `Run '${runId}' cannot be resumed: its tool '${toolId}' no longer exists or was never saved (a resumed run runs the tool's current saved definition)`,
  'Save the tool under that id (again: the steps before the failed one that are defined as they were are still reused), or run a definition with POST /v1/tools/run.',
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
  'Chain only to tools the key is limited to, or start the run with a key that may use the target tool.',
);
export const KG_ERR_WEBHOOK_URL_CREDENTIALS = define(
  'KG_ERR_WEBHOOK_URL_CREDENTIALS',
  400,
  () =>
    'options.webhookUrl must not contain credentials (user:password@): they would be stored and returned with the run. ' +
    'Notifications are signed instead: verify the webhook-signature header with KUBEGLUE_NOTIFY_SECRET (Standard Webhooks)',
  'Remove user:password@ from options.webhookUrl and verify the webhook-signature header with KUBEGLUE_NOTIFY_SECRET instead.',
);
/** The run names a system that does not exist (anymore) in the run's mode. */
export const KG_ERR_RUN_SYSTEM_MISSING = define(
  'KG_ERR_RUN_SYSTEM_MISSING',
  400,
  (systemId: string) => `system '${systemId}' does not exist`,
  "Create the system in the run's mode (dev or prod), or change the tool's steps to a system that exists.",
);
/**
 * A System the run would use is Ready=False (its credentials Secret is missing, does not fit, …): the run
 * is refused, or a ToolRun's run fails, before any request is sent. Kubernetes only (the embedded
 * deployment has no System conditions).
 */
export const KG_ERR_RUN_SYSTEM_NOT_READY = define(
  'KG_ERR_RUN_SYSTEM_NOT_READY',
  409,
  (systemId: string, system: string, reason: string, detail: string) =>
    `System ${system} (system '${systemId}') is not ready: ${reason}${detail ? `: ${detail}` : ''}; the run sent no request`,
  'Fix the System the message names (kubectl describe system <name> shows its Ready condition): e.g. create the credentials Secret it references, or give that Secret the keys its authType needs. Runs start again once the System is Ready.',
);
/** Sync runs beyond KUBEGLUE_MAX_SYNC_RUNS are refused at once rather than held. */
export const KG_ERR_RUN_LIMIT = define(
  'KG_ERR_RUN_LIMIT',
  429,
  (limit: number) =>
    `Too many synchronous runs in progress (at most ${limit} at once); retry shortly, or start the run ` +
    'with options.async: true (asynchronous runs wait in a queue)',
  'Retry after Retry-After, or run with options.async: true (asynchronous runs wait in a queue). KUBEGLUE_MAX_SYNC_RUNS sets the limit.',
  { 'Retry-After': '1' },
);
/** A field superglue's clients send for a feature kubeglue does not have, given a value that would matter. */
export const KG_ERR_UNSUPPORTED_FIELD = define(
  'KG_ERR_UNSUPPORTED_FIELD',
  400,
  (field: string, why: string) => `${field}: ${why} (send it empty or leave it out)`,
  'Leave the field out or send it empty; the message says what kubeglue takes instead (runtime credentials, inputs).',
);
export const KG_ERR_PAGE_TOO_DEEP = define(
  'KG_ERR_PAGE_TOO_DEEP',
  400,
  (page: number, limit: number, maxRows: number) =>
    `page ${page} with limit ${limit} reaches past the first ${maxRows} runs of the list; narrow it with ` +
    'filters (toolId, status, requestSources, userId, systemId), or page with the cursor: pass the ' +
    'nextCursor of the previous page as ?cursor=',
  "Narrow the list with filters, or page with the cursor: pass the previous page's nextCursor as ?cursor=.",
);
export const KG_ERR_CURSOR_INVALID = define(
  'KG_ERR_CURSOR_INVALID',
  400,
  () => 'cursor: not a cursor this API returned (use the nextCursor of the previous page as it is)',
  "Pass the previous page's nextCursor unchanged, or start again without a cursor.",
);

// --- Files ---

export const KG_ERR_FILE_NOT_FOUND = define(
  'KG_ERR_FILE_NOT_FOUND',
  404,
  (fileKey: string, runId: string) => `File '${fileKey}' of run '${runId}' not found`,
  "Check the file key: GET /v1/runs/{runId}/files lists the run's files (they are deleted with the run's results, KUBEGLUE_RESULT_RETENTION).",
);
export const KG_ERR_DOWNLOAD_LINK_INVALID = define(
  'KG_ERR_DOWNLOAD_LINK_INVALID',
  403,
  () => 'Download link is invalid',
  'The link was altered or cut short: get a fresh one with GET /v1/runs/{runId}/files/{fileKey}/download.',
);
export const KG_ERR_DOWNLOAD_LINK_EXPIRED = define(
  'KG_ERR_DOWNLOAD_LINK_EXPIRED',
  403,
  () => 'Download link expired',
  'Links last one hour: get a fresh one with GET /v1/runs/{runId}/files/{fileKey}/download.',
);

// --- Incoming webhooks ---

export const KG_ERR_WEBHOOK_BODY_INVALID = define(
  'KG_ERR_WEBHOOK_BODY_INVALID',
  400,
  () => 'The webhook body is not valid JSON',
  'Send a JSON body with Content-Type: application/json, or a form body.',
);
export const KG_ERR_NO_CHALLENGE = define(
  'KG_ERR_NO_CHALLENGE',
  400,
  () =>
    'No challenge to answer: expected hub.mode=subscribe with hub.challenge, validationToken or challenge',
  'GET /v1/hooks/{id} only answers challenges (hub.mode=subscribe with hub.challenge, validationToken, or challenge); POST runs the tool.',
);

// --- Systems ---

export const KG_ERR_SYSTEM_NOT_FOUND = define(
  'KG_ERR_SYSTEM_NOT_FOUND',
  404,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`}${environment ? ` (${environment})` : ''} not found`,
  'Check the id and ?environment=: GET /v1/systems lists the systems the key may see.',
);
// --- System documentation ---

export const KG_ERR_DOCUMENTATION_NOT_FOUND = define(
  'KG_ERR_DOCUMENTATION_NOT_FOUND',
  404,
  (systemId: string) =>
    `system '${systemId}' has no documentation: set documentationUrl or PUT a file to /v1/systems/${systemId}/documentation`,
  'Set documentationUrl on the system, or upload a file: PUT /v1/systems/{id}/documentation.',
);
export const KG_ERR_DOCUMENTATION_NOT_READY = define(
  'KG_ERR_DOCUMENTATION_NOT_READY',
  409,
  (systemId: string, status: string, error?: string) =>
    `the documentation of system '${systemId}' is ${status}${error ? `: ${error}` : ''}; no summary is kept yet`,
  "Wait until the system's documentation.status is ready (GET /v1/systems/{id}); a failed one says why in documentation.error: correct it, then update the system or upload again.",
);
export const KG_ERR_DOCUMENTATION_EMPTY = define(
  'KG_ERR_DOCUMENTATION_EMPTY',
  400,
  () => 'the documentation upload is empty: send the file as the request body',
  'Send the file as the request body.',
);

export const KG_ERR_SYSTEM_EXISTS = define(
  'KG_ERR_SYSTEM_EXISTS',
  409,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} already exists${environment ? ` in environment ${environment}` : ''}`,
  'Choose another id or environment, or change the system with PUT or PATCH /v1/systems/{id}.',
);
export const KG_ERR_SYSTEM_CHANGED_CONCURRENTLY = define(
  'KG_ERR_SYSTEM_CHANGED_CONCURRENTLY',
  409,
  (systemId?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} was changed concurrently; try again`,
  'Another write changed the system at the same moment: read it again and retry.',
);
export const KG_ERR_SYSTEM_ID_MISMATCH = define(
  'KG_ERR_SYSTEM_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) =>
    `id in the body ('${bodyId}') does not match the system addressed ('${pathId}')`,
  "Leave id out of the body or make it the path's id.",
);
export const KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH',
  400,
  (bodyEnvironment: string, queryEnvironment: string) =>
    `environment in the body (${bodyEnvironment}) does not match ?environment=${queryEnvironment}`,
  'Leave environment out of the body or make it the one ?environment= names.',
);
export const KG_ERR_SYSTEM_IN_USE = define(
  'KG_ERR_SYSTEM_IN_USE',
  409,
  (systemId: string, toolIds: readonly string[]) =>
    `system '${systemId}' is used by ${toolIds.length === 1 ? 'tool' : 'tools'} ${toolIds.map((t) => `'${t}'`).join(', ')}: ` +
    'change them to use another system first, or delete with ?force=true (they then fail to run)',
  'Change the tools it names to another system first, or delete with ?force=true (those tools then fail to run).',
);
export const KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED',
  400,
  (systemId: string) =>
    `system '${systemId}' exists in dev and prod; choose one with ?environment=dev or ?environment=prod`,
  'Name the variant: add ?environment=dev or ?environment=prod.',
);
/** The resource was refused by its schema (the message names fields, never credential values). */
export const KG_ERR_SYSTEM_INVALID = define(
  'KG_ERR_SYSTEM_INVALID',
  400,
  (detail: string) => detail,
  'Fix the fields the message names and send the system again.',
);
export const KG_ERR_SYSTEM_URL_CREDENTIALS = define(
  'KG_ERR_SYSTEM_URL_CREDENTIALS',
  400,
  () =>
    'url must not contain credentials (user:password@): the URL is stored and returned in clear. Give them as ' +
    'credentials.username and credentials.password (authType basic for HTTP, dataStore for databases, Redis ' +
    'and file servers), which are stored encrypted and never returned',
  'Remove user:password@ from url and give credentials.username and credentials.password.',
);
/** A connection test of a system variant that names no server: no url, no connection URL in its credentials. */
export const KG_ERR_SYSTEM_NO_URL = define(
  'KG_ERR_SYSTEM_NO_URL',
  422,
  (systemId: string, environment: string) =>
    `system '${systemId}' (${environment}) has no URL to test: give it a url, or a connection URL in credentials.url`,
  'Give the system a url (PATCH /v1/systems/{id}), or for a data store its connection URL as the credential url; then test again.',
);
export const KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN = define(
  'KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN',
  400,
  (fields: readonly string[]) =>
    `credentials.${fields.join(', credentials.')}: a placeholder keeps a stored value, but this system has none under that name`,
  'A placeholder (<<id_key>>) keeps a stored value; for a credential the system does not have yet, send the value itself.',
);
export const KG_ERR_CREDENTIALS_INCOMPLETE = define(
  'KG_ERR_CREDENTIALS_INCOMPLETE',
  400,
  (fields: readonly string[], authType: string) => `${fields.join(', ')}: required for authType ${authType}`,
  'Add the credentials the message names: the auth type requires them.',
);
/** Deliberately a 500 with a message: the operator must learn the master key is wrong. */
export const KG_ERR_CREDENTIALS_UNREADABLE = define(
  'KG_ERR_CREDENTIALS_UNREADABLE',
  500,
  (systemId?: string) =>
    `the stored credentials of system${systemId === undefined ? '' : ` '${systemId}'`} cannot be decrypted: the master ` +
    'key (KUBEGLUE_MASTER_KEY or master.key in the data directory) is not the one they were stored with, or the data was altered',
  'Start the server with the master key the credentials were stored with (KUBEGLUE_MASTER_KEY, or master.key in the data directory); if that key is lost, store the credentials again.',
);

// --- Internal runner API (api/internal/): answers to runner Pods, which hold only their per-run token ---

const RUNNER_REALM = { 'WWW-Authenticate': 'Bearer realm="kubeglue-internal"' };
export const KG_ERR_MISSING_RUN_TOKEN = define(
  'KG_ERR_MISSING_RUN_TOKEN',
  401,
  () => 'Missing run token: send Authorization: Bearer <token>',
  'Runner Pods only: a runner sends its per-run token (KUBEGLUE_RUN_TOKEN); nothing else may use the internal port.',
  RUNNER_REALM,
);
export const KG_ERR_INVALID_RUN_TOKEN = define(
  'KG_ERR_INVALID_RUN_TOKEN',
  401,
  () => 'Invalid run token, or its run is no longer running',
  'The run has ended or the token is not one kubeglue issued: the runner stops; nothing to do.',
  RUNNER_REALM,
);
export const KG_ERR_RUN_TOKEN_OTHER_RUN = define(
  'KG_ERR_RUN_TOKEN_OTHER_RUN',
  403,
  () => 'This token belongs to another run',
  "A runner may act only on its own run: check the Pod's KUBEGLUE_RUN_ID against its token Secret.",
);
export const KG_ERR_RUN_ATTEMPT_MISMATCH = define(
  'KG_ERR_RUN_ATTEMPT_MISMATCH',
  409,
  (attempt: number) => `Attempt ${attempt} is not the attempt this token was issued for`,
  "The run was handed to a newer attempt (this runner's Pod was given up): this runner's attempt is over; nothing to do.",
);
export const KG_ERR_RUN_EVENTS_GAP = define(
  'KG_ERR_RUN_EVENTS_GAP',
  409,
  (firstSeq: number, lastSeq: number) =>
    `Events refused: the batch starts at ${firstSeq}, but events were accepted only up to ${lastSeq}`,
  'The runner sends its events again from the last accepted one; nothing to do.',
);
export const KG_ERR_RUN_NOT_RUNNING = define(
  'KG_ERR_RUN_NOT_RUNNING',
  409,
  (runId: string) => `Run '${runId}' is no longer running`,
  'The run ended while its runner worked (cancelled, timed out, or decided by the operator): the runner stops; nothing to do.',
);
/** A runner asked for the OAuth token of a system its run's tool does not use. */
export const KG_ERR_RUN_SYSTEM_NOT_USED = define(
  'KG_ERR_RUN_SYSTEM_NOT_USED',
  403,
  (systemId: string) => `This run's tool does not use system '${systemId}'`,
  "A runner gets tokens only for its tool's systems: check the tool's steps.",
);
/** The API serving the internal port manages no OAuth tokens (started without OAuth). */
export const KG_ERR_RUN_TOKENS_UNAVAILABLE = define(
  'KG_ERR_RUN_TOKENS_UNAVAILABLE',
  409,
  (systemId: string) => `system '${systemId}': this API manages no OAuth tokens`,
  'Serve the internal port from kubeglue api, which manages OAuth tokens; this API was started without them.',
);
/** The run's order cannot be built, ever (timed out while queued, a system gone): the run was failed. */
export const KG_ERR_RUN_ORDER_REFUSED = define(
  'KG_ERR_RUN_ORDER_REFUSED',
  409,
  (reason: string) => reason,
  'The run was failed instead of started (it timed out while queued, or a system is gone); its error says why. Run the tool again.',
);

// --- Gateways ---

export const KG_ERR_GATEWAY_NOT_CONNECTED = define(
  'KG_ERR_GATEWAY_NOT_CONNECTED',
  404,
  (tunnelId: string) => `gateway ${tunnelId} is not connected`,
  'Start the agent for that tunnel id, or check its connection: GET /v1/gateways lists the connected tunnels (docs/gateway.md).',
);

export const KG_ERR_TUNNEL_OWNER_NOT_FOUND = define(
  'KG_ERR_TUNNEL_OWNER_NOT_FOUND',
  404,
  (tunnelId: string) => `No API key owns tunnel id '${tunnelId}'`,
  'No key owns that tunnel id: there is nothing to release.',
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
  'Authorize the system again: open the authorizationUrl that GET /v1/systems/{id}/oauth/authorize answers in a browser and consent (docs/oauth.md).',
);
export const KG_ERR_OAUTH_NOT_AUTHORIZED = define(
  'KG_ERR_OAUTH_NOT_AUTHORIZED',
  409,
  (systemId: string, environment: string) =>
    `System '${systemId}' (${environment}) uses the authorization-code grant and has not been authorized ` +
    `yet: ${authorizeHint(systemId, environment)}`,
  'Authorize the system: open the authorizationUrl that GET /v1/systems/{id}/oauth/authorize answers in a browser and consent (docs/oauth.md).',
);
/** The token endpoint answered an RFC 6749 error (names the code and the provider's description only). */
export const KG_ERR_OAUTH_TOKEN_REFUSED = define(
  'KG_ERR_OAUTH_TOKEN_REFUSED',
  502,
  (systemId: string, error: string, description?: string) =>
    `The token endpoint of system '${systemId}' refused the request: ${error}${description ? ` (${description})` : ''}`,
  "Correct the system's OAuth credentials as the provider's error says (invalid_client: clientId and clientSecret; invalid_scope: scopes).",
);
export const KG_ERR_OAUTH_PROVIDER_UNREACHABLE = define(
  'KG_ERR_OAUTH_PROVIDER_UNREACHABLE',
  502,
  (systemId: string, reason: string) => `The token endpoint of system '${systemId}' failed: ${reason}`,
  "Check tokenUrl and that the provider can be reached through the egress guard (KUBEGLUE_EGRESS_*, the system's allowedNetworks), then retry.",
);
export const KG_ERR_OAUTH_REFRESH_BUSY = define(
  'KG_ERR_OAUTH_REFRESH_BUSY',
  503,
  (systemId: string) =>
    `The access token of system '${systemId}' is being refreshed by another process that has not finished; retry`,
  'Another process is refreshing the token: retry after Retry-After.',
  { 'Retry-After': '1' },
);
export const KG_ERR_OAUTH_NOT_CONFIGURED = define(
  'KG_ERR_OAUTH_NOT_CONFIGURED',
  400,
  (systemId: string, what: string) => `System '${systemId}' cannot use OAuth: ${what}`,
  'Give the system authType oauth and the credentials the message names (clientId, clientSecret, tokenUrl; authorizationUrl for the authorization-code grant).',
);
/** Unknown, used, expired, or its API key was revoked: the same answer, so a guess learns nothing. */
export const KG_ERR_OAUTH_STATE_INVALID = define(
  'KG_ERR_OAUTH_STATE_INVALID',
  400,
  () =>
    'The authorization state is unknown, was used already or has expired (10 minutes); start again with ' +
    'GET /v1/systems/{id}/oauth/authorize',
  'Start the authorization again with GET /v1/systems/{id}/oauth/authorize: a state is single use and lasts 10 minutes.',
);
/** Anything but a path or URL of the server's own origin: the callback never sends a browser elsewhere. */
export const KG_ERR_OAUTH_RETURN_INVALID = define(
  'KG_ERR_OAUTH_RETURN_INVALID',
  400,
  (origin: string) =>
    `returnTo must be a path of this server or a URL of its origin (${origin}): the callback sends the ` +
    'browser back there, never to another site',
  "Give returnTo as a path (/systems/crm) or a URL on the origin of KUBEGLUE_PUBLIC_URL, or leave it out to get the callback's answer as JSON.",
);
export const KG_ERR_OAUTH_DENIED = define(
  'KG_ERR_OAUTH_DENIED',
  400,
  (error: string, description?: string) =>
    `The provider did not grant access: ${error}${description ? ` (${description})` : ''}`,
  "Consent was refused at the provider: start the authorization again and grant access, or check the client's settings there.",
);

// --- Schedules ---

export const KG_ERR_SCHEDULE_NOT_FOUND = define(
  'KG_ERR_SCHEDULE_NOT_FOUND',
  404,
  (toolId: string, scheduleId: string) => `Schedule '${scheduleId}' of tool '${toolId}' not found`,
  'Check both ids: GET /v1/tools/{toolId}/schedules lists the schedules of a tool, GET /v1/schedules all the key may see.',
);
export const KG_ERR_SCHEDULE_EXISTS = define(
  'KG_ERR_SCHEDULE_EXISTS',
  409,
  (scheduleId: string) => `Schedule '${scheduleId}' already exists`,
  'Leave out id (a new one is made), choose another, or change the schedule with PUT.',
);
export const KG_ERR_SCHEDULE_INVALID = define(
  'KG_ERR_SCHEDULE_INVALID',
  400,
  (problem: string) => `Invalid schedule: ${problem}`,
  'Give five cron fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily, each field in range, that match some date, and an IANA time zone such as Europe/Berlin.',
);
export const KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY = define(
  'KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY',
  409,
  (scheduleId: string) => `Schedule '${scheduleId}' is being changed concurrently; retry`,
  'Another write changed the schedule at the same moment: read it again and retry.',
);
export const KG_ERR_SCHEDULE_LIMIT = define(
  'KG_ERR_SCHEDULE_LIMIT',
  422,
  (whose: string, limit: number, setting: string) =>
    `${whose} has ${limit} schedules, the most ${setting} allows; no schedule was saved`,
  'Delete schedules that are no longer needed (GET /v1/schedules lists them), or raise the setting the message names (KUBEGLUE_MAX_SCHEDULES_PER_TOOL, KUBEGLUE_MAX_SCHEDULES_PER_KEY).',
);
export const KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE = define(
  'KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE',
  413,
  (bytes: number, limit: number, setting: string) =>
    `The schedule's payload is ${bytes} bytes as JSON, more than the limit of ${limit} bytes; ${setting} raises it`,
  "Keep a schedule's payload small (it is stored in its ToolSchedule resource): let the tool fetch large data itself, or raise the setting the message names.",
);

// --- Persistent tool state ---

export const KG_ERR_TOOL_STATE_LIMIT = define(
  'KG_ERR_TOOL_STATE_LIMIT',
  422,
  (toolId: string, problem: string) => `The state of tool '${toolId}' was not saved: ${problem}`,
  'Keep fewer keys or smaller values (bounded lists, a cursor rather than every id seen), or raise the setting the message names (docs/state.md).',
);
export const KG_ERR_TOOL_STATE_CREDENTIAL = define(
  'KG_ERR_TOOL_STATE_CREDENTIAL',
  422,
  (toolId: string, keys: string) =>
    `The state of tool '${toolId}' was not saved: ${keys} hold a credential value of the tool's systems`,
  'Keep credentials out of state: it is stored unencrypted and shown to every key that may read the tool. The system sends its credentials itself.',
);

// Last: every define() above has run.
/** Every code with its status, message and fix, in declaration order (documentation, tests). */
export const ERROR_CATALOG: readonly CatalogEntry[] = [...catalog.values()];
