/**
 * contract/: the one source of truth for shapes — the /v1 bodies, the route table and the error catalog
 * (api/), the Tool, System and ToolRun resources and their keys (resources/), the wire protocols between
 * processes (wire/: runner ↔ internal API, gateway tunnel frames) and the RBAC rules; `npm run generate`
 * turns them into the CRD YAML, the OpenAPI document and the chart's rules. This file is the /v1 route table:
 * the server registers its routes from it (api/routes/register.ts) and the OpenAPI document is made of it.
 *
 * May import: nothing of kubeglue's (zod only).
 */
import { z } from 'zod';
import { ToolManifest } from '../resources/kinds.ts';
import {
  ApiKeyCreateBody,
  ApiKeyCreated,
  ApiKeyList,
  DeleteResult,
  ErrorBody,
  Gateway,
  GatewayList,
  ListToolsQuery,
  Me,
  RunList,
  type Scope,
  SystemDeleteResult,
  SystemList,
  ToolList,
} from './bodies.ts';
import { DocumentationSearchAnswer, DocumentationSearchBody } from './documentation.ts';
import { OAuthAuthorization, OAuthAuthorizeQuery, OAuthCallbackQuery, OAuthCallbackResult } from './oauth.ts';
import { pageLimit } from './paging.ts';
import {
  DraftRunQuery,
  DraftRunRequest,
  ExecutionMode,
  FileDownloadInfo,
  FileList,
  ListRunsQuery,
  LogStreamQuery,
  ResumeRunRequest,
  Run,
  RunLogEvent,
  RunRequest,
  RunResults,
  StepRunQuery,
  StepRunRequest,
  StepRunResult,
  WebhookAccepted,
} from './run.ts';
import { RunStats, RunStatsQuery } from './run-stats.ts';
import {
  ListSchedulesQuery,
  ScheduleNextRuns,
  ScheduleNextRunsQuery,
  ToolSchedule,
  ToolScheduleCreateBody,
  ToolScheduleList,
  ToolScheduleUpdateBody,
} from './schedule.ts';
import {
  ConnectionTestResult,
  CredentialSetList,
  Environment,
  SystemCreateBody,
  SystemDocumentationEnvelope,
  SystemDocumentationStateEnvelope,
  SystemEnvelope,
  SystemUpdateBody,
} from './system.ts';
import { Tool, ToolCreateBody, ToolUpdateBody } from './tool.ts';
import {
  ToolStateAnswer,
  ToolStateDeleteAnswer,
  ToolStatePutAnswer,
  ToolStatePutBody,
} from './tool-state.ts';

export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** Other media types the same schema is answered in, chosen by the request's Accept header. */
  alsoAs?: readonly string[];
}

/** A route's request body as the server checks it. */
export interface RouteBody {
  schema: z.ZodType;
  /** What a 400 calls the body: `Invalid run request: options.timeout: …`. */
  name: string;
  /** A request without a body is checked as `{}` (every field may be left out, or the 400 names them). */
  optional?: true;
}

interface RouteBase {
  method: HttpVerb;
  /** OpenAPI form, relative to /v1: `/tools/{toolId}`. Each parameter is a non-empty string. */
  path: string;
  operationId: string;
  summary: string;
  tag: 'Runs' | 'Tools' | 'Hooks' | 'Systems' | 'API keys' | 'Files' | 'Logs' | 'Gateways' | 'Schedules';
  /** The query parameters; without it, the API key's `token` alone. */
  query?: z.ZodObject;
  body?: RouteBody;
  /** Body content types other than JSON the route accepts. */
  bodyContentTypes?: readonly string[];
  responses: Readonly<Record<number, RouteResponse>>;
}

/**
 * Who may call a route, declared here and nowhere else: the auth hook enforces it for every request, and
 * a /v1 route registered without an entry here makes the server refuse to start (api/auth.ts).
 */
export type RouteAccess =
  /** Needs no API key (the URL itself is the credential). */
  | { public: true; scopes?: never; unrestricted?: never }
  | {
      public?: false;
      /** Scopes the key needs, all of them; empty: any valid key. */
      scopes: readonly Scope[];
      /**
       * Only for keys not limited to tools: the operation is not about one named tool (a definition that
       * is not saved may carry any id), so a tool restriction could not be applied to it.
       */
      unrestricted?: true;
    };

/** One operation of the /v1 API: the single description both the OpenAPI document and the server use. */
export type RouteSpec = RouteBase & RouteAccess;

/**
 * The /v1 routes that are not operations of the table, and why; the server registers no other /v1 route
 * (test/integration/api/route-table.test.ts). Outside /v1 there are only the probes, /metrics and the MCP
 * endpoint (MCP_ROUTE).
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

/** The query of routes that declare none: the API key may come as `?token=`. */
export const tokenQuery = z.strictObject({ token: z.string().optional() });

/** The query parameters a route takes. */
export function queryOf(route: Pick<RouteSpec, 'query'>): z.ZodObject {
  return route.query ?? tokenQuery;
}

const envQuery = z.strictObject({ environment: Environment.optional(), token: z.string().optional() });
/**
 * A parameter of a route that never refused one given twice (it arrives as an array): it reads as absent
 * (a webhook challenge given twice is no challenge: 400 KG_ERR_NO_CHALLENGE).
 */
const lenientParameter = z.string().optional().catch(undefined);
/** GET and DELETE of one tool have never checked their query: other parameters are ignored there. */
const lenientTokenQuery = z.looseObject({ token: lenientParameter });

/** The media type of a manifest in YAML, as kubectl and GitOps tools read it. */
export const MANIFEST_YAML = 'application/yaml';

const failure = (description: string): RouteResponse => ({ description, schema: ErrorBody });
const notFound = failure('Not found');
const restricted = failure('The API key lacks the scope, or is limited to some tools');
const badRequest = failure('Invalid request');
const adminOnly = failure('The key lacks keys:admin');
const doesNotCompile = failure('A transform, selector or template does not compile');
const tooManySyncRuns = failure('Too many synchronous runs at once; see Retry-After');
const syncRunFinished = {
  description: 'Synchronous run finished; includes data and stepResults',
  schema: Run,
};

/** PUT and PATCH of a system are the same partial update. */
const systemUpdate = {
  path: '/systems/{systemId}',
  tag: 'Systems',
  scopes: ['systems:write'],
  query: envQuery,
  body: { schema: SystemUpdateBody, name: 'system update', optional: true },
  responses: {
    200: { description: 'The updated system', schema: SystemEnvelope },
    400: badRequest,
    404: notFound,
  },
} as const;

/**
 * Every /v1 operation. The order is the OpenAPI document's; `as const` keeps each route's schemas in its
 * type, so a handler's input is typed from its route (api/routes/register.ts).
 */
export const ROUTE_TABLE = [
  {
    method: 'GET',
    path: '/runs',
    operationId: 'listRuns',
    summary: 'List runs',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: ListRunsQuery,
    responses: {
      200: { description: 'Runs, newest first', schema: RunList },
      400: failure('Invalid query, a page past the first 10 000 runs, or a bad cursor'),
    },
  },
  {
    method: 'GET',
    // Not /runs/stats: "stats" is a valid run id, and a static route would hide that run's GET.
    path: '/stats/runs',
    operationId: 'getRunStats',
    summary: 'Runs of a time window by status and tool (p50/p95 durations), and the async runs waiting',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: RunStatsQuery,
    responses: {
      200: {
        description: 'The window in buckets and per tool; a key limited to tools sees only those',
        schema: RunStats,
      },
      400: failure('Invalid query, or a window longer than 7 days or of more than 1 440 buckets'),
    },
  },
  {
    method: 'GET',
    path: '/runs/{runId}',
    operationId: 'getRun',
    summary: 'Run status and metadata',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'The run, with fresh download URLs', schema: Run }, 404: notFound },
  },
  {
    method: 'POST',
    path: '/runs/{runId}/cancel',
    operationId: 'cancelRun',
    summary: 'Cancel a run',
    tag: 'Runs',
    scopes: ['runs:execute'],
    responses: {
      200: { description: 'Cancelled (or already aborted)', schema: Run },
      400: failure('The run already succeeded or failed'),
      404: notFound,
    },
  },
  {
    method: 'POST',
    path: '/runs/{runId}/resume',
    operationId: 'resumeRun',
    summary:
      "Resume a failed run: a new run of the tool's current definition from the failed step, reusing the unchanged steps before it",
    tag: 'Runs',
    scopes: ['runs:execute'],
    body: { schema: ResumeRunRequest, name: 'resume request', optional: true },
    responses: {
      200: syncRunFinished,
      202: { description: 'Asynchronous resumed run accepted', schema: Run },
      400: failure('Invalid request, archived tool, or credentials in options.webhookUrl'),
      403: failure('options.webhookUrl chains to a tool this API key may not use'),
      404: failure('No such run, or one of a tool this API key may not use'),
      409: failure(
        'The run succeeded or is running, its earlier step results are not stored in full, its tool no longer exists, or runId is reused',
      ),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/results',
    operationId: 'getRunResults',
    summary: 'Full run results',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: z.strictObject({ truncate: z.enum(['true', 'false']).optional(), token: z.string().optional() }),
    responses: { 200: { description: 'Stored results', schema: RunResults }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/files',
    operationId: 'listRunFiles',
    summary: 'List file artifacts',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'Files with fresh presigned URLs', schema: FileList }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/files/{fileKey}/download',
    operationId: 'getRunFileDownload',
    summary: 'Fresh download URL for one file',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'Download info', schema: FileDownloadInfo }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/files/{runId}/{fileKey}',
    operationId: 'downloadFile',
    summary: 'Download a file artifact through its presigned URL (no API key)',
    tag: 'Files',
    public: true,
    // Other parameters are ignored: only the signed ones count.
    query: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
    responses: {
      200: { description: 'The file', contentType: 'application/octet-stream' },
      403: failure('The link expired or was altered'),
      404: notFound,
    },
  },
  {
    method: 'GET',
    path: '/tools',
    operationId: 'listTools',
    summary: 'List tools',
    tag: 'Tools',
    scopes: ['tools:read'],
    query: ListToolsQuery,
    responses: { 200: { description: 'Tools', schema: ToolList }, 400: badRequest },
  },
  {
    method: 'POST',
    path: '/tools',
    operationId: 'createTool',
    summary: 'Create a tool',
    tag: 'Tools',
    scopes: ['tools:write'],
    body: { schema: ToolCreateBody, name: 'tool' },
    responses: {
      201: { description: 'Created', schema: Tool },
      400: badRequest,
      409: failure('A tool with this id exists'),
      422: doesNotCompile,
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}',
    operationId: 'getTool',
    summary: 'Get a tool',
    tag: 'Tools',
    scopes: ['tools:read'],
    query: lenientTokenQuery,
    responses: { 200: { description: 'The tool', schema: Tool }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/manifest',
    operationId: 'getToolManifest',
    summary:
      'The tool as a Tool resource to keep in Git and kubectl apply (YAML with Accept: application/yaml)',
    tag: 'Tools',
    scopes: ['tools:read'],
    responses: {
      200: {
        description: 'The Tool resource: apiVersion, kind, name, namespace and spec',
        schema: ToolManifest,
        alsoAs: [MANIFEST_YAML],
      },
      404: notFound,
    },
  },
  {
    method: 'PUT',
    path: '/tools/{toolId}',
    operationId: 'updateTool',
    summary: 'Update a tool',
    tag: 'Tools',
    scopes: ['tools:write'],
    body: { schema: ToolUpdateBody, name: 'tool update', optional: true },
    responses: {
      200: { description: 'The updated tool', schema: Tool },
      400: badRequest,
      404: notFound,
      409: failure('Concurrent update; retry'),
      422: doesNotCompile,
    },
  },
  {
    method: 'DELETE',
    path: '/tools/{toolId}',
    operationId: 'deleteTool',
    summary: 'Delete a tool',
    tag: 'Tools',
    scopes: ['tools:write'],
    query: lenientTokenQuery,
    responses: { 200: { description: 'Deleted', schema: DeleteResult }, 404: notFound },
  },
  {
    method: 'PUT',
    path: '/systems/{systemId}/documentation',
    operationId: 'uploadSystemDocumentation',
    summary: 'Upload a documentation file (the body, any content type); processed in the background',
    tag: 'Systems',
    scopes: ['systems:write'],
    query: z.strictObject({
      environment: Environment.optional(),
      filename: z
        .string()
        .max(200)
        .optional()
        .describe('The file name (its extension helps detect the format).'),
      token: z.string().optional(),
    }),
    bodyContentTypes: [
      'application/octet-stream',
      'application/json',
      'application/yaml',
      'text/html',
      'application/pdf',
      'application/zip',
      'text/markdown',
      'text/plain',
    ],
    responses: {
      202: { description: 'Accepted; the state is pending', schema: SystemDocumentationStateEnvelope },
      400: badRequest,
      404: notFound,
      413: failure('The file is larger than KUBEGLUE_DOCS_MAX_BYTES'),
    },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}/documentation',
    operationId: 'getSystemDocumentation',
    summary:
      'The processed documentation of a system: its state and the kept summary (format=text: plain text)',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({
      environment: Environment.optional(),
      format: z.enum(['json', 'text']).optional(),
      token: z.string().optional(),
    }),
    responses: {
      200: { description: 'The state and summary (or plain text)', schema: SystemDocumentationEnvelope },
      404: notFound,
      409: failure('format=text while no summary is kept yet'),
    },
  },
  {
    method: 'POST',
    path: '/systems/{systemId}/documentation/search',
    operationId: 'searchSystemDocumentation',
    summary:
      "Keyword search over a system's processed documentation: the best sections, where each came from",
    tag: 'Systems',
    scopes: ['systems:read'],
    query: envQuery,
    body: { schema: DocumentationSearchBody, name: 'documentation search' },
    responses: {
      200: {
        description: 'Ranked sections (none when nothing matched or there is no documentation)',
        schema: DocumentationSearchAnswer,
      },
      400: badRequest,
      404: notFound,
      409: failure('No summary is kept yet: the documentation is still being processed, or failed'),
    },
  },
  {
    method: 'POST',
    path: '/tools/{toolId}/run',
    operationId: 'runTool',
    summary: 'Run a tool',
    tag: 'Tools',
    scopes: ['runs:execute'],
    body: { schema: RunRequest, name: 'run request', optional: true },
    responses: {
      200: syncRunFinished,
      202: { description: 'Asynchronous run accepted', schema: Run },
      400: failure('Invalid request, archived tool, or credentials in options.webhookUrl'),
      403: failure('options.webhookUrl chains to a tool this API key may not use'),
      404: failure('No such tool, or one this API key may not use'),
      409: failure('runId reused with a different tool or inputs'),
      429: failure('Too many synchronous runs at once (KUBEGLUE_MAX_SYNC_RUNS); see Retry-After'),
    },
  },
  {
    method: 'POST',
    path: '/tools/run',
    operationId: 'runToolDefinition',
    summary: 'Run a tool definition without saving it (keys not limited to tools)',
    tag: 'Tools',
    scopes: ['tools:write', 'runs:execute'],
    unrestricted: true,
    query: DraftRunQuery,
    body: { schema: DraftRunRequest, name: 'run request', optional: true },
    responses: {
      200: syncRunFinished,
      202: { description: 'Asynchronous run accepted (createRun=true only)', schema: Run },
      400: failure('Invalid definition or request'),
      403: restricted,
      422: failure('A transform, selector or template does not compile, or a system is unknown'),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'POST',
    path: '/tools/step/run',
    operationId: 'runToolStep',
    summary: 'Run one step with a payload and earlier step results (keys not limited to tools)',
    tag: 'Tools',
    scopes: ['tools:write', 'runs:execute'],
    unrestricted: true,
    query: StepRunQuery,
    body: { schema: StepRunRequest, name: 'step run request', optional: true },
    responses: {
      200: { description: "The step's result", schema: StepRunResult },
      400: failure('Invalid step or request'),
      403: restricted,
      422: failure('The step does not compile, or its system is unknown'),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'GET',
    path: '/logs/stream',
    operationId: 'streamLogs',
    summary: 'Live events of a run, or of the runs of a trace (Server-Sent Events)',
    tag: 'Logs',
    scopes: ['runs:read'],
    query: LogStreamQuery,
    responses: {
      200: {
        description:
          'text/event-stream: one event per line pair (`id:` and `data:` with a RunLogEvent), `: ping` ' +
          'comments every 15 s; ends when the run ends',
        schema: RunLogEvent,
        contentType: 'text/event-stream',
      },
      204: { description: 'Reconnect (Last-Event-ID) after the final event: nothing more will come' },
      400: badRequest,
      404: notFound,
    },
  },
  {
    method: 'POST',
    path: '/hooks/{toolId}',
    operationId: 'triggerHook',
    summary: 'Incoming webhook',
    tag: 'Hooks',
    scopes: ['runs:execute'],
    query: z.looseObject({
      token: lenientParameter,
      mode: ExecutionMode.optional(),
      validationToken: z.string().optional(),
    }),
    // Any body: the tool gets it parsed (JSON, form) and raw (api/routes/hooks.ts).
    body: { schema: z.unknown(), name: 'webhook body' },
    bodyContentTypes: ['application/x-www-form-urlencoded', 'text/plain'],
    responses: {
      200: { description: 'Challenge echoed; the tool did not run' },
      202: { description: 'Accepted; the tool runs asynchronously', schema: WebhookAccepted },
      400: failure('Archived tool or bad body'),
      404: notFound,
    },
  },
  {
    method: 'GET',
    path: '/hooks/{toolId}',
    operationId: 'verifyHook',
    summary: 'Webhook challenge verification',
    tag: 'Hooks',
    scopes: ['runs:execute'],
    query: z.looseObject({
      token: lenientParameter,
      'hub.mode': lenientParameter,
      'hub.challenge': lenientParameter,
      validationToken: lenientParameter,
      challenge: lenientParameter,
    }),
    responses: {
      200: { description: 'The challenge, as plain text', contentType: 'text/plain' },
      400: failure('No recognised challenge'),
      404: notFound,
    },
  },
  {
    method: 'POST',
    path: '/systems',
    operationId: 'createSystem',
    summary: 'Create a system',
    tag: 'Systems',
    scopes: ['systems:write'],
    body: { schema: SystemCreateBody, name: 'system' },
    responses: {
      201: { description: 'Created; credentials shown as placeholders', schema: SystemEnvelope },
      400: badRequest,
      409: failure('This id already exists in this environment'),
    },
  },
  {
    method: 'GET',
    path: '/systems',
    operationId: 'listSystems',
    summary: 'List systems',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({
      page: z.coerce.number().int().min(1).default(1),
      limit: pageLimit(50, 100),
      systemId: z
        .string()
        .min(1)
        .optional()
        .describe('Only the variants of this system id (prod, dev): none when it has none, not a 404.'),
      token: z.string().optional(),
    }),
    responses: { 200: { description: 'Systems', schema: SystemList } },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}',
    operationId: 'getSystem',
    summary: 'Get a system (prod unless environment=dev)',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: envQuery,
    responses: { 200: { description: 'The system', schema: SystemEnvelope }, 404: notFound },
  },
  { method: 'PUT', operationId: 'updateSystem', summary: 'Update a system', ...systemUpdate },
  {
    method: 'PATCH',
    operationId: 'patchSystem',
    summary: 'Update a system (the same partial update as PUT)',
    ...systemUpdate,
  },
  {
    method: 'GET',
    path: '/credentials',
    operationId: 'listCredentialSets',
    summary: "Each system variant's stored credential keys, read-only (superglue's credential sets)",
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({ systemId: z.string().min(1).optional(), token: z.string().optional() }),
    responses: {
      200: { description: 'Credential keys, never values', schema: CredentialSetList },
      403: restricted,
    },
  },
  {
    method: 'DELETE',
    path: '/systems/{systemId}',
    operationId: 'deleteSystem',
    summary: 'Delete a system (409 while tools use it, unless force=true)',
    tag: 'Systems',
    scopes: ['systems:write'],
    query: envQuery.extend({
      force: z
        .enum(['true', 'false'])
        .default('false')
        .transform((v) => v === 'true')
        .describe(
          'Delete the last variant even though tools use it; the answer lists them in brokenTools ' +
            '(their runs then fail: the system does not exist).',
        ),
    }),
    responses: {
      200: { description: 'Deleted', schema: SystemDeleteResult },
      404: notFound,
      409: failure('Tools still use the system (listed in the message)'),
    },
  },
  {
    method: 'POST',
    path: '/systems/{systemId}/test',
    operationId: 'testSystemConnection',
    summary:
      'Test the connection: one harmless read with the stored credentials (GET, SELECT 1, DBSIZE, list…), not recorded as a run',
    tag: 'Systems',
    // A fixed read, so running it needs no tools:write; it is a run, so runs:execute.
    scopes: ['systems:read', 'runs:execute'],
    query: envQuery,
    responses: {
      200: {
        description: 'The outcome, failed or not: success, what was tried, how long it took, the error',
        schema: ConnectionTestResult,
      },
      403: restricted,
      404: notFound,
      422: failure('The system has no URL, or a protocol no step speaks (MSSQL, MongoDB)'),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}/oauth/authorize',
    operationId: 'authorizeSystemOAuth',
    summary: "Start the OAuth authorization-code flow: the provider's URL (state and PKCE S256 included)",
    tag: 'Systems',
    scopes: ['systems:write'],
    query: OAuthAuthorizeQuery,
    responses: {
      200: { description: 'The authorization URL', schema: OAuthAuthorization },
      400: badRequest,
      403: restricted,
      404: notFound,
    },
  },
  {
    method: 'GET',
    path: '/oauth/callback',
    operationId: 'oauthCallback',
    summary:
      'Where the provider sends the browser back: exchanges the code (no API key; the state is the credential)',
    tag: 'Systems',
    public: true,
    query: OAuthCallbackQuery,
    responses: {
      200: { description: 'The system is authorized', schema: OAuthCallbackResult },
      303: {
        description:
          'The flow was started with returnTo: back there, with oauth=connected, or oauth=failed and error (the code)',
      },
      400: badRequest,
    },
  },
  {
    method: 'GET',
    path: '/me',
    operationId: 'getMe',
    summary: 'The calling API key (never the key itself)',
    tag: 'API keys',
    scopes: [],
    responses: { 200: { description: 'The key', schema: Me } },
  },
  {
    method: 'POST',
    path: '/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    body: { schema: ApiKeyCreateBody, name: 'API key', optional: true },
    responses: {
      201: { description: 'Created; the key is shown once', schema: ApiKeyCreated },
      400: badRequest,
      403: failure('The key lacks keys:admin, or would grant more than it has'),
    },
  },
  {
    method: 'GET',
    path: '/api-keys',
    operationId: 'listApiKeys',
    summary: 'List API keys without secrets (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    responses: { 200: { description: 'Keys', schema: ApiKeyList }, 403: adminOnly },
  },
  {
    method: 'DELETE',
    path: '/api-keys/{keyId}',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    responses: { 200: { description: 'Revoked', schema: DeleteResult }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/gateways',
    operationId: 'listGateways',
    summary: 'Connected gateway agents: targets, connected since, streams, bytes',
    tag: 'Gateways',
    scopes: ['systems:read'],
    responses: { 200: { description: 'Connected gateways', schema: GatewayList }, 403: restricted },
  },
  {
    method: 'GET',
    path: '/gateways/{tunnelId}',
    operationId: 'getGateway',
    summary: 'One connected gateway agent',
    tag: 'Gateways',
    scopes: ['systems:read'],
    responses: { 200: { description: 'The gateway', schema: Gateway }, 403: restricted, 404: notFound },
  },
  {
    method: 'DELETE',
    path: '/gateways/{tunnelId}/owner',
    operationId: 'releaseGatewayOwner',
    summary:
      'Release a tunnel id from the API key that owns it, so an agent with another key may register it (admin)',
    tag: 'Gateways',
    scopes: ['keys:admin'],
    responses: {
      200: {
        description: 'Released; a connected agent stays connected until another registers',
        schema: DeleteResult,
      },
      403: adminOnly,
      404: failure('No API key owns this tunnel id'),
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/state',
    operationId: 'getToolState',
    summary: "The tool's persistent state (sourceData.persistedState) and its version",
    tag: 'Tools',
    scopes: ['tools:read'],
    responses: { 200: { description: 'The state', schema: ToolStateAnswer }, 404: notFound },
  },
  {
    method: 'PUT',
    path: '/tools/{toolId}/state',
    operationId: 'putToolState',
    summary: "Replace the tool's persistent state (every key)",
    tag: 'Tools',
    scopes: ['tools:write'],
    body: { schema: ToolStatePutBody, name: 'tool state' },
    responses: {
      200: { description: 'Replaced', schema: ToolStatePutAnswer },
      400: badRequest,
      404: notFound,
      422: failure('Past the limits (keys, value size), or a value holds a credential of its systems'),
    },
  },
  {
    method: 'DELETE',
    path: '/tools/{toolId}/state',
    operationId: 'deleteToolState',
    summary: "Delete every key of the tool's persistent state (the next run starts from {})",
    tag: 'Tools',
    scopes: ['tools:write'],
    responses: { 200: { description: 'Reset', schema: ToolStateDeleteAnswer }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/schedules',
    operationId: 'listSchedules',
    summary: 'List the schedules of every tool the key may see',
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ListSchedulesQuery,
    responses: { 200: { description: 'Schedules, oldest first', schema: ToolScheduleList }, 400: badRequest },
  },
  {
    method: 'GET',
    path: '/schedules/next-runs',
    operationId: 'previewScheduleRuns',
    summary: 'When a cron expression would run in a time zone: its next ticks, before a schedule is written',
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ScheduleNextRunsQuery,
    responses: {
      200: { description: 'The next ticks', schema: ScheduleNextRuns },
      400: failure('A cron expression or time zone a schedule would refuse'),
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/schedules',
    operationId: 'listToolSchedules',
    summary: "List a tool's schedules (also those of a deleted tool, paused)",
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ListSchedulesQuery,
    responses: {
      200: { description: 'Schedules, oldest first', schema: ToolScheduleList },
      400: badRequest,
      404: failure('The key may not see the tool'),
    },
  },
  {
    method: 'POST',
    path: '/tools/{toolId}/schedules',
    operationId: 'createToolSchedule',
    summary: 'Schedule a tool: each tick of the cron expression starts an async run',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    body: { schema: ToolScheduleCreateBody, name: 'schedule' },
    responses: {
      201: { description: 'Created', schema: ToolSchedule },
      400: failure(
        'Invalid body, cron expression or time zone; inputs that break the inputSchema; archived tool',
      ),
      404: notFound,
      409: failure('A schedule with this id exists'),
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'getToolSchedule',
    summary: 'Get a schedule',
    tag: 'Schedules',
    scopes: ['tools:read'],
    responses: { 200: { description: 'The schedule', schema: ToolSchedule }, 404: notFound },
  },
  {
    method: 'PUT',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'updateToolSchedule',
    summary: 'Change a schedule: the fields given change, the others stay',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    body: { schema: ToolScheduleUpdateBody, name: 'schedule update', optional: true },
    responses: {
      200: { description: 'The updated schedule', schema: ToolSchedule },
      400: badRequest,
      404: notFound,
      409: failure('Concurrent update; retry'),
    },
  },
  {
    method: 'DELETE',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'deleteToolSchedule',
    summary: 'Delete a schedule (its running runs go on)',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    responses: { 200: { description: 'Deleted', schema: DeleteResult }, 404: notFound },
  },
] as const satisfies readonly RouteSpec[];

/** The route table as data (for code that walks every route without needing each one's own types). */
export const ROUTES: readonly RouteSpec[] = ROUTE_TABLE;
