/**
 * A tool's tests (Tool.tests, issue 32): each runs the tool offline against a recording (its exchanges as
 * contract/api/recording.ts defines them, answered by engine/replay.ts) with its inputs, and checks the
 * output: equal to `expect.output`, or valid against `expect.outputSchema`. `kubeglue test -f` runs them
 * with no server and no network; `POST /v1/tools/{id}/test` runs them on the server; the result of each is
 * a ToolTestResult.
 */
import { z } from 'zod';
import { JsonObject, JsonValue } from '../json.ts';
import { RecordedExchange } from './recording.ts';

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
