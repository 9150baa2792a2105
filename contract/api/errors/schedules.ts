/** Errors of ToolSchedules. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_SCHEDULE_NOT_FOUND = define(
  'KG_ERR_SCHEDULE_NOT_FOUND',
  404,
  (toolId: string, scheduleId: string) => `Schedule '${scheduleId}' of tool '${toolId}' not found`,
  'Check both ids: GET /v1/tools/{toolId}/schedules lists the schedules of a tool, GET /v1/schedules all the key may see.',
);
export const KG_ERR_SCHEDULE_EXISTS = define(
  'KG_ERR_SCHEDULE_EXISTS',
  409,
  (scheduleId: string) => `Schedule '${scheduleId}' already exists`,
  'Leave out id (a new one is made), choose another, or change the schedule with PUT.',
);
export const KG_ERR_SCHEDULE_INVALID = define(
  'KG_ERR_SCHEDULE_INVALID',
  400,
  (problem: string) => `Invalid schedule: ${problem}`,
  'Give five cron fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily, each field in range, that match some date, and an IANA time zone such as Europe/Berlin.',
);
export const KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY = define(
  'KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY',
  409,
  (scheduleId: string) => `Schedule '${scheduleId}' is being changed concurrently; retry`,
  'Another write changed the schedule at the same moment: read it again and retry.',
);
export const KG_ERR_SCHEDULE_LIMIT = define(
  'KG_ERR_SCHEDULE_LIMIT',
  422,
  (whose: string, limit: number, setting: string) =>
    `${whose} has ${limit} schedules, the most ${setting} allows; no schedule was saved`,
  'Delete schedules that are no longer needed (GET /v1/schedules lists them), or raise the setting the message names (KUBEGLUE_MAX_SCHEDULES_PER_TOOL, KUBEGLUE_MAX_SCHEDULES_PER_KEY).',
);
export const KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE = define(
  'KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE',
  413,
  (bytes: number, limit: number, setting: string) =>
    `The schedule's payload is ${bytes} bytes as JSON, more than the limit of ${limit} bytes; ${setting} raises it`,
  "Keep a schedule's payload small (it is stored in its ToolSchedule resource): let the tool fetch large data itself, or raise the setting the message names.",
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const SCHEDULE_ERRORS: readonly CatalogEntry[] = entries;
