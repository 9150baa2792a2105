/**
 * `POST /v1/runs/{runId}/replay`: a run's tool executed again against the run's recording only (no network,
 * no credential), answered beside the original with their differences. Nothing of a replay is stored.
 */
import { z } from 'zod';
import { JsonObject, JsonValue } from '../json.ts';
import { StepResult } from './run.ts';
import { ToolDefinition } from './tool.ts';

export const ReplayRunRequest = z
  .strictObject({
    tool: ToolDefinition.optional().describe(
      "The definition to replay (checked as for POST /v1/tools/run; not saved). Absent: the tool's current stored definition, or the run's snapshot with definition: snapshot.",
    ),
    definition: z
      .enum(['current', 'snapshot'])
      .optional()
      .describe(
        "Without tool: 'current' (default) replays the tool's stored definition, 'snapshot' the definition the run ran.",
      ),
    inputs: JsonObject.optional().describe("The inputs; absent: the original run's."),
  })
  .refine((body) => body.tool === undefined || body.definition === undefined, {
    message: 'give a tool or a definition, not both',
    path: ['definition'],
  })
  .meta({ id: 'ReplayRunRequest' });
export type ReplayRunRequest = z.infer<typeof ReplayRunRequest>;

/** One difference: where (a JSON pointer) and the values before (original) and after (replay). */
export const ReplayChange = z
  .object({
    path: z.string().describe('A JSON pointer into the value ("" is the whole value).'),
    before: JsonValue.optional().describe('Absent: the replay added it.'),
    after: JsonValue.optional().describe('Absent: the replay removed it.'),
  })
  .meta({ id: 'ReplayChange' });
export type ReplayChange = z.infer<typeof ReplayChange>;

export const ReplayValueDiff = z
  .object({
    changed: z.boolean(),
    changes: z.array(ReplayChange).describe('At most 50, each value cut to a preview.'),
    truncated: z.boolean().optional().describe('More changes than listed.'),
  })
  .meta({ id: 'ReplayValueDiff' });
export type ReplayValueDiff = z.infer<typeof ReplayValueDiff>;

export const ReplayStepDiff = z
  .object({
    stepId: z.string(),
    status: z
      .enum(['unchanged', 'changed', 'added', 'removed'])
      .describe('added: only the replay has the step; removed: only the original.'),
    success: z.object({ before: z.boolean().optional(), after: z.boolean().optional() }),
    error: z
      .string()
      .optional()
      .describe("The replay's error for the step (a request difference, an exchange not recorded)."),
    data: ReplayValueDiff.optional(),
  })
  .meta({ id: 'ReplayStepDiff' });
export type ReplayStepDiff = z.infer<typeof ReplayStepDiff>;

export const ReplayOutcome = z
  .object({
    success: z.boolean(),
    data: JsonValue.optional(),
    error: z.string().optional(),
    stepResults: z.array(StepResult),
  })
  .meta({ id: 'ReplayOutcome' });
export type ReplayOutcome = z.infer<typeof ReplayOutcome>;

/** The answer of a replay: nothing of it is stored. */
export const ReplayAnswer = z
  .object({
    runId: z.string().describe('The replayed run.'),
    definition: z.enum(['body', 'current', 'snapshot']).describe('Which definition was replayed.'),
    original: ReplayOutcome,
    replay: ReplayOutcome,
    diff: z.object({
      changed: z.boolean().describe('The output or any step differs.'),
      output: ReplayValueDiff,
      steps: z.array(ReplayStepDiff),
    }),
  })
  .meta({ id: 'ReplayAnswer' });
export type ReplayAnswer = z.infer<typeof ReplayAnswer>;
