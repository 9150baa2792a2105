/**
 * The MCP endpoint's server, loaded by index.ts on the first request: `POST /mcp` on the API port speaks the Model Context Protocol's Streamable HTTP
 * transport (the official SDK's server and transport) so that MCP clients can list and call the tools the
 * API key may run. The key is checked by the auth hook like any /v1 route's (MCP_ROUTE in
 * contract/api/routes.ts: tools:read and runs:execute); this module lists the tools (tool-names.ts,
 * shapes.ts; in pages bounded in bytes: listing.ts) and runs them synchronously through the RunService with
 * requestSource `mcp`. One JSON-RPC message per POST: a batch is refused (refuseBatch).
 *
 * Stateless: every POST gets a server and a transport of its own, built for the request's key, and nothing
 * outlives the answer. Any replica can take any request (no sticky sessions, nothing lost in a restart), a
 * listing always reads the tools as they are now, and a revoked key stops at its next request. What that
 * leaves out: the server-to-client stream (GET /mcp answers 405, which the transport allows), so no
 * `notifications/tools/list_changed` and no cancelling a call from the client (docs/mcp.md).
 */

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SETTINGS } from '../../config/config.ts';
import { ApiError, KG_ERR_INTERNAL, KG_ERR_VALIDATION } from '../../contract/api/errors.ts';
import { API_VERSION } from '../../contract/api/openapi.ts';
import type { Tool } from '../../contract/api/tool.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import { JsonObject } from '../../contract/json.ts';
import type { RunEventHub } from '../../runs/run-events.ts';
import { newRunId } from '../../runs/run-id.ts';
import type { RunService } from '../../runs/service.ts';
import { ungrantedSystem } from '../../systems/grants.ts';
import type { ToolService } from '../../tools/service.ts';
import { type Principal, principalOf } from '../auth.ts';
import { listingPage, nameOfCursor } from './listing.ts';
import { mcpTool, progressMessage, refusedResult, runResult } from './shapes.ts';
import { toolsByName } from './tool-names.ts';

export interface McpDeps {
  tools: Pick<ToolService, 'list'>;
  runs: Pick<RunService, 'start'>;
  /** Step and page events of the runs executing here, for clients that ask for progress. */
  events: Pick<RunEventHub, 'subscribe'>;
  /** The largest `tools/list` page, in bytes of tool JSON (KUBEGLUE_MCP_LIST_PAGE_BYTES; listing.ts). */
  listPageBytes: number;
}

const INSTRUCTIONS =
  "Each tool runs a kubeglue tool synchronously and answers with its output; a result's _meta " +
  "'kubeglue.dev/runId' names the run (GET /v1/runs/{runId} shows it).";

/**
 * The tools the key may run, by MCP name: not archived, within the key's tool limit, and using only systems
 * the key may use (a run of any other would be refused).
 */
function runnableTools(deps: McpDeps, principal: Principal): Map<string, Tool> {
  const { data } = deps.tools.list({
    page: 1,
    limit: Number.MAX_SAFE_INTEGER,
    includeArchived: false,
    toolIds: principal.toolIds,
  });
  return toolsByName(data.filter((tool) => !ungrantedSystem(principal.systemIds, tool.steps)));
}

type Notify = (notification: ServerNotification) => Promise<void>;

/**
 * Sends the run's step and page events as `notifications/progress` while it runs, when the client gave a
 * progress token (a client may keep waiting past its request timeout while progress arrives).
 */
function followProgress(
  deps: McpDeps,
  runId: string,
  progressToken: string | number,
  notify: Notify,
): { close(): void } {
  let progress = 0;
  return deps.events.subscribe({ runId }, (event) => {
    progress += 1;
    // The answer may have gone (the client left): a progress notification is worth no error.
    notify({
      method: 'notifications/progress',
      params: { progressToken, progress, message: progressMessage(event) },
    }).catch(() => {});
  });
}

async function callTool(
  deps: McpDeps,
  request: FastifyRequest,
  params: CallToolRequest['params'],
  notify: Notify,
): Promise<CallToolResult> {
  const principal = principalOf(request);
  const tool = runnableTools(deps, principal).get(params.name);
  // A tool the key may not run is unknown to it, exactly like one that does not exist.
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
  const inputs = JsonObject.safeParse(params.arguments ?? {});
  if (!inputs.success) return refusedResult(KG_ERR_VALIDATION('arguments', formatIssues(inputs.error)));
  // Chosen here so that progress can follow the run before it starts.
  const runId = newRunId();
  const progressToken = params._meta?.progressToken;
  const progress =
    progressToken === undefined ? undefined : followProgress(deps, runId, progressToken, notify);
  try {
    const started = await deps.runs.start({
      toolId: tool.id,
      request: { runId, inputs: inputs.data },
      caller: principal,
      traceId: request.traceId,
      parentSpanId: request.parentSpanId,
      requestSource: 'mcp',
    });
    return runResult(started.run);
  } catch (error) {
    if (error instanceof ApiError && error.statusCode < 500) return refusedResult(error);
    request.log.error({ err: error }, 'MCP tool call failed');
    return refusedResult(error instanceof ApiError ? error : KG_ERR_INTERNAL());
  } finally {
    progress?.close();
  }
}

/**
 * The MCP server of one request, for its key. The SDK's low-level Server: its McpServer registers tools one
 * by one with zod schemas, where kubeglue's tools are JSON Schemas that come and go with the Tool resources.
 */
function serverFor(deps: McpDeps, request: FastifyRequest): Server {
  const server = new Server(
    { name: 'kubeglue', version: API_VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, async ({ params }) => {
    const cursor = params?.cursor;
    const after = cursor === undefined ? undefined : nameOfCursor(cursor);
    if (cursor !== undefined && after === undefined) {
      throw new McpError(
        ErrorCode.InvalidParams,
        'Invalid cursor: give the nextCursor of a listing as it is',
      );
    }
    return listingPage(runnableTools(deps, principalOf(request)), mcpTool, {
      after,
      maxBytes: deps.listPageBytes,
      skipped: (name, bytes) =>
        request.log.warn(
          { tool: name, bytes, pageBytes: deps.listPageBytes },
          `MCP tools/list leaves out a tool larger than a page (${SETTINGS.tree.mcpListPageBytes.name})`,
        ),
    });
  });
  server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) =>
    callTool(deps, request, params, extra.sendNotification),
  );
  return server;
}

/** The request as the transport reads it: method, URL and headers (the body is parsed already). */
function webRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const one of [value].flat()) headers.append(name, one);
  }
  return new Request(new URL(request.url, 'http://kubeglue.local'), { method: request.method, headers });
}

/**
 * A JSON-RPC batch (an array of messages) is refused whole, before any of it is read: MCP 2025-06-18 removed
 * batching, and one POST answering a hundred listings or calls is an amplifier (issue 29: 4.8 KB asking
 * 210 MB). Clients of 2025-03-26 and older that batch send one message per POST instead.
 */
function refuseBatch(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  request.log.debug('MCP request refused: a JSON-RPC batch');
  return reply
    .status(400)
    .header('content-type', 'application/json')
    .send({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: ErrorCode.InvalidRequest,
        message:
          'Invalid Request: JSON-RPC batches are not accepted; send one message per POST (MCP 2025-06-18 removed batching)',
      },
    });
}

/** Answers one `POST /mcp` (see the module's comment). */
export async function answerMcp(
  deps: McpDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (Array.isArray(request.body)) return refuseBatch(request, reply);
  const server = serverFor(deps, request);
  // No sessionIdGenerator: stateless (see the module's comment).
  const transport = new WebStandardStreamableHTTPServerTransport();
  transport.onerror = (error) => request.log.debug({ err: error }, 'MCP request refused');
  await server.connect(transport);
  // The answer may be a stream that outlives this handler: the server goes when the connection does.
  reply.raw.once('close', () => void server.close());
  // null rather than undefined: the transport would try to read the body again.
  const response = await transport.handleRequest(webRequest(request), {
    parsedBody: request.body ?? null,
  });
  return reply.send(response);
}
