/**
 * The /v1 shapes the dashboard reads, as TypeScript types inferred from contract/api's zod schemas. Types
 * only: bundling the schemas themselves would add ~100 KB of compressed JavaScript (zod and every schema
 * of the contract; docs/developers/architecture.md has the measurement), and the server already validates
 * what it answers with them.
 */
import type { z } from 'zod';
import type { ErrorBody, Me as MeSchema, RunList as RunListSchema } from '../../contract/api/bodies.ts';
import type {
  FileArtifact as FileArtifactSchema,
  ListRunsQuery as ListRunsQuerySchema,
  RequestSource as RequestSourceSchema,
  RunLogEvent as RunLogEventSchema,
  RunResults as RunResultsSchema,
  Run as RunSchema,
  RunStatus as RunStatusSchema,
  StepResult as StepResultSchema,
} from '../../contract/api/run.ts';
import type {
  RunStatsQuery as RunStatsQuerySchema,
  RunStats as RunStatsSchema,
} from '../../contract/api/run-stats.ts';

export type Run = z.infer<typeof RunSchema>;
export type RunStatus = z.infer<typeof RunStatusSchema>;
export type RequestSource = z.infer<typeof RequestSourceSchema>;
export type RunList = z.infer<typeof RunListSchema>;
export type RunResults = z.infer<typeof RunResultsSchema>;
export type StepResult = z.infer<typeof StepResultSchema>;
export type FileArtifact = z.infer<typeof FileArtifactSchema>;
export type RunLogEvent = z.infer<typeof RunLogEventSchema>;
export type Me = z.infer<typeof MeSchema>;
export type ApiErrorBody = ErrorBody;
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
