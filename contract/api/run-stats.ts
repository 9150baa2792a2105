/**
 * `GET /v1/stats/runs`: what the runs of a time window add up to (runs per bucket by status, and per tool
 * the counts, the failure rate and the p50/p95 duration), computed from the store, so it works without
 * Prometheus; and the async runs waiting now to start.
 */
import { z } from 'zod';
import { Instant } from '../json.ts';
import { RequestSource } from './run.ts';

/** The window when the query gives none: the hour before `to`. */
export const RUN_STATS_DEFAULT_WINDOW_MS = 60 * 60 * 1000;
/** The longest window: every run in it is read (an index scan), so it stays one week. */
export const RUN_STATS_MAX_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;
export const RUN_STATS_DEFAULT_BUCKET_SECONDS = 60;
export const RUN_STATS_MAX_BUCKETS = 1_440;
/** Tools in the answer, most runs first. */
export const RUN_STATS_MAX_TOOLS = 100;
/** Waiting runs listed, oldest first (`queue.waiting` counts them all). */
export const RUN_STATS_MAX_WAITING = 20;

const instant = Instant;

export const RunStatsQuery = z.strictObject({
  from: instant
    .optional()
    .describe(`Start of the window (inclusive; runs by their start). Default: an hour before \`to\`.`),
  to: instant.optional().describe('End of the window (exclusive). Default: now.'),
  bucket: z.coerce
    .number()
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe(
      `Seconds per bucket of \`buckets\`; default ${RUN_STATS_DEFAULT_BUCKET_SECONDS} (runs per minute). ` +
        `At most ${RUN_STATS_MAX_BUCKETS} buckets per window, and a window of at most 7 days.`,
    ),
  token: z.string().optional(),
});
export type RunStatsQuery = z.infer<typeof RunStatsQuery>;

const count = z.number().int().min(0);

/** Runs by their status (as stored now: a run counted running may have ended by the next read). */
export const RunStatusCounts = z.object({
  running: count,
  success: count,
  failed: count,
  aborted: count,
});
export type RunStatusCounts = z.infer<typeof RunStatusCounts>;

const failureRate = z
  .number()
  .min(0)
  .max(1)
  .nullable()
  .describe(
    'failed / (success + failed): the share of the runs that ended by themselves that failed (a cancelled run ' +
      'is neither); null when none did.',
  );

const duration = (what: string) =>
  z
    .number()
    .int()
    .min(0)
    .nullable()
    .describe(
      `${what} duration in ms of the runs that ended by themselves (success or failed), interpolated between ` +
        'the nearest durations (percentile_cont); null when none did.',
    );

export const RunStatsBucket = RunStatusCounts.extend({
  start: instant.describe('Start of the bucket; it holds the runs started before the next bucket.'),
});
export type RunStatsBucket = z.infer<typeof RunStatsBucket>;

export const RunStatsTool = RunStatusCounts.extend({
  toolId: z.string(),
  runs: count.describe('Runs of the tool started in the window.'),
  failureRate,
  p50Ms: duration('Median'),
  p95Ms: duration('95th percentile'),
});
export type RunStatsTool = z.infer<typeof RunStatsTool>;

export const WaitingRun = z.object({
  runId: z.string(),
  toolId: z.string(),
  requestSource: RequestSource,
  acceptedAt: instant.describe('When the run was accepted (its startedAt).'),
  admission: z
    .string()
    .optional()
    .describe(
      'Why it waits, as its ToolRun says (Admitted=False: its place in the queue and the limit reached); ' +
        'absent before the ToolRun exists or while it starts.',
    ),
});
export type WaitingRun = z.infer<typeof WaitingRun>;

export const RunStats = z
  .object({
    from: instant,
    to: instant,
    bucketSeconds: z.number().int(),
    totals: RunStatusCounts.extend({ runs: count, failureRate }),
    buckets: z
      .array(RunStatsBucket)
      .describe('Every bucket of the window in time order, empty ones included.'),
    tools: z
      .array(RunStatsTool)
      .describe(`The tools with runs in the window, most runs first (at most ${RUN_STATS_MAX_TOOLS}).`),
    toolCount: count.describe('How many tools had runs in the window.'),
    queue: z
      .object({
        waiting: count.describe(
          'Async runs accepted and not executing yet: waiting for admission (KUBEGLUE_MAX_ASYNC_RUNS) or ' +
            'about to start. Not bound to the window.',
        ),
        runs: z
          .array(WaitingRun)
          .describe(`The oldest waiting runs first (at most ${RUN_STATS_MAX_WAITING}).`),
      })
      .describe('The async runs waiting now to start.'),
  })
  .meta({ id: 'RunStats' });
export type RunStats = z.infer<typeof RunStats>;
