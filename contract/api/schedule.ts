import { z } from 'zod';
import { Instant, JsonObject } from '../json.ts';
import { reasonList, ScheduleReason, ScheduleStatusReason, TickReason } from '../reasons.ts';
import { CONTROL_CHARACTERS } from '../text.ts';
import { listEnvelope } from './bodies.ts';
import { pageLimit } from './paging.ts';
import { ExecutionMode, RunOptions, WebhookUrl } from './run.ts';
import { freeForm, ToolId } from './tool.ts';

/**
 * Schedules: the fields a ToolSchedule resource and the /v1 schedule routes share, the REST bodies as
 * superglue's clients send them (`sg schedule create|edit|list`) and the schedule they read back. Which
 * ticks a cron expression has, and how DST and missed ticks are handled, is schedules/'s.
 */

/** The @-shorthands a schedule may use instead of five fields (`@reboot` has no meaning here). */
export const CRON_SHORTHANDS = [
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@midnight',
  '@hourly',
] as const;

/**
 * The shape of a cron expression: five fields or a shorthand. The API server's schema checks the shape;
 * whether each field makes sense (minute 61, February 31st only) is checked by schedules/ when the
 * schedule is written through REST, and reported on the resource when it is applied with kubectl.
 * A field holds no control character (contract/text.ts): `kubeglue schedules` and the dashboard print it.
 */
const CRON_FIELD = `[^\\s${CONTROL_CHARACTERS}]+`;
export const CronExpression = z
  .string()
  .max(256)
  .regex(
    new RegExp(`^\\s*(?:${CRON_SHORTHANDS.join('|')}|${CRON_FIELD}(?:\\s+${CRON_FIELD}){4})\\s*$`),
    'must be five cron fields (minute hour day-of-month month day-of-week) without control characters, ' +
      `or one of ${CRON_SHORTHANDS.join(', ')}`,
  )
  .describe(
    'Cron expression: minute hour day-of-month month day-of-week (`*/15 * * * *`, `0 9 * * MON-FRI`), or ' +
      `${CRON_SHORTHANDS.join(', ')}. Evaluated in timeZone.`,
  );

const TIME_ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

/** Whether the runtime knows `name` as an IANA time zone (`Europe/Berlin`, `UTC`). */
export function isTimeZone(name: string): boolean {
  if (!TIME_ZONE_NAME.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

export const TimeZone = z
  .string()
  .min(1)
  .max(64)
  .refine(isTimeZone, 'must be an IANA time zone name such as Europe/Berlin, America/New_York or UTC')
  .describe('IANA time zone the cron expression is read in (DST included). Default UTC.');

export const ConcurrencyPolicy = z
  .enum(['Allow', 'Forbid', 'Replace'])
  .describe(
    'What a tick does while a run of the previous ticks still runs: Allow starts another, Forbid skips ' +
      'the tick, Replace cancels the running run and starts the new one. Default Allow.',
  );
export type ConcurrencyPolicy = z.infer<typeof ConcurrencyPolicy>;

export const MAX_SCHEDULE_RETRIES = 10;

/** The run options each scheduled run gets; scheduled runs are always asynchronous. */
export const ScheduleRunOptions = z
  .strictObject({
    mode: ExecutionMode.optional().describe('Which system credentials the runs use: prod (default) or dev.'),
    timeout: RunOptions.shape.timeout,
    retries: z
      .number()
      .int()
      .min(0)
      .max(MAX_SCHEDULE_RETRIES)
      .optional()
      .describe(
        `How often a run of a tick that failed is started again, as a new run of the same tick (0 to ${MAX_SCHEDULE_RETRIES}; default 0). A cancelled run is not retried.`,
      ),
    webhookUrl: WebhookUrl.optional().describe(
      'An http(s) URL notified when each run ends (signed), or tool:<toolId> to start that tool with the data of each successful run.',
    ),
  })
  .meta({ id: 'ScheduleRunOptions' });
export type ScheduleRunOptions = z.infer<typeof ScheduleRunOptions>;

/** Whose rights the scheduled runs carry: set from the API key that wrote the schedule through REST. */
export const ScheduleRunAs = z
  .strictObject({
    userId: z.string().min(1).optional().describe('The API key the runs are recorded as started by.'),
    toolIds: z
      .array(z.string().min(1))
      .optional()
      .describe('The tools that key is limited to: each run (and its chains) is limited to them too.'),
    systemIds: z
      .array(z.string().min(1))
      .optional()
      .describe('The systems that key may use: each run is limited to them too.'),
  })
  .describe(
    'Set by the REST API from the key that created or last changed the schedule, so its runs never have ' +
      'more rights than that key: each tick checks that key as it is then (revoked, or no longer allowed ' +
      'the tool, its systems or runs:execute: the schedule pauses). Absent (a schedule applied with ' +
      'kubectl): the runs are not restricted.',
  );
export type ScheduleRunAs = z.infer<typeof ScheduleRunAs>;

/**
 * The schedule id: a DNS-1123 name. Ids are unique per tool (two tools may each have a schedule `nightly`);
 * the ToolSchedule's metadata.name is the id when the server chose it, else the id and a hash of the tool
 * and the id, with the id in spec.id (contract/resources/convert.ts).
 */
export const ScheduleId = z
  .string()
  .min(1)
  .max(253)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be lower-case letters, digits, "-" and "." (a Kubernetes resource name)',
  );

/** The spec of a ToolSchedule, field by field (contract/resources/kinds.ts assembles the resource). */
export const scheduleFields = {
  id: ScheduleId.optional().describe(
    'The schedule id the REST API shows, unique per tool; absent: metadata.name. Set by the REST API when the request chose the id.',
  ),
  toolId: ToolId.describe('The tool each tick runs (its id, as in /v1/tools/{toolId}).'),
  schedule: CronExpression,
  timeZone: TimeZone.default('UTC'),
  inputs: freeForm(JsonObject).optional().describe("The inputs of every run (the tool's payload)."),
  options: ScheduleRunOptions.optional().describe(
    'The run options every run of a tick gets: mode, timeout, retries, webhookUrl.',
  ),
  suspend: z
    .boolean()
    .default(false)
    .describe('true: no tick starts a run until it is false again; ticks passed meanwhile are not made up.'),
  concurrencyPolicy: ConcurrencyPolicy.default('Allow'),
  startingDeadlineSeconds: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'A tick whose run could not start in time (kubeglue was down) still runs if it is at most this many ' +
        'seconds late; later it is recorded as missed. Absent: the latest missed tick runs however late. ' +
        'Never more than one missed tick runs.',
    ),
  runAs: ScheduleRunAs.optional(),
};

/** What the server says about a schedule: whether its ticks run, and if not why. */
export const ScheduleState = z
  .enum(['active', 'disabled', 'paused', 'invalid'])
  .describe(
    'active: ticks start runs. disabled: enabled is false. paused: ticks start no run until the cause ' +
      'goes (statusReason): the tool is archived or deleted, the payload no longer satisfies its ' +
      'inputSchema, or the API key the schedule runs as was revoked or may no longer run it. invalid: the ' +
      'cron expression or time zone cannot be evaluated (only possible for a schedule applied with kubectl).',
  );

/** One schedule as the REST API answers (superglue's ToolSchedule plus kubeglue's fields). */
export const ToolSchedule = z
  .object({
    id: z.string().describe('The schedule id (the ToolSchedule resource name).'),
    toolId: z.string(),
    cronExpression: z.string(),
    timezone: z.string(),
    enabled: z.boolean().describe('false: ticks do not run (the resource has suspend: true).'),
    payload: JsonObject.describe('The inputs of every run.'),
    options: ScheduleRunOptions,
    createdByUserId: z.string().optional().describe('The API key that created or last changed it.'),
    lastRunAt: Instant.optional().describe('The tick the latest run was started for.'),
    nextRunAt: Instant.nullable().describe(
      'The next tick after now (also while disabled or paused: the tick that would run); null when the ' +
        'expression never matches or cannot be evaluated.',
    ),
    createdAt: Instant,
    updatedAt: Instant,
    concurrencyPolicy: ConcurrencyPolicy,
    startingDeadlineSeconds: z.number().int().nullable(),
    status: ScheduleState,
    statusReason: z
      .string()
      .describe(
        `Why, as a named reason (docs/reasons.md): ${reasonList(ScheduleReason)}, or ${reasonList(ScheduleStatusReason)} before the operator first looked at it.`,
      ),
    statusMessage: z.string().describe('Why, for people.'),
    activeRunIds: z
      .array(z.string())
      .describe('Runs of this schedule running now (read from the run records at each request).'),
    lastRunId: z.string().optional().describe('The run started for the latest tick.'),
    lastTick: z
      .object({
        at: Instant,
        outcome: z.enum(['started', 'skipped', 'missed']),
        reason: z.string().optional(),
      })
      .optional()
      .describe(
        `The latest tick acted on: started (its run started), skipped or missed, with the reason (docs/reasons.md): ${reasonList(TickReason)}.`,
      ),
  })
  .meta({ id: 'ToolSchedule' });
export type ToolSchedule = z.infer<typeof ToolSchedule>;

export const ToolScheduleList = listEnvelope(ToolSchedule).meta({ id: 'ToolScheduleList' });

export const SCHEDULES_PAGE_LIMIT_MAX = 1000;

/** Query of `GET /v1/schedules` and `GET /v1/tools/{toolId}/schedules`. */
export const ListSchedulesQuery = z.strictObject({
  page: z.coerce.number().int().min(1).default(1),
  limit: pageLimit(100, SCHEDULES_PAGE_LIMIT_MAX),
  token: z.string().optional(),
});

/** Fields kubeglue adds to what superglue's clients send. */
const kubeglueFields = {
  concurrencyPolicy: ConcurrencyPolicy.optional(),
  startingDeadlineSeconds: scheduleFields.startingDeadlineSeconds.nullable(),
};

/** `POST /v1/tools/{toolId}/schedules`, as `sg schedule create` sends it. */
export const ToolScheduleCreateBody = z
  .strictObject({
    id: ScheduleId.optional().describe('Default: a new UUID.'),
    toolId: ToolId.optional().describe('Must equal the path when given.'),
    cronExpression: CronExpression,
    timezone: TimeZone.optional().describe('Default UTC.'),
    enabled: z.boolean().optional().describe('Default true.'),
    payload: JsonObject.optional().describe(
      "The inputs of every run (absent: {}), checked against the tool's inputSchema; at most KUBEGLUE_MAX_SCHEDULE_PAYLOAD_BYTES as JSON.",
    ),
    options: ScheduleRunOptions.optional(),
    ...kubeglueFields,
  })
  .meta({ id: 'ToolScheduleCreateBody' });
export type ToolScheduleCreateBody = z.infer<typeof ToolScheduleCreateBody>;

/** `PUT /v1/tools/{toolId}/schedules/{scheduleId}`: what is given changes, the rest stays (`sg schedule edit`). */
export const ToolScheduleUpdateBody = z
  .strictObject({
    id: z.string().optional().describe('Must equal the path when given.'),
    toolId: ToolId.optional().describe('Must equal the path when given.'),
    cronExpression: CronExpression.optional(),
    timezone: TimeZone.optional(),
    enabled: z.boolean().optional(),
    payload: JsonObject.optional(),
    options: ScheduleRunOptions.optional().describe('Replaces the options as a whole.'),
    ...kubeglueFields,
  })
  .meta({ id: 'ToolScheduleUpdateBody' });
export type ToolScheduleUpdateBody = z.infer<typeof ToolScheduleUpdateBody>;

export const NEXT_RUNS_MAX = 20;

/** Query of `GET /v1/schedules/next-runs`: when an expression would run, before a schedule is written. */
export const ScheduleNextRunsQuery = z.strictObject({
  cronExpression: CronExpression,
  timezone: TimeZone.default('UTC'),
  count: pageLimit(5, NEXT_RUNS_MAX).describe(
    `How many ticks to list: default 5; values above ${NEXT_RUNS_MAX} are clamped to ${NEXT_RUNS_MAX}.`,
  ),
  token: z.string().optional(),
});

export const ScheduleNextRuns = z
  .object({
    cronExpression: z.string().describe('The expression as it is evaluated (whitespace collapsed).'),
    timezone: z.string(),
    nextRuns: z
      .array(Instant)
      .describe(
        'The next ticks after now, as a schedule with this expression would run them (DST rules included; fewer when the expression runs out of dates).',
      ),
  })
  .meta({ id: 'ScheduleNextRuns' });
export type ScheduleNextRuns = z.infer<typeof ScheduleNextRuns>;
