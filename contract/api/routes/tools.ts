/**
 * The Tools routes: a tool and its manifest; running a tool, a definition or one step; the persistent state.
 */
import { z } from 'zod';
import { ToolManifest } from '../../resources/kinds.ts';
import { DeleteResult, ListToolsQuery, ToolList } from '../bodies.ts';
import {
  DraftRunQuery,
  DraftRunRequest,
  Run,
  RunRequest,
  StepRunQuery,
  StepRunRequest,
  StepRunResult,
} from '../run.ts';
import { Tool, ToolCreateBody, ToolUpdateBody } from '../tool.ts';
import {
  ToolStateAnswer,
  ToolStateDeleteAnswer,
  ToolStatePutAnswer,
  ToolStatePutBody,
} from '../tool-state.ts';
import { SavedToolTest, SaveRunAsTestBody } from '../tool-test.ts';
import { ToolTestAnswer } from '../tool-test-result.ts';
import {
  badRequest,
  failure,
  lenientParameter,
  notFound,
  restricted,
  runStarted,
  syncRunFinished,
  tooManySyncRuns,
  updateRefused,
} from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** GET and DELETE of one tool have never checked their query: other parameters are ignored there. */
const lenientTokenQuery = z.looseObject({ token: lenientParameter });

/** The media type of a manifest in YAML, as kubectl and GitOps tools read it. */
export const MANIFEST_YAML = 'application/yaml';

const doesNotCompile = failure('A transform, selector or template does not compile');
/** A saved tool run (POST /tools/{toolId}/run and /test): a key limited to other tools is told 404 too. */
const toolNotFound = failure('No such tool, or one this API key may not use');
const syncRunsAtLimit = failure(
  'Too many synchronous runs at once (KUBEGLUE_MAX_SYNC_RUNS); see Retry-After',
);

/** A tool: list, create, get, its manifest, update, delete. */
export const TOOL_ROUTES = [
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
      ...updateRefused,
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
] as const satisfies readonly RouteSpec[];

/** Running a tool, a tool definition or one step. */
export const TOOL_RUN_ROUTES = [
  {
    method: 'POST',
    path: '/tools/{toolId}/run',
    operationId: 'runTool',
    summary: 'Run a tool',
    tag: 'Tools',
    scopes: ['runs:execute'],
    body: { schema: RunRequest, name: 'run request', optional: true },
    responses: {
      ...runStarted('Asynchronous run accepted'),
      404: toolNotFound,
      409: failure('runId reused with a different tool or inputs'),
      429: failure(
        'Too many synchronous runs at once (KUBEGLUE_MAX_SYNC_RUNS), the tool at its maxConcurrentRuns (KG_ERR_TOOL_AT_CAPACITY), or the API key over a quota (KG_ERR_KEY_QUOTA_EXCEEDED, with RateLimit-* headers); see Retry-After',
      ),
    },
  },
  {
    method: 'POST',
    path: '/tools/{toolId}/test',
    operationId: 'testTool',
    summary:
      "Run a tool's tests against their recorded exchanges (no network, no credential) and answer each one's result; nothing is stored",
    tag: 'Tools',
    // Running the tool (offline): a key limited to other tools gets 404 as for POST /tools/{toolId}/run.
    scopes: ['runs:execute'],
    responses: {
      200: { description: "Each test's result (passed, the output, the difference)", schema: ToolTestAnswer },
      400: failure('An archived tool'),
      404: toolNotFound,
      429: syncRunsAtLimit,
    },
  },
  {
    method: 'POST',
    path: '/tools/{toolId}/tests',
    operationId: 'addToolTest',
    summary:
      "Save a recorded run of the tool as one of its tests: the run's inputs, recorded exchanges and output (replaces a test of the same name)",
    tag: 'Tools',
    // Changing the tool, from what a run stored (a key limited to other tools gets 404 for either).
    scopes: ['tools:write', 'runs:read'],
    body: { schema: SaveRunAsTestBody, name: 'test from a run' },
    responses: {
      201: { description: 'The test saved, and the names of the tool’s tests', schema: SavedToolTest },
      400: badRequest,
      404: failure('No such tool or run, or one this API key may not use'),
      409: failure(
        'The run did not succeed, is of another tool, recorded nothing or not in full (KG_ERR_RUN_NOT_A_TEST), or the tool changed concurrently',
      ),
      422: failure(
        'The tool has 20 tests, or the tests would be larger than 512 KiB (KG_ERR_TOOL_TESTS_LIMIT)',
      ),
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
] as const satisfies readonly RouteSpec[];

/** A tool's persistent state. */
export const TOOL_STATE_ROUTES = [
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
] as const satisfies readonly RouteSpec[];
