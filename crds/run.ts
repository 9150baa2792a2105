import { z } from 'zod';
import { JsonObject, JsonValue } from './json.ts';
import { Tool, ToolId } from './tool.ts';

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

export const RunId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'may contain only letters, digits, ".", "_", ":" and "-"');

export const MAX_RUN_TIMEOUT_MS = 24 * 60 * 60 * 1000;

/** `tool:<toolId>` chains a tool; anything else must be an http(s) URL. */
export const WebhookUrl = z.string().refine((value) => {
  if (value.startsWith('tool:')) return ToolId.safeParse(value.slice('tool:'.length)).success;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'must be an http(s) URL or tool:<toolId>');

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
  })
  .meta({ id: 'RunOptions' });
export type RunOptions = z.infer<typeof RunOptions>;

/** Runtime credentials: by their own names, or grouped per system id. */
export const RuntimeCredentials = z.record(
  z.string(),
  z.union([z.string(), z.record(z.string(), z.string())]),
);
export type RuntimeCredentials = z.infer<typeof RuntimeCredentials>;

export const RunRequest = z
  .strictObject({
    runId: RunId.optional(),
    inputs: JsonObject.optional(),
    credentials: RuntimeCredentials.optional(),
    options: RunOptions.extend({ requestSource: ClientRequestSource.optional() }).optional(),
  })
  .meta({ id: 'RunRequest' });
export type RunRequest = z.infer<typeof RunRequest>;

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
  startedAt: z.iso.datetime({ offset: true }),
  completedAt: z.iso.datetime({ offset: true }).optional(),
  durationMs: z.number().int().nonnegative().optional(),
});

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
    metadata: RunMetadata,
    fileArtifacts: z.array(FileArtifact).optional(),
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
        storedAt: z.iso.datetime({ offset: true }),
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
    page: z.coerce
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`Default 1. page × limit may not exceed ${RUNS_OFFSET_MAX}: page deeper with cursor.`),
    limit: z.coerce.number().int().min(1).max(RUNS_PAGE_LIMIT_MAX).default(RUNS_PAGE_LIMIT_DEFAULT),
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
