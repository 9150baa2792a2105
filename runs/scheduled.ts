/**
 * Scheduled runs (operator/schedule/ decides when): started through the same acceptance as every other
 * run, as the key that wrote the schedule would start them, or recorded as failed when acceptance
 * refused them so users can see why a tick did not run.
 */
import type { ScheduleRunAs, ScheduleRunOptions } from '../contract/api/schedule.ts';
import type { JsonObject } from '../contract/json.ts';
import type { Store } from '../store/index.ts';
import type { Caller, RunContext, StartedRun } from './context.ts';
import { recordRefusedRun } from './refused.ts';
import { startRun } from './requests.ts';
import { type KeyNow, narrowedCaller } from './run-as.ts';

/** One tick's run, as the schedule asks for it. */
export interface ScheduledRun {
  /** Derived from the schedule and the tick, so a tick started twice (a crash, a race) is one run. */
  runId: string;
  scheduleId: string;
  toolId: string;
  inputs: JsonObject;
  options: ScheduleRunOptions;
  runAs: ScheduleRunAs | undefined;
}

/** The caller a schedule's runs are started as: the key that wrote it, with that key's restrictions. */
export function scheduleCaller(runAs: ScheduleRunAs | undefined): Caller {
  return {
    id: runAs?.userId ?? 'scheduler',
    toolIds: runAs?.toolIds ?? null,
    systemIds: runAs?.systemIds ?? null,
  };
}

/**
 * The rights a tick's run carries: what the schedule recorded of its key, narrowed to what that key may do
 * now (run-as.ts). undefined for a schedule that records no key (applied with kubectl).
 */
export function runAsNow(runAs: ScheduleRunAs | undefined, key: KeyNow): ScheduleRunAs | undefined {
  if (!runAs) return undefined;
  const caller = narrowedCaller(scheduleCaller(runAs), key);
  return {
    ...(runAs.userId ? { userId: runAs.userId } : {}),
    ...(caller.toolIds ? { toolIds: caller.toolIds } : {}),
    ...(caller.systemIds ? { systemIds: caller.systemIds } : {}),
  };
}

/**
 * Starts the run of a tick asynchronously with requestSource scheduler and the schedule id. A refusal the
 * run itself causes (inputs that break the tool's inputSchema, a system the key may not use) is thrown as
 * the API error a request would get.
 */
export function startScheduled(ctx: RunContext, input: ScheduledRun): Promise<StartedRun> {
  const { mode, timeout, webhookUrl } = input.options;
  return startRun(ctx, {
    toolId: input.toolId,
    request: {
      runId: input.runId,
      inputs: input.inputs,
      options: {
        ...(timeout !== undefined ? { timeout } : {}),
        ...(webhookUrl !== undefined ? { webhookUrl } : {}),
      },
    },
    caller: scheduleCaller(input.runAs),
    traceId: input.runId,
    requestSource: 'scheduler',
    forceAsync: true,
    mode: mode ?? 'prod',
    scheduleId: input.scheduleId,
  });
}

/** A tick whose run acceptance refused, kept as a failed scheduler run with the reason. */
export async function recordRefusedScheduled(
  store: Pick<Store, 'insertRun'>,
  input: Omit<ScheduledRun, 'options'> & { reason: string; mode?: ScheduleRunOptions['mode'] },
): Promise<void> {
  const caller = scheduleCaller(input.runAs);
  return recordRefusedRun(store, {
    runId: input.runId,
    toolId: input.toolId,
    reason: input.reason,
    requestSource: 'scheduler',
    userId: caller.id,
    ...(caller.toolIds ? { allowedToolIds: caller.toolIds } : {}),
    ...(caller.systemIds ? { allowedSystemIds: caller.systemIds } : {}),
    executionMode: input.mode ?? 'prod',
    traceId: input.runId,
    scheduleId: input.scheduleId,
    toolPayload: input.inputs,
  });
}
