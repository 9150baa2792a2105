/**
 * kubeglue's tools and runs as MCP shapes: a Tool as an MCP tool (name, description, input schema), a
 * finished run and a refused call as a CallToolResult. Pure: no I/O.
 */
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { ApiError } from '../../contract/api/errors.ts';
import type { Run, RunLogEvent, StepLoop } from '../../contract/api/run.ts';
import type { Tool } from '../../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import { wrappedPayloadSchema } from '../../runs/input-schema.ts';

/** `_meta` keys of kubeglue's own (MCP reserves unprefixed names). */
export const META = {
  /** On each listed tool: the kubeglue tool id its name stands for. */
  toolId: 'kubeglue.dev/toolId',
  /** On each call's result: the run it started (GET /v1/runs/{runId}). */
  runId: 'kubeglue.dev/runId',
} as const;

type InputSchema = McpTool['inputSchema'];

/** What a tool without an inputSchema takes: any object (its inputs are not checked either). */
const OPEN_OBJECT: InputSchema = { type: 'object', properties: {} };

/**
 * The JSON Schema of the arguments: the tool's inputSchema, or its payload part when it is in superglue's
 * older wrapped form (runs check the inputs against that part too). MCP requires an object schema: a
 * schema that does not say `type` gets `type: "object"`; one of another type (no inputs could satisfy it)
 * is shown open.
 */
export function mcpInputSchema(inputSchema: Record<string, JsonValue> | undefined): InputSchema {
  if (!inputSchema) return OPEN_OBJECT;
  const inputs = wrappedPayloadSchema(inputSchema) ?? inputSchema;
  if (inputs.type === undefined) return { ...inputs, type: 'object' } as InputSchema;
  return inputs.type === 'object' ? (inputs as InputSchema) : OPEN_OBJECT;
}

/** The MCP tool that runs `tool`, listed under `name` (tool-names.ts). */
export function mcpTool(name: string, tool: Tool): McpTool {
  return {
    name,
    ...(tool.name ? { title: tool.name } : {}),
    description: tool.instruction ?? `Runs the kubeglue tool '${tool.id}'.`,
    inputSchema: mcpInputSchema(tool.inputSchema),
    _meta: { [META.toolId]: tool.id },
  };
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Failed loop items a call's result names per step; the run's results hold them all. */
const FAILED_ITEMS_SHOWN = 10;

/** `; item 1: …; item 3: …` and how many more, for a loop's failed items. */
function failedItemsText(loop: StepLoop, shown: number, separator: string): string {
  const listed = loop.failedItems.slice(0, shown);
  const more = loop.failed - listed.length;
  return [
    ...listed.map((item) => `item ${item.index}: ${item.error}`),
    ...(more > 0 ? [`and ${more} more`] : []),
  ].join(separator);
}

/**
 * A run event as a progress message: the event's line, and for a loop step whose items failed while it
 * went on (failureBehavior continue) the failed items the event carries.
 */
export function progressMessage(event: RunLogEvent): string {
  const loop = event.loop;
  if (event.type !== 'step_finished' || event.status !== 'success' || !loop || loop.failed === 0) {
    return event.message;
  }
  return `${event.message}: ${failedItemsText(loop, loop.failedItems.length, '; ')}`;
}

/** What a successful run's loop steps left failed: one text per such step (none when every item succeeded). */
function failedItemTexts(run: Run): string[] {
  return (run.stepResults ?? []).flatMap((step) => {
    const loop = step.loop;
    if (!step.success || !loop || loop.failed === 0) return [];
    const head = `Step '${step.stepId}': ${loop.failed} of ${loop.items} items failed (the step went on past them):`;
    return [`${head}\n- ${failedItemsText(loop, FAILED_ITEMS_SHOWN, '\n- ')}`];
  });
}

/**
 * A finished run as the call's result. Success: the output as JSON text, and as structuredContent when it
 * is an object (MCP's structured content is an object); then, for each loop step that went on past failed
 * items, a text naming them. Failure or abort: a tool error naming the run and its error (credentials were
 * scrubbed from it by the engine). Either way `_meta` names the run.
 */
export function runResult(run: Run): CallToolResult {
  const _meta = { [META.runId]: run.runId };
  if (run.status === 'success') {
    const data = run.data ?? null;
    return {
      content: [
        { type: 'text', text: JSON.stringify(data) },
        ...failedItemTexts(run).map((text) => ({ type: 'text' as const, text })),
      ],
      ...(isObject(data) ? { structuredContent: data } : {}),
      _meta,
    };
  }
  const outcome = run.status === 'aborted' ? 'was aborted' : 'failed';
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `Run ${run.runId} of tool '${run.toolId}' ${outcome}: ${run.error ?? 'no error was recorded'}`,
      },
    ],
    _meta,
  };
}

/**
 * A call refused before a run was stored (inputs that do not match the schema, too many sync runs at once,
 * an archived tool, a system the key may not use): a tool error the model can act on, with the catalog's
 * message and code (docs/errors.md), also as structuredContent in the API's error shape for programs.
 */
export function refusedResult(error: ApiError): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.message} (${error.code})` }],
    structuredContent: { error: error.body() },
  };
}
