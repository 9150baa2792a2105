/**
 * A tool's tests (Tool.tests, contract/api/tool-test.ts), run the one way for `POST /v1/tools/{id}/test`
 * (the server's worker pool, the stored systems) and `kubeglue test -f` (the engine in the CLI's process, no
 * server): each test is a replay (engine/replay.ts) of its recorded exchanges with its inputs — no network,
 * no credential: each system's credentials are their placeholders as a replay's are (replay.ts) — and its
 * output is checked against `expect`: deep equality, with the difference (replay-diff.ts), or the JSON
 * Schema (engine/json-schema.ts). Nothing is stored. This file imports only contract/ and engine/, so the
 * CLI's offline runner (bin/test-command.ts) loads no server code.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Recording } from '../contract/api/recording.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { ToolTest } from '../contract/api/tool-test.ts';
import type { ToolTestAnswer, ToolTestResult } from '../contract/api/tool-test-result.ts';
import type { JsonValue } from '../contract/json.ts';
import type { ResolvedSystem, RunOrder } from '../contract/wire/run-order.ts';
import { validateOutput } from '../engine/json-schema.ts';
import type { EngineResult } from '../engine/types.ts';
import { valueDiff } from './replay-diff.ts';

/** Runs one order (a replay: it carries its recording) and answers the engine's result. */
export type TestExecutor = (order: RunOrder) => Promise<Pick<EngineResult, 'status' | 'data' | 'error'>>;

export interface ToolTestSources {
  /** The systems the test's run uses, each credential its placeholder. */
  systems(test: ToolTest): Promise<ResolvedSystem[]>;
  execute: TestExecutor;
}

/** A test's exchanges as the recording a replay answers from. */
function recordingOf(test: ToolTest): Recording {
  return {
    exchanges: test.recording.length,
    bytes: new TextEncoder().encode(JSON.stringify(test.recording)).length,
    truncated: false,
    entries: test.recording,
  };
}

/** Whether `output` is what the test expects; the difference or the schema's complaints when not. */
export function checkExpectation(
  test: ToolTest,
  output: JsonValue,
): Pick<ToolTestResult, 'passed' | 'diff' | 'schemaErrors'> {
  if ('output' in test.expect) {
    if (isDeepStrictEqual(test.expect.output, output)) return { passed: true };
    return { passed: false, diff: valueDiff(test.expect.output, output) };
  }
  const problem = validateOutput(test.expect.outputSchema, output);
  return problem === undefined ? { passed: true } : { passed: false, schemaErrors: problem };
}

export async function runToolTest(
  tool: Tool,
  test: ToolTest,
  sources: ToolTestSources,
): Promise<ToolTestResult> {
  const { tests: _tests, ...definition } = tool;
  const order: RunOrder = {
    runId: `test-${tool.id}`,
    tool: definition as Tool,
    inputs: test.inputs,
    systems: await sources.systems(test),
    traceId: crypto.randomUUID().replaceAll('-', ''),
    record: false,
    replay: recordingOf(test),
  };
  const result = await sources.execute(order);
  if (result.status !== 'success') {
    return { name: test.name, passed: false, error: result.error ?? `the run ended ${result.status}` };
  }
  return { name: test.name, output: result.data, ...checkExpectation(test, result.data) };
}

/** Every test of the tool, one after the other (each a run: they share no state). */
export async function runToolTests(tool: Tool, sources: ToolTestSources): Promise<ToolTestAnswer> {
  const results: ToolTestResult[] = [];
  for (const test of tool.tests ?? []) results.push(await runToolTest(tool, test, sources));
  return { toolId: tool.id, passed: results.every((result) => result.passed), results };
}

/**
 * The systems of an offline test (no server to resolve them): each system a step uses, its base URL from
 * the test's `systems`, and as credentials the placeholders the steps and the recording name (`<<crm_apiKey>>`),
 * so a request templated offline renders as the recording redacted it.
 */
export function offlineSystems(tool: Tool, test: ToolTest): ResolvedSystem[] {
  // Where a credential is named: the steps' templates, and what the recording kept of them.
  const recorded = JSON.stringify([tool.steps, test.recording]);
  const ids = new Set<string>();
  for (const step of tool.steps) {
    if (step.config.type !== 'transform' && step.config.systemId) ids.add(step.config.systemId);
  }
  return [...ids].map((id) => {
    const keys = new Set<string>();
    const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const match of recorded.matchAll(new RegExp(`<<${escaped}_([A-Za-z0-9_]+)>>`, 'g'))) {
      keys.add(match[1] as string);
    }
    const url = test.systems?.[id];
    return {
      id,
      ...(url !== undefined ? { url } : {}),
      credentials: Object.fromEntries([...keys].map((key) => [key, `<<${id}_${key}>>`])),
    };
  });
}
