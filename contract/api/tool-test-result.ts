/**
 * What running a tool's tests answers (`POST /v1/tools/{id}/test`, `kubeglue test -f`): per test passed or
 * not, the output, and the difference from what was expected. Apart from tool-test.ts, which tool.ts
 * imports, because the difference is the replay's (replay.ts imports tool.ts).
 */
import { z } from 'zod';
import { JsonValue } from '../json.ts';
import { ReplayValueDiff } from './replay.ts';

export const ToolTestResult = z
  .object({
    name: z.string(),
    passed: z.boolean(),
    output: JsonValue.optional().describe("The run's output (absent when the run failed)."),
    error: z
      .string()
      .optional()
      .describe('Why the run failed (a request that differs from the recorded one, a step error).'),
    diff: ReplayValueDiff.optional().describe(
      'expect.output: the changes from the expected output to the output.',
    ),
    schemaErrors: z.string().optional().describe('expect.outputSchema: where the output breaks the schema.'),
  })
  .meta({ id: 'ToolTestResult' });
export type ToolTestResult = z.infer<typeof ToolTestResult>;

/** `POST /v1/tools/{id}/test`: each test's result, nothing stored. */
export const ToolTestAnswer = z
  .object({
    toolId: z.string(),
    passed: z.boolean().describe('Every test passed (true for a tool with no tests).'),
    results: z.array(ToolTestResult),
  })
  .meta({ id: 'ToolTestAnswer' });
export type ToolTestAnswer = z.infer<typeof ToolTestAnswer>;
