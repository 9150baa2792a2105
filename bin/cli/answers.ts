/**
 * What the client commands read of the API's answers, checked with the contract's own field schemas.
 * Each is loose: fields a command does not read are kept as the server sent them (a newer server may
 * add some), and `--output json` prints the answer itself.
 */
import { z } from 'zod';
import { listEnvelope, RunList } from '../../contract/api/bodies.ts';
import { ReplayAnswer } from '../../contract/api/replay.ts';
import { Run, RunUntil, StepResult } from '../../contract/api/run.ts';
import { ToolSchedule } from '../../contract/api/schedule.ts';
import { Tool } from '../../contract/api/tool.ts';
import { JsonObject } from '../../contract/json.ts';

export const RunAnswer = z.looseObject({
  runId: Run.shape.runId,
  toolId: Run.shape.toolId,
  status: Run.shape.status,
  error: Run.shape.error,
  requestSource: Run.shape.requestSource,
  metadata: Run.shape.metadata,
  data: Run.shape.data,
  stepResults: z.array(StepResult.loose()).optional(),
});
export type RunAnswer = z.infer<typeof RunAnswer>;

/** A try's answer (`POST /v1/tools/run` with untilStep): a run with where it stopped. */
export const TryAnswer = RunAnswer.extend({ until: RunUntil.loose().optional() });
export type TryAnswer = z.infer<typeof TryAnswer>;

export const RunListAnswer = listEnvelope(RunAnswer).extend({
  nextCursor: RunList.shape.nextCursor,
  // Optional: servers before it did not send it (their total was always exact).
  totalExact: RunList.shape.totalExact.optional(),
});

/** `GET /v1/runs/{runId}/results`. */
export const RunResultsAnswer = z.looseObject({
  success: z.boolean(),
  data: z
    .looseObject({
      data: Run.shape.data.nullable(),
      stepResults: z.array(StepResult.loose()),
      toolPayload: JsonObject.nullable(),
    })
    .nullable(),
  message: z.string(),
});

// Texts as plain strings: the contract's rules for writing them (no control characters) are not asked
// of what is read, which may have been stored before them; the commands escape what they print.
export const ToolAnswer = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  instruction: z.string().optional(),
  steps: z.array(z.unknown()),
  archived: z.boolean().optional(),
  updatedAt: Tool.shape.updatedAt,
});
export type ToolAnswer = z.infer<typeof ToolAnswer>;

export const ToolListAnswer = listEnvelope(ToolAnswer);

/**
 * A schedule as `GET /v1/schedules` and `GET /v1/tools/{toolId}/schedules` list it (the shape superglue's
 * clients read).
 */
export const ScheduleAnswer = z.looseObject({
  id: ToolSchedule.shape.id,
  toolId: ToolSchedule.shape.toolId,
  cronExpression: ToolSchedule.shape.cronExpression,
  timezone: ToolSchedule.shape.timezone,
  enabled: ToolSchedule.shape.enabled,
  status: ToolSchedule.shape.status.optional(),
  nextRunAt: ToolSchedule.shape.nextRunAt,
  lastRunAt: ToolSchedule.shape.lastRunAt,
});
export type ScheduleAnswer = z.infer<typeof ScheduleAnswer>;

export const ScheduleListAnswer = listEnvelope(ScheduleAnswer);

/** A replay's answer (`POST /v1/runs/{runId}/replay`): the replay beside the original, their differences. */
export const ReplayRunAnswer = ReplayAnswer.loose();
export type ReplayRunAnswer = z.infer<typeof ReplayRunAnswer>;
