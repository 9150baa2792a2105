import { z } from 'zod';
import { Instant, JsonValue } from '../json.ts';
import { SUPPORTED_SCHEMES_TEXT } from '../step-protocols.ts';
import { CONTROL_CHARACTERS, multilineText, plainText, templateId } from '../text.ts';
import { ToolTests } from './tool-test.ts';

/**
 * Top-level sourceData names the engine sets itself; a step with one of these ids would be shadowed
 * or would shadow them (semantics.md, "sourceData").
 */
export const RESERVED_STEP_IDS = [
  'credentials',
  'currentItem',
  'page',
  'offset',
  'cursor',
  'limit',
  'pageSize',
  '__files__',
  '__webhook__',
  'persistedState',
] as const;

export const MAX_STEPS = 200;

/**
 * The longest `instruction` of a tool or a step, in characters. A tool's instruction is the description
 * every MCP client gets in each listing (api/mcp/): prose for a model, not a document (issue 29: a 2 MB one
 * made a listing 210 MB). Saved tools are checked against it (REST, and the Tool CRD's maxLength).
 */
export const MAX_INSTRUCTION_LENGTH = 10_000;

const Instruction = multilineText(z.string().max(MAX_INSTRUCTION_LENGTH));

/** A JSON value kept as is by the API server (request bodies, query values, JSON Schemas). */
export const freeForm = <T extends z.ZodType>(schema: T) =>
  schema.meta({ 'x-kubernetes-preserve-unknown-fields': true });

// Ids travel in URL paths (percent-encoded) and resource names (derived for ids that are not DNS names):
// spaces are allowed inside (`My Tool`), other whitespace, "/" and "\" are not, nor `.` and `..`; and
// they are printed (the CLI, logs), so control characters are not either (contract/text.ts).
const TOOL_ID_CHARACTER = `[^\\s/\\\\${CONTROL_CHARACTERS}]`;
export const ToolId = z
  .string()
  .min(1)
  .max(128)
  .regex(
    new RegExp(`^${TOOL_ID_CHARACTER}(?:(?:${TOOL_ID_CHARACTER}| )*${TOOL_ID_CHARACTER})?$`),
    'must not contain "/", "\\", control characters or whitespace other than inner spaces (no leading or trailing space)',
  )
  .refine((id) => id !== '.' && id !== '..', 'must not be "." or ".."');

/**
 * Ids a new tool may not take: `POST /v1/tools/run` runs unsaved definitions and `POST /v1/tools/step/run`
 * runs one step, so a tool named `step` could never be run by `POST /v1/tools/{id}/run`.
 */
export const RESERVED_TOOL_IDS = ['run', 'step'] as const;

const NewToolId = ToolId.superRefine((id, ctx) => {
  if ((RESERVED_TOOL_IDS as readonly string[]).includes(id)) {
    ctx.addIssue({
      code: 'custom',
      message: `'${id}' is reserved (POST /v1/tools/run runs an unsaved tool, POST /v1/tools/step/run one step); choose another id`,
    });
  }
});

/**
 * superglue's clients send the systems a tool uses with it. kubeglue derives them from the steps'
 * `config.systemId`; a listed id must be one of those (checked against the steps, not stored).
 */
export const SystemIdsField = z
  .array(z.string().min(1))
  .max(MAX_STEPS)
  .optional()
  .describe(
    "Accepted for superglue's clients: the systems the tool uses. kubeglue derives them from the steps' " +
      'config.systemId; every id listed must be used by a step (empty or omitted: derived). Not stored.',
  );

// Step ids are addressable as `sourceData[id]` and `<<id>>`.
export const StepId = templateId();

export const SemVer = z
  .string()
  .max(64)
  .regex(/^\d+\.\d+\.\d+$/, 'must be a semantic version major.minor.patch, e.g. 1.2.0');

export const HttpMethod = z.enum(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
export type HttpMethod = z.infer<typeof HttpMethod>;

/** A GraphQL name (an operation or a variable): `[_A-Za-z][_0-9A-Za-z]*`. */
const GraphqlName = z
  .string()
  .max(128)
  .regex(/^[_A-Za-z][_0-9A-Za-z]*$/, 'must be a GraphQL name: a letter or "_", then letters, digits or "_"');

/** Longest GraphQL document a step may hold, in characters. */
export const MAX_GRAPHQL_QUERY_LENGTH = 100_000;

export const GraphqlRequest = z
  .strictObject({
    query: z
      .string()
      .min(1)
      .max(MAX_GRAPHQL_QUERY_LENGTH)
      .describe(
        'The GraphQL document: one or more operations (query or mutation). No <<templates>>: values go in ' +
          'variables ($id in the query, "id" in variables).',
      ),
    variables: freeForm(z.record(z.string(), JsonValue))
      .optional()
      .describe(
        'The variables, a JSON object; string leaves may hold <<templates>> (a leaf that is exactly one ' +
          'expression keeps its JSON type: "<<limit>>" sends a number).',
      ),
    operationName: GraphqlName.optional().describe(
      'Which operation of the document runs; needed when the document holds more than one.',
    ),
  })
  .meta({ id: 'GraphqlRequest' });
export type GraphqlRequest = z.infer<typeof GraphqlRequest>;

export const PaginationType = z
  .enum(['offsetBased', 'pageBased', 'cursorBased', 'disabled'])
  .describe('How the next page is requested: by offset, page number, or a cursor from the last response.');

export const Pagination = z
  .strictObject({
    type: PaginationType,
    // The interface types pageSize as a string; numbers are accepted too (Kubernetes int-or-string).
    pageSize: z
      .union([z.string().regex(/^[1-9]\d*$/, 'must be a positive whole number'), z.number().int().positive()])
      .optional()
      .describe('Items per page (default 50); available to templates as <<limit>> and <<pageSize>>.'),
    cursorPath: z
      .string()
      .optional()
      .describe(
        'Where the next cursor is in the response body: a literal key, else a dotted path (meta.next).',
      ),
    stopCondition: z
      .string()
      .optional()
      .describe('JavaScript (response, pageInfo, sourceData) => boolean; true stops pagination.'),
    maxPages: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe('Extension: hard cap on pages (default 1000).'),
    cursorVariable: GraphqlName.optional().describe(
      'Extension, GraphQL steps with cursorBased pagination: the variable the cursor is sent in (default ' +
        '"after"; the operation must declare it). Left out on the first page.',
    ),
    connectionPath: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Extension, GraphQL steps with cursorBased pagination and no cursorPath: the dotted path in data of ' +
          'the connection to page through (repository.issues); default: the one object holding pageInfo. Its ' +
          'pageInfo.endCursor is the cursor, hasNextPage false ends, its edges or nodes are the items.',
      ),
  })
  .meta({ id: 'Pagination' });
export type Pagination = z.infer<typeof Pagination>;

export const RequestStepConfig = z
  .strictObject({
    type: z
      .literal('request')
      .default('request')
      .describe('"request" (the default) calls an external system.'),
    url: z
      .string()
      .min(1)
      .describe(
        `Target URL; its scheme selects the protocol (${SUPPORTED_SCHEMES_TEXT}). ` +
          "Without a scheme it is relative to the system's base URL. May contain <<templates>>.",
      ),
    method: HttpMethod.default('GET').describe('HTTP method (default GET); use POST for other protocols.'),
    queryParams: z
      .record(z.string(), freeForm(JsonValue))
      .optional()
      .describe('HTTP query parameters; values may contain <<templates>>, arrays repeat the key.'),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('HTTP headers; values may contain <<templates>>.'),
    body: freeForm(z.union([z.string(), JsonValue]))
      .optional()
      .describe(
        'Request body: any content for HTTP; {query, params} for Postgres ($1, $2, …) and MySQL/MariaDB (?), ' +
          'no templates in the SQL text; an operation object or list for FTP/SFTP/SMB ' +
          '({operation: list|get|put|delete|rename|mkdir|exists|stat, path, content}); ' +
          'for Redis one command {"command": "HGETALL", "args": ["user:<<id>>"]} or a pipeline ' +
          '{"commands": [["GET", "a"], ["INCR", "b"]], "transaction": false} (true: MULTI/EXEC), every argument ' +
          'one array element, binary as {"$base64": "…"} (templates fill elements only, never a body given as text).',
      ),
    graphql: GraphqlRequest.optional().describe(
      'Extension: a GraphQL request, sent over HTTP(S) as POST with the JSON body {query, variables, ' +
        "operationName} instead of body (method must be POST). The step data is the answer's data; errors " +
        'without data fail the step, errors beside data become notes (docs/graphql.md).',
    ),
    pagination: Pagination.optional().describe('HTTP/HTTPS only: fetch and merge pages.'),
    systemId: z.string().min(1).optional().describe('System whose base URL and credentials this step uses.'),
  })
  .meta({ id: 'RequestStepConfig' });
export type RequestStepConfig = z.infer<typeof RequestStepConfig>;

export const TransformStepConfig = z
  .strictObject({
    type: z.literal('transform').describe('"transform" reshapes data with sandboxed JavaScript.'),
    transformCode: z
      .string()
      .min(1)
      .describe('JavaScript (sourceData) => value, run in the sandbox (no network, no filesystem).'),
  })
  .meta({ id: 'TransformStepConfig' });
export type TransformStepConfig = z.infer<typeof TransformStepConfig>;

export const StepConfig = z
  .discriminatedUnion('type', [RequestStepConfig, TransformStepConfig], {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? 'unknown step type: expected "request" (the default) or "transform"'
        : undefined,
  })
  .meta({ id: 'StepConfig' });
export type StepConfig = z.infer<typeof StepConfig>;

export const FailureBehavior = z
  .enum(['fail', 'continue'])
  .describe('fail (the default) stops the run when the step fails; continue goes on to the next step.');

export const ToolStep = z
  .strictObject({
    id: StepId.describe("Unique within the tool; the step's result is sourceData[id]."),
    config: StepConfig.describe('What the step does: a request (the default type) or a transform.'),
    instruction: Instruction.optional().describe(
      `Human-readable description of the step (at most ${MAX_INSTRUCTION_LENGTH} characters).`,
    ),
    modify: z
      .boolean()
      .default(false)
      .describe(
        'Whether the step changes data on its system (false: Postgres and MySQL run READ ONLY, Redis runs only ' +
          'read-only commands, FTP, SFTP and SMB allow only list, get, exists and stat; retries allowed).',
      ),
    dataSelector: z
      .string()
      .optional()
      .describe('JavaScript (sourceData) => value; an array runs the step once per item as currentItem.'),
    failureBehavior: FailureBehavior.default('fail'),
    loopConcurrency: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe('Extension: loop items run at once (default 1, sequential).'),
  })
  .meta({ id: 'ToolStep' });
export type ToolStep = z.infer<typeof ToolStep>;
export type ToolStepInput = z.input<typeof ToolStep>;

// Unique and unreserved step ids (checkSteps) are no CEL rules of the CRD: servers before 1.25 and
// current kubectl refuse the field there; the operator's checkTool (tools/validation.ts) enforces them.
export const ToolSteps = z
  .array(ToolStep)
  .describe("The ordered steps; each one's result is available to the later ones by its id.")
  .min(1, 'a tool needs at least one step')
  .max(MAX_STEPS);

/** The highest maxConcurrentRuns a tool may set. */
export const MAX_CONCURRENT_RUNS = 10_000;

/** Fields a user writes; shared by the REST Tool and the Tool resource's spec. */
export const toolFields = {
  name: plainText(z.string().max(256)).optional().describe('Display name.'),
  version: SemVer.optional().describe('Semantic version major.minor.patch.'),
  instruction: Instruction.optional().describe(
    `Human-readable description of what the tool does, for people and for the models MCP clients show it to (at most ${MAX_INSTRUCTION_LENGTH} characters).`,
  ),
  inputSchema: freeForm(z.record(z.string(), JsonValue)).optional().describe('JSON Schema of the inputs.'),
  outputSchema: freeForm(z.record(z.string(), JsonValue))
    .optional()
    .describe('JSON Schema the output must satisfy after the output transform.'),
  outputTransform: z
    .string()
    .optional()
    .describe("JavaScript (sourceData) => value; its result is the run's data."),
  folder: z.string().max(512).optional().describe('Folder path for organising tools (a/b).'),
  record: z
    .boolean()
    .optional()
    .describe(
      "Record every exchange of the tool's runs with its systems, redacted (docs/authoring.md#recording); a run's " +
        'options.record overrides it. Default false.',
    ),
  tests: ToolTests.optional(),
  maxConcurrentRuns: z
    .number()
    .int()
    .min(1)
    .max(MAX_CONCURRENT_RUNS)
    .optional()
    .describe(
      'At most this many runs of the tool execute at once, counted across every API replica and runner Pod ' +
        '(docs/operations.md#concurrency-per-tool). Absent: no limit of its own.',
    ),
  whenAtCapacity: z
    .enum(['queue', 'refuse'])
    .optional()
    .describe(
      'What a run beyond maxConcurrentRuns does: queue (default) waits for a slot in arrival order (an async ' +
        'run shows waiting; a sync run waits up to its timeout); refuse answers 429 KG_ERR_TOOL_AT_CAPACITY ' +
        'with Retry-After.',
    ),
  archived: z
    .boolean()
    .default(false)
    .describe('An archived tool is hidden from default listing and cannot be run.'),
};

/** Set by the server; accepted (and ignored) in request bodies so a fetched tool can be sent back as is. */
const serverFields = {
  createdAt: Instant.optional(),
  updatedAt: Instant.optional(),
};

interface StepsCarrier {
  steps: ReadonlyArray<{ id: string }>;
  inputSchema?: Record<string, unknown> | undefined;
}

/** Rules JSON Schema can't express: unique step ids, reserved names, step ids shadowing inputs. */
export function checkSteps(tool: StepsCarrier, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  const reserved = new Set<string>(RESERVED_STEP_IDS);
  const inputProps = tool.inputSchema?.properties;
  const inputKeys =
    inputProps && typeof inputProps === 'object' ? new Set(Object.keys(inputProps)) : new Set<string>();
  tool.steps.forEach((step, index) => {
    const path = ['steps', index, 'id'];
    if (seen.has(step.id)) ctx.addIssue({ code: 'custom', path, message: `duplicate step id '${step.id}'` });
    seen.add(step.id);
    if (reserved.has(step.id)) {
      ctx.addIssue({
        code: 'custom',
        path,
        message: `'${step.id}' is a reserved name and cannot be a step id`,
      });
    }
    if (inputKeys.has(step.id)) {
      ctx.addIssue({
        code: 'custom',
        path,
        message: `step id '${step.id}' would shadow the input '${step.id}' declared in inputSchema`,
      });
    }
  });
}

/** The systems a tool's steps use, in first-use order. */
export function stepSystemIds(
  steps: ReadonlyArray<{ config: { type?: string; systemId?: string } }>,
): string[] {
  const ids = new Set<string>();
  for (const step of steps) {
    if (step.config.type !== 'transform' && step.config.systemId) ids.add(step.config.systemId);
  }
  return [...ids];
}

/** Ids in `systemIds` that no step uses (superglue's clients send the list; kubeglue derives it). */
export function unusedSystemIds(
  systemIds: readonly string[] | undefined,
  steps: ReadonlyArray<{ config: { type?: string; systemId?: string } }>,
): string[] {
  if (!systemIds) return [];
  const used = new Set(stepSystemIds(steps));
  return [...new Set(systemIds)].filter((id) => !used.has(id));
}

export function systemIdsProblem(
  unused: readonly string[],
  steps: Parameters<typeof stepSystemIds>[0],
): string {
  const used = stepSystemIds(steps);
  return (
    `${unused.map((id) => `'${id}'`).join(', ')} ${unused.length === 1 ? 'is' : 'are'} not the systemId of any step ` +
    `(the steps use ${used.length ? used.map((id) => `'${id}'`).join(', ') : 'no system'}); kubeglue derives a ` +
    "tool's systems from its steps"
  );
}

function checkSystemIds(
  tool: { systemIds?: string[] | undefined; steps: Parameters<typeof stepSystemIds>[0] },
  ctx: z.RefinementCtx,
): void {
  const unused = unusedSystemIds(tool.systemIds, tool.steps);
  if (unused.length > 0) {
    ctx.addIssue({ code: 'custom', path: ['systemIds'], message: systemIdsProblem(unused, tool.steps) });
  }
}

export const Tool = z
  .object({
    id: ToolId,
    steps: ToolSteps,
    ...toolFields,
    ...serverFields,
  })
  .superRefine(checkSteps)
  .meta({ id: 'Tool' });
export type Tool = z.infer<typeof Tool>;
export type ToolInput = z.input<typeof Tool>;

/** Body of `POST /v1/tools` (kubeglue addition: the interface does not show tool creation). */
export const ToolCreateBody = z
  .strictObject({
    id: NewToolId,
    steps: ToolSteps,
    ...toolFields,
    ...serverFields,
    systemIds: SystemIdsField,
  })
  // The step-id rules (checkSteps) are not refused here with a 400: the save's checkTool (tools/) answers
  // them with the 422 and the messages kubectl users see in a Tool's Ready condition.
  .superRefine(checkSystemIds)
  .meta({ id: 'ToolCreateBody' });

/**
 * A tool definition run without saving it (`POST /v1/tools/run`): the shape of a tool body, any id
 * (reserved ones included: nothing is saved under it).
 */
export const ToolDefinition = z
  .strictObject({ id: ToolId, steps: ToolSteps, ...toolFields, ...serverFields, systemIds: SystemIdsField })
  .superRefine(checkSteps)
  .superRefine(checkSystemIds)
  .meta({ id: 'ToolDefinition' });
export type ToolDefinition = z.infer<typeof ToolDefinition>;

/** An optional field of a tool that an update may remove by giving null (as JSON Merge Patch does). */
function removable<T extends z.ZodType>(field: z.ZodOptional<T>) {
  return field
    .unwrap()
    .nullable()
    .optional()
    .describe(`${field.description ?? ''} null removes it.`.trim());
}

/**
 * Body of `PUT /v1/tools/{id}`: only given fields change (null removes an optional one); `steps` replaces
 * all steps.
 */
export const ToolUpdateBody = z
  .strictObject({
    id: ToolId.optional().describe('Ignored when equal to the path id; a different id is refused.'),
    name: removable(toolFields.name),
    version: removable(toolFields.version),
    steps: ToolSteps.optional(),
    instruction: removable(toolFields.instruction),
    inputSchema: removable(toolFields.inputSchema),
    outputSchema: removable(toolFields.outputSchema),
    outputTransform: removable(toolFields.outputTransform),
    folder: removable(toolFields.folder),
    record: removable(toolFields.record),
    tests: removable(toolFields.tests),
    maxConcurrentRuns: removable(toolFields.maxConcurrentRuns),
    whenAtCapacity: removable(toolFields.whenAtCapacity),
    archived: z.boolean().optional(),
    ...serverFields,
    systemIds: SystemIdsField.describe(
      "Accepted for superglue's clients; every id listed must be a systemId of the (resulting) steps. Not stored.",
    ),
  })
  .meta({ id: 'ToolUpdateBody' });
export type ToolUpdateBody = z.infer<typeof ToolUpdateBody>;
