/**
 * The /v1 shapes the dashboard reads, as TypeScript types inferred from contract/api's zod schemas. Types
 * only: bundling the schemas themselves would add ~100 KB of compressed JavaScript (zod and every schema
 * of the contract; docs/developers/architecture.md has the measurement), and the server already validates
 * what it answers with them.
 */
import type { z } from 'zod';
import type {
  ApiKeyCreateBody as ApiKeyCreateBodySchema,
  ApiKeyCreated as ApiKeyCreatedSchema,
  ApiKeyList as ApiKeyListSchema,
  ApiKey as ApiKeySchema,
  ErrorBody,
  GatewayList as GatewayListSchema,
  Gateway as GatewaySchema,
  ListToolsQuery as ListToolsQuerySchema,
  Me as MeSchema,
  RunList as RunListSchema,
  Scope as ScopeSchema,
  SystemList as SystemListSchema,
  ToolFolder as ToolFolderSchema,
  ToolList as ToolListSchema,
} from '../../contract/api/bodies.ts';
import type { ErrorIssue as ErrorIssueType } from '../../contract/api/errors.ts';
import type {
  RecordedExchange as RecordedExchangeSchema,
  RecordingAnswer as RecordingAnswerSchema,
} from '../../contract/api/recording.ts';
import type {
  ReplayAnswer as ReplayAnswerSchema,
  ReplayValueDiff as ReplayValueDiffSchema,
} from '../../contract/api/replay.ts';
import type {
  FileArtifact as FileArtifactSchema,
  ListRunsQuery as ListRunsQuerySchema,
  RequestSource as RequestSourceSchema,
  RunLogEvent as RunLogEventSchema,
  RunRequest as RunRequestSchema,
  RunResults as RunResultsSchema,
  Run as RunSchema,
  RunStatus as RunStatusSchema,
  StepResult as StepResultSchema,
} from '../../contract/api/run.ts';
import type {
  RunStatsQuery as RunStatsQuerySchema,
  RunStats as RunStatsSchema,
} from '../../contract/api/run-stats.ts';
import type {
  ScheduleNextRuns as ScheduleNextRunsSchema,
  ToolScheduleCreateBody as ToolScheduleCreateBodySchema,
  ToolScheduleList as ToolScheduleListSchema,
  ToolSchedule as ToolScheduleSchema,
} from '../../contract/api/schedule.ts';
import type {
  ToolCreateBody as ToolCreateBodySchema,
  Tool as ToolSchema,
  ToolStep as ToolStepSchema,
  ToolUpdateBody as ToolUpdateBodySchema,
} from '../../contract/api/tool.ts';
import type {
  ToolStateAnswer as ToolStateAnswerSchema,
  ToolStateDeleteAnswer as ToolStateDeleteAnswerSchema,
} from '../../contract/api/tool-state.ts';
import type {
  SavedToolTest as SavedToolTestSchema,
  ToolTest as ToolTestSchema,
} from '../../contract/api/tool-test.ts';
import type { ToolTestAnswer as ToolTestAnswerSchema } from '../../contract/api/tool-test-result.ts';

export type Run = z.infer<typeof RunSchema>;
export type RunStatus = z.infer<typeof RunStatusSchema>;
export type RequestSource = z.infer<typeof RequestSourceSchema>;
export type RunList = z.infer<typeof RunListSchema>;
export type RunResults = z.infer<typeof RunResultsSchema>;
export type StepResult = z.infer<typeof StepResultSchema>;
export type FileArtifact = z.infer<typeof FileArtifactSchema>;
export type RecordingAnswer = z.infer<typeof RecordingAnswerSchema>;
export type RecordedExchange = z.infer<typeof RecordedExchangeSchema>;
export type RunLogEvent = z.infer<typeof RunLogEventSchema>;
export type ReplayAnswer = z.infer<typeof ReplayAnswerSchema>;
export type ReplayValueDiff = z.infer<typeof ReplayValueDiffSchema>;
export type ToolTest = z.infer<typeof ToolTestSchema>;
export type ToolTestAnswer = z.infer<typeof ToolTestAnswerSchema>;
export type SavedToolTest = z.infer<typeof SavedToolTestSchema>;
export type Me = z.infer<typeof MeSchema>;
export type ApiErrorBody = ErrorBody;
export type ErrorIssue = ErrorIssueType;
export type Tool = z.infer<typeof ToolSchema>;
export type ToolStep = z.infer<typeof ToolStepSchema>;
export type ToolFolder = z.infer<typeof ToolFolderSchema>;
/** What POST /v1/tools and PUT /v1/tools/{id} take, as sent (defaults not yet applied). */
export type ToolCreateBody = z.input<typeof ToolCreateBodySchema>;
export type ToolUpdateBody = z.input<typeof ToolUpdateBodySchema>;
export type RunRequest = z.input<typeof RunRequestSchema>;
/** The query of GET /v1/tools as the client sends it. */
export type ListToolsQuery = Partial<
  Record<Exclude<keyof z.input<typeof ListToolsQuerySchema>, 'token'>, string>
>;
/** The query of GET /v1/runs as the client sends it (strings, before the server's coercion). */
export type ListRunsQuery = Partial<
  Record<Exclude<keyof z.input<typeof ListRunsQuerySchema>, 'token'>, string>
>;

export type RunStats = z.infer<typeof RunStatsSchema>;
/** The query of GET /v1/stats/runs as the client sends it. */
export type RunStatsQuery = Partial<
  Record<Exclude<keyof z.input<typeof RunStatsQuerySchema>, 'token'>, string>
>;

/** The values the enums above take, for the filters' options (the contract's lists, written as types). */
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'success', 'failed', 'aborted'];
export const REQUEST_SOURCES: readonly RequestSource[] = [
  'api',
  'frontend',
  'scheduler',
  'mcp',
  'tool-chain',
  'webhook',
  'cli',
];

export type ToolList = z.infer<typeof ToolListSchema>;
export type SystemList = z.infer<typeof SystemListSchema>;

// API keys, gateways, schedules and tool state (Settings, Gateways, Schedules, a tool's state).
export type Scope = z.infer<typeof ScopeSchema>;
export type ApiKey = z.infer<typeof ApiKeySchema>;
export type ApiKeyList = z.infer<typeof ApiKeyListSchema>;
export type ApiKeyCreated = z.infer<typeof ApiKeyCreatedSchema>;
export type ApiKeyCreateBody = z.input<typeof ApiKeyCreateBodySchema>;
export type Gateway = z.infer<typeof GatewaySchema>;
export type GatewayList = z.infer<typeof GatewayListSchema>;
export type ToolSchedule = z.infer<typeof ToolScheduleSchema>;
export type ToolScheduleList = z.infer<typeof ToolScheduleListSchema>;
export type ToolScheduleCreateBody = z.input<typeof ToolScheduleCreateBodySchema>;
export type ScheduleNextRuns = z.infer<typeof ScheduleNextRunsSchema>;
export type ToolState = z.infer<typeof ToolStateAnswerSchema>;
export type ToolStateReset = z.infer<typeof ToolStateDeleteAnswerSchema>;

/** Every scope, in the contract's order, with what it lets a key do (the contract's Scope description). */
export const SCOPES = [
  { scope: 'tools:read', what: 'list and read tools' },
  { scope: 'tools:write', what: 'create, change and delete tools; run unsaved definitions' },
  { scope: 'runs:read', what: 'runs, their results, files and live events' },
  { scope: 'runs:execute', what: 'run tools, webhooks; cancel runs' },
  { scope: 'systems:read', what: 'systems, their credential keys (never values), documentation, gateways' },
  { scope: 'systems:write', what: 'create, change and delete systems; OAuth authorization' },
  { scope: 'keys:admin', what: 'manage API keys and tunnel ownership' },
  { scope: 'gateways:host', what: 'connect gateway agents (give an agent key this scope alone)' },
] as const satisfies readonly { scope: Scope; what: string }[];
/** Fails to type-check when the contract gains a scope the list above lacks. */
const everyScopeListed: Record<Exclude<Scope, (typeof SCOPES)[number]['scope']>, never> = {};
void everyScopeListed;

// --- Systems (pages/systems/) ---
export type System = z.infer<typeof import('../../contract/api/system.ts').System>;
export type AuthType = z.infer<typeof import('../../contract/api/system.ts').AuthType>;
export type Environment = z.infer<typeof import('../../contract/api/system.ts').Environment>;
export type DocumentationState = z.infer<typeof import('../../contract/api/system.ts').DocumentationState>;
export type OAuthState = NonNullable<System['oauth']>;
/** The bodies of POST /v1/systems and PATCH /v1/systems/{id}, as sent (before the server's defaults). */
export type SystemCreateBody = z.input<typeof import('../../contract/api/system.ts').SystemCreateBody>;
export type SystemUpdateBody = z.input<typeof import('../../contract/api/system.ts').SystemUpdateBody>;
export type ConnectionTestResult = z.infer<
  typeof import('../../contract/api/system.ts').ConnectionTestResult
>;
export type DocumentationSearchAnswer = z.infer<
  typeof import('../../contract/api/documentation.ts').DocumentationSearchAnswer
>;
export type OAuthAuthorization = z.infer<typeof import('../../contract/api/oauth.ts').OAuthAuthorization>;
