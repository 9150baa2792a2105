/**
 * Names a schedule's status uses: the Ready condition's reasons, the reasons recorded with a tick that did
 * not start a run, and the Events the operator records. Tests, `kubectl describe` and the REST view read
 * the same words.
 */

export const ScheduleConditionType = { Ready: 'Ready' } as const;

export const ScheduleReason = {
  /** Ticks start runs. */
  Scheduled: 'Scheduled',
  /** spec.suspend is true (REST: enabled false). */
  Suspended: 'Suspended',
  /** The tool is archived: paused until it is not. */
  ToolArchived: 'ToolArchived',
  /** The tool does not exist (deleted, or never created): paused until it does. */
  ToolNotFound: 'ToolNotFound',
  /** The payload no longer satisfies the tool's inputSchema (the tool changed): paused until it does. */
  InputsInvalid: 'InputsInvalid',
  /** The API key the schedule runs as (spec.runAs.userId) was revoked: paused until a key rewrites it. */
  KeyRevoked: 'KeyRevoked',
  /** That key may no longer run the tool (runs:execute, its tools or systems): paused until it may. */
  KeyNotAllowed: 'KeyNotAllowed',
  /** The cron expression or the time zone cannot be evaluated. */
  InvalidSchedule: 'InvalidSchedule',
  /** Written, not yet looked at by the operator. */
  Pending: 'Pending',
} as const;
export type ScheduleReason = (typeof ScheduleReason)[keyof typeof ScheduleReason];

/** Reasons under which ticks do not run. */
export const PAUSED_REASONS: ReadonlySet<string> = new Set([
  ScheduleReason.ToolArchived,
  ScheduleReason.ToolNotFound,
  ScheduleReason.InputsInvalid,
  ScheduleReason.KeyRevoked,
  ScheduleReason.KeyNotAllowed,
]);

/** Why a claimed tick started no run (stored with the claim, and the Event's reason says the same). */
export const TickReason = {
  /** concurrencyPolicy Forbid and a run of the schedule was still running. */
  Forbidden: 'ConcurrencyForbid',
  /** Later than startingDeadlineSeconds when kubeglue could start it. */
  DeadlineExceeded: 'DeadlineExceeded',
  /** Passed while the schedule was suspended, paused or invalid; it resumed after. */
  Resumed: 'Resumed',
  /** Passed under another spec (the cron expression or time zone changed since). */
  ScheduleChanged: 'ScheduleChanged',
} as const;
export type TickReason = (typeof TickReason)[keyof typeof TickReason];

export const ScheduleEventReason = {
  RunStarted: 'RunStarted',
  /** Acceptance refused the run (inputs against inputSchema, a system the key may not use): a failed run. */
  RunRefused: 'RunRefused',
  /** A failed run of the tick is started again (options.retries). */
  RunRetried: 'RunRetried',
  /** concurrencyPolicy Replace cancelled a running run. */
  RunReplaced: 'RunReplaced',
  SkippedForbid: 'ConcurrencyForbid',
  MissedSchedule: 'MissedSchedule',
  Paused: 'Paused',
  Resumed: 'Resumed',
  InvalidSchedule: 'InvalidSchedule',
  /** A reconcile failed (the store or the API server unreachable): retried with backoff. */
  ReconcileFailed: 'ReconcileFailed',
} as const;
