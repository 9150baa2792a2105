import { z } from 'zod';
import { HTTP_URL_PATTERN, isHttpUrl } from '../http-url.ts';
import { Instant, JsonObject, JsonValue } from '../json.ts';
import { pageLimit } from './paging.ts';
import { RecordingSummary } from './recording.ts';
import { SystemIdsField, Tool, ToolDefinition, ToolId, ToolStep, unusedSystemIds } from './tool.ts';
import { RunStateRecord } from './tool-state.ts';

export const RunStatus = z.enum(['running', 'success', 'failed', 'aborted']);
export type RunStatus = z.infer<typeof RunStatus>;
export const TERMINAL_STATUSES = ['success', 'failed', 'aborted'] as const satisfies readonly RunStatus[];

export const RequestSource = z.enum(['api', 'frontend', 'scheduler', 'mcp', 'tool-chain', 'webhook', 'cli']);
export type RequestSource = z.infer<typeof RequestSource>;
/** Sources a client may declare; `webhook`, `tool-chain` and `scheduler` are set by the server only. */
export const ClientRequestSource = z.enum(['api', 'frontend', 'mcp', 'cli'], {
  error:
    'requestSource must be one of api, frontend, mcp, cli (webhook, tool-chain and scheduler are set by the server)',
});

export const ExecutionMode = z.enum(['prod', 'dev']);
export type ExecutionMode = z.infer<typeof ExecutionMode>;

/** Which execution of a run: 1, and one more each time a lost execution of a read-only run starts over. */
export const Attempt = z.number().int().min(1);

export const RunId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'may contain only letters, digits, ".", "_", ":" and "-"');

export const MAX_RUN_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** What bounds a run without options.timeout (the engine's default; KUBEGLUE_DEFAULT_RUN_TIMEOUT_MS for runner Pods). */
export const DEFAULT_RUN_TIMEOUT_MS = 5 * 60 * 1000;

const NOT_WEBHOOK_URL = 'must be an http(s) URL or tool:<toolId>';

/** `tool:<toolId>` chains a tool; anything else must be an http(s) URL (the pattern also for the CRDs). */
export const WebhookUrl = z
  .string()
  .regex(new RegExp(`^tool:|${HTTP_URL_PATTERN}`), NOT_WEBHOOK_URL)
  .refine(
    (value) =>
      value.startsWith('tool:') ? ToolId.safeParse(value.slice('tool:'.length)).success : isHttpUrl(value),
    NOT_WEBHOOK_URL,
  );

export const RunOptions = z
  .strictObject({
    async: z
      .boolean()
      .optional()
      .describe('true: answer 202 at once and run in the background (default false).'),
    timeout: z
      .number()
      .int()
      .positive()
      .max(MAX_RUN_TIMEOUT_MS)
      .optional()
      .describe('Milliseconds; bounds the whole run.'),
    webhookUrl: WebhookUrl.optional().describe(
      'An http(s) URL notified on completion (signed), or tool:<toolId> to start that tool with the data.',
    ),
    mode: ExecutionMode.optional().describe('Which system credentials to use: prod (default) or dev.'),
    requestSource: RequestSource.optional().describe(
      'Who starts the run: api (default), frontend, mcp, cli.',
    ),
    traceId: z.string().min(1).max(128).optional().describe('Trace id for logs and outbound traceparent.'),
    record: z
      .boolean()
      .optional()
      .describe(
        "Extension: store every exchange of the run's request steps, redacted (GET /v1/runs/{runId}/recording); " +
          "default: the tool's record.",
      ),
  })
  .meta({ id: 'RunOptions' });
export type RunOptions = z.infer<typeof RunOptions>;

/** Whether the run was started asynchronously (its options say so; chains and webhooks always are). */
export function isAsyncRun(options: JsonObject | undefined): boolean {
  return (options as { async?: unknown } | undefined)?.async === true;
}

/** Runtime credentials: by their own names, or grouped per system id. */
export const RuntimeCredentials = z.record(
  z.string(),
  z.union([z.string(), z.record(z.string(), z.string())]),
);
export type RuntimeCredentials = z.infer<typeof RuntimeCredentials>;

/**
 * Options of a run request: the stored RunOptions plus fields superglue's clients send, which are
 * accepted and not stored (see each).
 */
export const RunRequestOptions = RunOptions.extend({
  requestSource: ClientRequestSource.optional(),
  clientInfo: z
    .strictObject({
      name: z.string().max(256).optional(),
      version: z.string().max(256).optional(),
      userAgent: z.string().max(1024).optional(),
    })
    .optional()
    .describe("Sent by superglue's clients (their name and version); accepted and ignored."),
  pinnedCredentials: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      "superglue's credential sets per system. kubeglue has one credential set per system variant: " +
        'accepted when empty; a non-empty map is refused (give runtime credentials instead).',
    ),
  credentialsList: z
    .record(z.string(), z.string())
    .optional()
    .describe('Older name of pinnedCredentials; the same rule.'),
}).meta({ id: 'RunRequestOptions' });
export type RunRequestOptions = z.infer<typeof RunRequestOptions>;

/** Fields of every run request body (saved tools, unsaved definitions). */
const runRequestFields = {
  runId: RunId.optional(),
  credentials: RuntimeCredentials.optional(),
  options: RunRequestOptions.optional(),
  includeStepResultData: z
    .boolean()
    .optional()
    .describe(
      'false: the step results of a synchronous answer carry stepId, success, error, notes, loop, ' +
        'pagination and timing (startedAt, durationMs), not data. Default true (the full step results).',
    ),
  files: z
    .record(z.string(), JsonValue)
    .optional()
    .describe(
      "superglue's file inputs. kubeglue has none (put file content in the inputs): accepted when empty, " +
        'refused otherwise.',
    ),
  stateFixture: JsonObject.optional().describe(
    'Seeds sourceData.persistedState for this run instead of the stored tool state; the run saves no ' +
      'state changes (docs/state.md).',
  ),
};

export const RunRequest = z
  .strictObject({ inputs: JsonObject.optional(), ...runRequestFields })
  .meta({ id: 'RunRequest' });
export type RunRequest = z.infer<typeof RunRequest>;

/**
 * Body of `POST /v1/runs/{runId}/resume`: the fields of a run request. Without inputs (or payload) the
 * resumed run keeps the original's; options.mode defaults to the original run's.
 */
export const ResumeRunRequest = z
  .strictObject({
    inputs: JsonObject.optional().describe("The inputs; absent: the original run's."),
    payload: JsonObject.optional().describe(
      "The inputs, as superglue names them; absent: the original run's.",
    ),
    ...runRequestFields,
  })
  .refine((body) => body.payload === undefined || body.inputs === undefined, {
    message: 'give the inputs as payload or as inputs, not both',
    path: ['inputs'],
  })
  .meta({ id: 'ResumeRunRequest' });
export type ResumeRunRequest = z.infer<typeof ResumeRunRequest>;

/** Body of `POST /v1/tools/run`: a tool definition run without saving it. */
export const DraftRunRequest = z
  .strictObject({
    tool: ToolDefinition.describe('The definition to run; it is not saved, and any id may be used.'),
    payload: JsonObject.optional().describe('The inputs (superglue names them payload).'),
    inputs: JsonObject.optional().describe('The inputs, as POST /v1/tools/{id}/run names them.'),
    ...runRequestFields,
    executionKind: z
      .enum(['full', 'draft', 'single-step'])
      .optional()
      .describe("Sent by superglue's clients; accepted and ignored."),
    parentToolId: z
      .string()
      .max(256)
      .optional()
      .describe("Sent by superglue's clients; accepted and ignored."),
    draftId: z.string().max(256).optional().describe("Sent by superglue's clients; accepted and ignored."),
    untilStep: z
      .string()
      .optional()
      .describe(
        'Try the definition up to this step (a step id): the steps run in order up to and including it, ' +
          'then the run stops (no output transform or schema); the answer carries `until`, the sourceData ' +
          'the next step would receive. Synchronous only.',
      ),
  })
  .refine((body) => body.payload === undefined || body.inputs === undefined, {
    message: 'give the inputs as payload or as inputs, not both',
    path: ['inputs'],
  })
  .superRefine((body, ctx) => {
    const ids = body.tool.steps.map((step) => step.id);
    if (body.untilStep === undefined || ids.includes(body.untilStep)) return;
    ctx.addIssue({
      code: 'custom',
      path: ['untilStep'],
      message: `no step '${body.untilStep}' in the definition; its steps are ${ids.map((id) => `'${id}'`).join(', ') || 'none'}`,
    });
  })
  .meta({ id: 'DraftRunRequest' });
export type DraftRunRequest = z.infer<typeof DraftRunRequest>;

export const DraftRunQuery = z.strictObject({
  createRun: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true')
    .describe('true: the run is recorded like any other (GET /v1/runs); false (default): nothing is stored.'),
  token: z.string().optional(),
});

/** Body of `POST /v1/tools/step/run`: one step of a tool, with the inputs and earlier step results. */
export const StepRunRequest = z
  .strictObject({
    step: ToolStep,
    payload: JsonObject.optional().describe('The inputs.'),
    previousResults: JsonObject.optional().describe(
      'Results of earlier steps by step id, as sourceData holds them ({ "<stepId>": { "data": … } }).',
    ),
    credentials: RuntimeCredentials.optional(),
    options: z
      .strictObject({ timeout: RunOptions.shape.timeout })
      .optional()
      .describe('timeout: milliseconds, bounds the step.'),
    runId: RunId.optional(),
    systemIds: SystemIdsField,
    createRun: z.boolean().optional().describe('true: record the step run like any other run.'),
    parentToolId: ToolId.optional().describe(
      'The tool the step belongs to: the recorded run carries it as toolId (default: the step id).',
    ),
    files: runRequestFields.files,
    stepIndex: z.number().int().min(0).optional().describe("Sent by superglue's clients; ignored."),
    stepId: z.string().optional().describe("Sent by superglue's clients; must equal step.id when given."),
  })
  .refine((body) => body.stepId === undefined || body.stepId === body.step.id, {
    message: 'must equal step.id',
    path: ['stepId'],
  })
  .refine((body) => unusedSystemIds(body.systemIds, [body.step]).length === 0, {
    message: "lists a system the step does not use (kubeglue takes the step's config.systemId)",
    path: ['systemIds'],
  })
  .meta({ id: 'StepRunRequest' });
export type StepRunRequest = z.infer<typeof StepRunRequest>;

export const StepRunQuery = z.strictObject({
  stream: z
    .enum(['true', 'false'])
    .optional()
    .describe("Sent by superglue's clients; kubeglue always answers JSON (they accept that)."),
  token: z.string().optional(),
});

/** Answer of `POST /v1/tools/step/run`. */
export const StepRunResult = z
  .object({
    stepId: z.string(),
    success: z.boolean(),
    data: JsonValue.optional(),
    error: z.string().optional(),
    notes: z.array(z.string()).optional(),
    runId: z.string().describe('Extension: the run id (recorded only with createRun).'),
  })
  .meta({ id: 'StepRunResult' });

/** The failed items a loop step's result lists; its counts cover every item. */
export const LOOP_FAILURES_LISTED = 100;
/** The failed items a step_finished event lists (an event crosses between replicas in one small message). */
export const LOOP_FAILURES_IN_EVENTS = 5;

/** A loop step (a dataSelector that returned an array): its items, and which failed with what error. */
export const StepLoop = z
  .object({
    items: z.number().int().nonnegative().describe("How many items the step's dataSelector returned."),
    failed: z.number().int().nonnegative().describe('How many of them failed.'),
    failedItems: z
      .array(
        z.object({
          index: z
            .number()
            .int()
            .nonnegative()
            .describe("The item's place in the dataSelector's array (from 0)."),
          error: z.string().describe("The item's error (at most 1 000 characters)."),
        }),
      )
      .describe(
        `The first failed items, in item order: at most ${LOOP_FAILURES_LISTED} in a step result, ` +
          `${LOOP_FAILURES_IN_EVENTS} in an event (each error cut to 300 characters there). The step's data ` +
          'holds every item.',
      ),
  })
  .meta({ id: 'StepLoop' });
export type StepLoop = z.infer<typeof StepLoop>;

/** Why a paginated step fetched no further page (docs/tools.md, "Pagination"). */
export const PaginationStop = z.enum([
  'stopCondition',
  'emptyPage',
  'shortPage',
  'emptyCursor',
  'absentCursor',
  'repeatedCursor',
  'repeatedPage',
  'noNextPage',
]);
export type PaginationStop = z.infer<typeof PaginationStop>;

/** How a paginated step's pagination went: what it fetched and why it ended. */
export const StepPagination = z
  .object({
    pages: z.number().int().positive().describe('Pages fetched (a repeated page, not merged, counts).'),
    items: z
      .number()
      .int()
      .nonnegative()
      .describe("Items merged (the stopCondition's pageInfo.totalFetched)."),
    stoppedBy: PaginationStop.describe('The rule that ended pagination.'),
    reason: z
      .string()
      .describe('The same in a sentence, naming the page, e.g. "page 3 had null at cursorPath \'next\'".'),
  })
  .meta({ id: 'StepPagination' });
export type StepPagination = z.infer<typeof StepPagination>;

export const StepResult = z
  .object({
    stepId: z.string(),
    success: z.boolean(),
    data: JsonValue.optional(),
    error: z.string().optional(),
    notes: z
      .array(z.string())
      .optional()
      .describe(
        'kubeglue extension: what the step did differently than written, e.g. system credentials withheld ' +
          "from a URL outside the system's origins.",
      ),
    loop: StepLoop.optional().describe(
      'Extension: a step that looped over an array: how many items, how many failed and the first failed ' +
        "items with their errors (with failureBehavior continue the step succeeds whatever its items' outcome).",
    ),
    pagination: StepPagination.optional().describe(
      'Extension: a paginated step (not a loop): pages and items fetched, and why pagination ended.',
    ),
    startedAt: Instant.optional().describe(
      'Extension: when the step started; in the stored results of runs executed by a worker pool (not ' +
        'by a runner Pod), and in synchronous answers with includeStepResultData false.',
    ),
    durationMs: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('Extension: how long the step took; where startedAt is.'),
    reusedFrom: z
      .string()
      .optional()
      .describe(
        'Extension: in a resumed run, the step was not executed again: its result is the stored one of ' +
          'this run (where the step last executed), reused because its definition is unchanged.',
      ),
  })
  .meta({ id: 'StepResult' });
export type StepResult = z.infer<typeof StepResult>;

export const FileArtifact = z
  .object({
    fileKey: z.string(),
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int().nonnegative(),
    downloadUrl: z.url().optional(),
  })
  .meta({ id: 'FileArtifact' });
export type FileArtifact = z.infer<typeof FileArtifact>;

export const RunMetadata = z.object({
  startedAt: Instant,
  completedAt: Instant.optional(),
  durationMs: z.number().int().nonnegative().optional(),
  warnings: z
    .array(z.string())
    .optional()
    .describe(
      'What the run did not do as written without failing: state changes not saved (limits, a credential ' +
        'value, keys another run changed first; docs/state.md).',
    ),
  state: RunStateRecord.optional().describe(
    "Extension: the tool's persistent state the run read and wrote; absent for tools that do not use it.",
  ),
});

/**
 * The answer's `until` to a try (`POST /v1/tools/run` with untilStep): where the run stopped and what the
 * next step would receive.
 */
export const RunUntil = z
  .object({
    stepId: z.string().describe('The step the run stopped after (untilStep).'),
    nextStepId: z
      .string()
      .optional()
      .describe('The step that would run next; absent when untilStep is the last step.'),
    sourceDataKeys: z
      .array(z.string())
      .describe("The keys of sourceData: the inputs, each finished step's id, persistedState."),
    sourceData: JsonObject.optional().describe(
      'The sourceData the next step receives, as the engine builds it: the inputs, then each finished ' +
        'step by its id ({ currentItem, data, success }; a loop step: an array of those, one per item), then ' +
        'persistedState if the tool uses ' +
        'state; every credential value replaced by its placeholder, never a system credential. A loop step ' +
        'also gets currentItem per item. Absent with includeStepResultData false.',
    ),
  })
  .meta({ id: 'RunUntil' });
export type RunUntil = z.infer<typeof RunUntil>;

/** Where a live run waits before it executes (GET /v1/runs/{runId}, the runs list). */
export const RunWaiting = z
  .object({
    reason: z
      .literal('ToolConcurrencyLimit')
      .describe("Why it waits: its tool's maxConcurrentRuns runs execute already (docs/reasons.md)."),
    message: z.string().describe('The same in a sentence, with its place in the queue and the limit.'),
    position: z.number().int().positive().describe("1-based place in the tool's queue."),
    inUse: z.number().int().nonnegative().describe('Runs of the tool executing now.'),
    limit: z.number().int().positive().describe("The tool's maxConcurrentRuns."),
    since: Instant.describe('When it started waiting.'),
  })
  .meta({ id: 'RunWaiting' });
export type RunWaiting = z.infer<typeof RunWaiting>;

export const Run = z
  .object({
    runId: z.string(),
    toolId: z.string(),
    tool: Tool.optional(),
    status: RunStatus,
    toolPayload: JsonObject.optional(),
    data: JsonValue.optional(),
    error: z.string().optional(),
    stepResults: z.array(StepResult).optional(),
    options: RunOptions.optional(),
    requestSource: RequestSource.optional(),
    traceId: z.string().optional(),
    resultStorageUri: z.string().optional(),
    userId: z.string().optional(),
    executionMode: ExecutionMode.optional(),
    parentRunId: z
      .string()
      .optional()
      .describe('Extension: the run whose completion started this chained run.'),
    scheduleId: z
      .string()
      .optional()
      .describe('Extension: the schedule whose tick started this run (requestSource scheduler).'),
    resumedFrom: z
      .string()
      .optional()
      .describe(
        'Extension: the run this one resumes (POST /v1/runs/{runId}/resume); its reused step results say ' +
          'reusedFrom.',
      ),
    attempt: Attempt.optional().describe(
      'Extension: which execution of the run this is. 1, unless the execution of a read-only async run ' +
        '(every step modify: false) was lost (a shutdown, a crash, a runner Pod gone) and the run started ' +
        'over from its first step.',
    ),
    waiting: RunWaiting.optional().describe(
      "Extension: a running run that waits for one of its tool's slots (maxConcurrentRuns, whenAtCapacity queue); absent once it executes.",
    ),
    until: RunUntil.optional().describe(
      'Extension: only in the answer to a try (POST /v1/tools/run with untilStep), never stored.',
    ),
    metadata: RunMetadata,
    fileArtifacts: z.array(FileArtifact).optional(),
    recording: RecordingSummary.optional().describe(
      'Extension: what the run recorded (options.record); its exchanges: GET /v1/runs/{runId}/recording.',
    ),
    important_notice: z.string().optional(),
  })
  .meta({ id: 'Run' });
export type Run = z.infer<typeof Run>;

export const RunResults = z
  .object({
    success: z.boolean(),
    data: z
      .object({
        runId: z.string(),
        success: z.boolean(),
        data: JsonValue.nullable(),
        stepResults: z.array(StepResult),
        toolPayload: JsonObject.nullable(),
        error: z.string().nullable(),
        storedAt: Instant,
      })
      .nullable(),
    message: z.string(),
  })
  .meta({ id: 'RunResults' });
export type RunResults = z.infer<typeof RunResults>;

export const FileDownloadInfo = z
  .object({
    success: z.boolean(),
    fileKey: z.string(),
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int().nonnegative(),
    downloadUrl: z.url(),
    expiresIn: z.number().int(),
  })
  .meta({ id: 'FileDownloadInfo' });

export const FileList = z.object({ fileArtifacts: z.array(FileArtifact) }).meta({ id: 'FileList' });

export const WebhookAccepted = z
  .object({ runId: z.string(), status: z.literal('accepted'), toolId: z.string() })
  .meta({ id: 'WebhookAccepted' });

export const RUNS_PAGE_LIMIT_DEFAULT = 50;
export const RUNS_PAGE_LIMIT_MAX = 100;

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0),
);

/** Offset paging reaches at most this many runs deep (page × limit); deeper lists use the cursor. */
export const RUNS_OFFSET_MAX = 10_000;

/** Query of `GET /v1/runs`. */
export const ListRunsQuery = z
  .strictObject({
    toolId: z.string().min(1).optional(),
    status: RunStatus.optional(),
    requestSources: commaList.pipe(z.array(RequestSource)).optional(),
    userId: z.string().min(1).optional(),
    systemId: z.string().min(1).optional(),
    startedAfter: Instant.optional().describe(
      'Runs started at or after this instant (date-time), as superglue names it.',
    ),
    startedBefore: Instant.optional().describe(
      'Extension: runs started before this instant (date-time); with startedAfter, a time range.',
    ),
    page: z.coerce
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`Default 1. page × limit may not exceed ${RUNS_OFFSET_MAX}: page deeper with cursor.`),
    limit: pageLimit(RUNS_PAGE_LIMIT_DEFAULT, RUNS_PAGE_LIMIT_MAX),
    cursor: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe('Extension: the nextCursor of the previous page; continues right after it, at any depth.'),
    token: z.string().optional(),
  })
  .refine((query) => query.page === undefined || query.cursor === undefined, {
    message: 'give either page or cursor, not both',
    path: ['cursor'],
  });
export type ListRunsQuery = z.infer<typeof ListRunsQuery>;

export const RUN_LOG_EVENT_TYPES = [
  'run_started',
  'step_started',
  'page_fetched',
  'retry',
  'budget_wait',
  'step_finished',
  'run_finished',
] as const;

/**
 * One event of `GET /v1/logs/stream` (the `data:` of a Server-Sent Event, one JSON line). Ids, statuses,
 * counts, timings and redacted errors only: never step data, inputs or credentials.
 */
export const RunLogEvent = z
  .object({
    id: z
      .string()
      .describe('Unique per run and event (also the SSE id): <runId>:<n>, <runId>:start, <runId>:end.'),
    type: z.enum(RUN_LOG_EVENT_TYPES),
    level: z.enum(['INFO', 'WARN', 'ERROR']),
    message: z.string().describe('One human-readable line.'),
    timestamp: Instant,
    traceId: z.string(),
    runId: z.string(),
    toolId: z.string(),
    stepId: z.string().optional(),
    status: z
      .enum(['running', 'success', 'failed', 'aborted'])
      .optional()
      .describe('run_started: running; step_finished: success or failed; run_finished: the final status.'),
    page: z.number().int().optional().describe('page_fetched: the page number (from 1).'),
    totalFetched: z.number().int().optional().describe('page_fetched: items merged so far.'),
    attempt: z.number().int().optional().describe('retry: the attempt about to be made (2, 3, …).'),
    delayMs: z
      .number()
      .int()
      .optional()
      .describe("retry: the wait before it; budget_wait: the wait for the system's rate budget."),
    system: z
      .string()
      .optional()
      .describe(
        "budget_wait: the system whose budget the step waits for (its base URL's host, else its id).",
      ),
    httpStatus: z
      .number()
      .int()
      .optional()
      .describe('retry: the status that is retried (absent: a network error).'),
    durationMs: z.number().int().optional().describe('step_finished and run_finished.'),
    error: z.string().optional().describe('The redacted error (at most 1 000 characters).'),
    loop: StepLoop.optional().describe(
      `step_finished of a loop step: its items, how many failed, the first ${LOOP_FAILURES_IN_EVENTS} failed ones.`,
    ),
  })
  .meta({ id: 'RunLogEvent' });
export type RunLogEvent = z.infer<typeof RunLogEvent>;

export const LogStreamQuery = z
  .strictObject({
    traceId: z.string().min(1).max(128).optional().describe('Follow the runs with this trace id.'),
    runId: z.string().min(1).max(128).optional().describe('Follow this run.'),
    token: z.string().optional(),
  })
  .refine((query) => query.traceId !== undefined || query.runId !== undefined, {
    message: 'give traceId or runId: the stream follows one run (or the runs of one trace)',
    path: ['traceId'],
  });
