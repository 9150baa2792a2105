/**
 * A tool's tests (Tool.tests, issue 32): each runs the tool offline against a recording (its exchanges as
 * contract/api/recording.ts defines them, answered by engine/replay.ts) with its inputs, and checks the
 * output: equal to `expect.output`, or valid against `expect.outputSchema`. `kubeglue test -f` runs them
 * with no server and no network; `POST /v1/tools/{id}/test` runs them on the server; the result of each is
 * a ToolTestResult.
 */
import { z } from 'zod';
import { JsonObject, JsonValue } from '../json.ts';
import { RecordedExchange, type Recording } from './recording.ts';

/** Tests one tool may carry. */
export const MAX_TOOL_TESTS = 20;
/** Exchanges one test's recording may hold. */
export const MAX_TEST_EXCHANGES = 1_000;
/**
 * Size of all of a tool's tests together, as UTF-8 JSON: a Tool is a Kubernetes resource, and an object
 * larger than about 1.5 MB is refused by etcd, so the tests keep room for the steps.
 */
export const MAX_TOOL_TESTS_BYTES = 512 * 1024;

const freeForm = <T extends z.ZodType>(schema: T) =>
  schema.meta({ 'x-kubernetes-preserve-unknown-fields': true });

export const ToolTestExpect = z
  .union([
    z.strictObject({
      output: freeForm(JsonValue).describe("The run's output exactly (deep equality of the JSON values)."),
    }),
    z.strictObject({
      outputSchema: freeForm(z.record(z.string(), JsonValue)).describe(
        "A JSON Schema (draft 2020-12) the run's output must satisfy.",
      ),
    }),
  ])
  .meta({ id: 'ToolTestExpect' });
export type ToolTestExpect = z.infer<typeof ToolTestExpect>;

export const ToolTest = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[^\p{Cc}]+$/u, 'must not contain control characters')
      .describe('Unique among the tool’s tests; names the test in results.'),
    inputs: freeForm(JsonObject).default({}).describe("The run's inputs (the tool's payload)."),
    // Kept as is by the API server: a recorded query is a list of [name, value] pairs, which a CRD's
    // structural schema cannot type; the API and kubeglue test check it against RecordedExchange.
    recording: freeForm(z.array(RecordedExchange).max(MAX_TEST_EXCHANGES)).describe(
      "The exchanges the systems answer with, in run order (a recording's entries: GET " +
        '/v1/runs/{runId}/recording). A request must match its recorded one (method, URL, query, body); ' +
        'nothing reaches the network.',
    ),
    systems: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'The base URL of each system the steps use (systemId: URL), for steps with relative URLs when ' +
          'the test runs with no server (kubeglue test -f). The server uses the stored systems.',
      ),
    expect: ToolTestExpect.describe('What the output must be: {output} equal to it, or {outputSchema}.'),
  })
  .meta({ id: 'ToolTest' });
export type ToolTest = z.infer<typeof ToolTest>;

/** A tool's tests: at most MAX_TOOL_TESTS, names unique, MAX_TOOL_TESTS_BYTES together. */
export const ToolTests = z
  .array(ToolTest)
  .max(MAX_TOOL_TESTS)
  .superRefine((tests, ctx) => {
    const seen = new Set<string>();
    tests.forEach((test, index) => {
      if (seen.has(test.name)) {
        ctx.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `duplicate test name '${test.name}'`,
        });
      }
      seen.add(test.name);
    });
    const bytes = new TextEncoder().encode(JSON.stringify(tests)).length;
    if (bytes > MAX_TOOL_TESTS_BYTES) {
      ctx.addIssue({
        code: 'custom',
        message: `the tests are ${bytes} bytes of JSON together, more than ${MAX_TOOL_TESTS_BYTES} (keep fewer exchanges or tests)`,
      });
    }
  })
  .describe(
    `Offline tests (at most ${MAX_TOOL_TESTS}, ${MAX_TOOL_TESTS_BYTES / 1024} KiB of JSON together): each ` +
      'runs the tool against recorded exchanges with its inputs and checks the output ' +
      '(docs/authoring.md#test). kubeglue test -f runs them with no server; POST /v1/tools/{id}/test on the server.',
  );

/**
 * `POST /v1/tools/{toolId}/tests` (a run saved as a test, the dashboard's one click): which run, and the
 * test's name (default: the run id; a test of that name is replaced).
 */
export const SaveRunAsTestBody = z
  .strictObject({
    fromRun: z.string().min(1).describe('The run to make a test of: it succeeded and was recorded in full.'),
    name: ToolTest.shape.name
      .optional()
      .describe("The test's name (default: the run id); replaces a test of that name."),
  })
  .meta({ id: 'SaveRunAsTestBody' });
export type SaveRunAsTestBody = z.infer<typeof SaveRunAsTestBody>;

export const SavedToolTest = z
  .object({
    toolId: z.string(),
    name: z.string().describe('The test saved.'),
    replaced: z.boolean().describe('A test of that name was there and was replaced.'),
    exchanges: z.number().int().describe("The recorded exchanges the test answers the steps' calls with."),
    tests: z.array(z.string()).describe("The names of the tool's tests, in order, the new one included."),
  })
  .meta({ id: 'SavedToolTest' });
export type SavedToolTest = z.infer<typeof SavedToolTest>;

/** What of a run a test is made of (GET /v1/runs/{id}, its results and its recording). */
export interface RunForTest {
  runId: string;
  status: string;
  inputs: JsonObject;
  output: JsonValue;
  recording: Recording;
  /** The base URL of each system the tool's steps use (systemId: URL), for kubeglue test -f. */
  systems: Record<string, string>;
}

/** Why a run cannot be a test: it did not succeed, or its recording was cut at its size cap. */
export type RunTestRefusal = 'running' | 'failed' | 'aborted' | 'truncated';

/**
 * A run as a test of its tool, the one conversion behind `kubeglue test record` and `POST
 * /v1/tools/{toolId}/tests`: its inputs, its recorded exchanges, the systems' base URLs, and its output as
 * what the test expects. A refusal when the run cannot be one.
 */
export function testFromRun(run: RunForTest, name?: string): ToolTest | { refused: RunTestRefusal } {
  if (run.status !== 'success') {
    return { refused: run.status === 'running' || run.status === 'aborted' ? run.status : 'failed' };
  }
  if (run.recording.truncated) return { refused: 'truncated' };
  return {
    name: name ?? run.runId,
    inputs: run.inputs,
    recording: run.recording.entries,
    ...(Object.keys(run.systems).length > 0 ? { systems: run.systems } : {}),
    expect: { output: run.output },
  };
}

/** Why a test does not fit a tool's tests: there are MAX_TOOL_TESTS, or they would pass MAX_TOOL_TESTS_BYTES. */
export type TestsBound = { bound: 'count'; tests: number } | { bound: 'bytes'; bytes: number };

/**
 * The tool's tests with `test` appended, or in place of the test of its name; the bound it would break
 * instead, so each caller says it in its own words (a catalog error, the CLI's usage error).
 */
export function withTest(
  tests: readonly ToolTest[],
  test: ToolTest,
): { tests: ToolTest[]; replaced: boolean } | TestsBound {
  const index = tests.findIndex((one) => one.name === test.name);
  const next = index >= 0 ? tests.map((one, at) => (at === index ? test : one)) : [...tests, test];
  if (next.length > MAX_TOOL_TESTS) return { bound: 'count', tests: tests.length };
  const bytes = new TextEncoder().encode(JSON.stringify(next)).length;
  if (bytes > MAX_TOOL_TESTS_BYTES) return { bound: 'bytes', bytes };
  return { tests: next, replaced: index >= 0 };
}
