/**
 * `kubeglue test -f <tool.yaml|json>`: runs the tool's tests (Tool.tests) in this process with no server
 * and no network (the engine is given by bin/offline-tests.ts), printing each result and, for a failed
 * one, the difference. `kubeglue test record <runId>`: a recorded run made a test of its tool, through the
 * API (docs/authoring.md#testing-a-tool). Exit codes: 0 every test passed, 1 a test failed, 2 bad input.
 */
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { z } from 'zod';
import { Recording } from '../../../contract/api/recording.ts';
import * as routes from '../../../contract/api/route-paths.ts';
import { stepSystemIds, Tool } from '../../../contract/api/tool.ts';
import {
  MAX_TOOL_TESTS,
  MAX_TOOL_TESTS_BYTES,
  testFromRun,
  withTest,
} from '../../../contract/api/tool-test.ts';
import type { ToolTestAnswer } from '../../../contract/api/tool-test-result.ts';
import { formatIssues } from '../../../contract/format-issues.ts';
import { JsonObject, type JsonValue } from '../../../contract/json.ts';
import { RunAnswer, RunResultsAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command, EXIT, type Io, UsageError } from '../command.ts';
import { isYaml, readDocument, toolInDocument } from '../files.ts';
import { printable, printJson } from '../output.ts';

/** What a tool file holds: a tool as POST /v1/tools takes it, or a Tool resource (kind: Tool, spec). */
interface ToolFile {
  format: 'yaml' | 'json';
  /** The file's document, to write back with a test appended. */
  document: Record<string, unknown>;
  tool: Tool;
}

function asTool(path: string, document: Record<string, unknown>): Tool {
  const { systemIds: _systemIds, ...rest } = toolInDocument(path, document);
  const tool = Tool.safeParse(rest);
  if (!tool.success) throw new UsageError(`${path} is not a tool: ${formatIssues(tool.error)}`);
  return tool.data;
}

export async function readToolFile(path: string): Promise<ToolFile> {
  const document = await readDocument(path, { yaml: true });
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new UsageError(`${path} does not hold a tool (an object)`);
  }
  const record = document as Record<string, unknown>;
  return { format: isYaml(path) ? 'yaml' : 'json', document: record, tool: asTool(path, record) };
}

/** Each test's outcome; a failed one with its error, its difference or what its schema says. */
function printResults(io: Io, answer: ToolTestAnswer): void {
  for (const result of answer.results) {
    io.stdout.write(`${printable(`${result.passed ? 'pass' : 'FAIL'} ${result.name}`)}\n`);
    if (result.passed) continue;
    if (result.error) io.stdout.write(`  ${printable(result.error)}\n`);
    if (result.schemaErrors) io.stdout.write(`  ${printable(result.schemaErrors)}\n`);
    for (const change of result.diff?.changes ?? []) {
      const side = (value: JsonValue | undefined) => (value === undefined ? '(none)' : JSON.stringify(value));
      io.stdout.write(
        `  ${printable(`${change.path || '/'}: expected ${side(change.before)}, got ${side(change.after)}`)}\n`,
      );
    }
    if (result.diff?.truncated) io.stdout.write('  … more differences\n');
  }
  const failed = answer.results.filter((result) => !result.passed).length;
  io.stdout.write(
    `${answer.results.length - failed} passed, ${failed} failed${answer.results.length === 0 ? ' (the tool has no tests)' : ''}\n`,
  );
}

const testRecord = command({
  name: 'test record',
  summary: 'make a recorded run a test of its tool, and print or write the tool with it',
  positionals: ['runId'],
  options: {
    name: { type: 'string', value: '<name>', help: 'the test name (default: the run id)' },
    out: {
      type: 'string',
      short: 'o',
      value: '<file>',
      help: "add the test to this tool file (YAML or JSON, as it is; created from the server's tool if missing)",
    },
  },
  about: [
    "Reads the run's inputs, output and recording (the run must have succeeded and been recorded: options.record)",
    'and adds a test expecting that output to the tool: the one in --out when that file exists, else the',
    "server's tool. The test carries the base URL of each system the steps use, so kubeglue test -f runs it",
    'with no server. Without --out it prints the tool as JSON.',
  ],
  examples: ['kubeglue test record todos-1 -o tool.yaml', 'kubeglue test record todos-1 --name two-pages'],
  async run({ values, args, io }) {
    const runId = args.runId as string;
    const client = new ApiClient(await io.connect(), io);
    const run = (await client.request(routes.getRun, RunAnswer, { params: { runId } })).value;
    // Said before reading its results and recording, which a failed run may lack.
    if (run.status !== 'success') {
      throw new UsageError(
        `run ${runId} ${run.status === 'running' ? 'is running' : run.status}: a test records a run that succeeded`,
      );
    }
    const results = (await client.request(routes.getRunResults, RunResultsAnswer, { params: { runId } }))
      .value;
    const recorded = (
      await client.request(routes.getRunRecording, z.looseObject({ recording: Recording }), {
        params: { runId },
      })
    ).value.recording;
    const existing = values.out ? await readToolFile(values.out).catch(() => undefined) : undefined;
    let document: Record<string, unknown>;
    let tool: Tool;
    if (existing) {
      ({ document, tool } = existing);
      if (tool.id !== run.toolId)
        throw new UsageError(`${values.out} holds tool ${tool.id}, run ${runId} is of ${run.toolId}`);
    } else {
      const raw = (
        await client.request(routes.getTool, z.looseObject({}), { params: { toolId: run.toolId } })
      ).raw;
      const { createdAt: _c, updatedAt: _u, archived: _a, ...rest } = raw as Record<string, unknown>;
      document = rest;
      tool = asTool('the tool', rest);
    }
    const systems: Record<string, string> = {};
    for (const id of stepSystemIds(tool.steps)) {
      // The envelope superglue's clients read: {success, data: System}.
      const answer = z.looseObject({ data: z.looseObject({ url: z.string().optional() }) });
      const system = await client.request(routes.getSystem, answer, { params: { systemId: id } });
      if (system.value.data.url) systems[id] = system.value.data.url;
    }
    // The conversion POST /v1/tools/{toolId}/tests (the dashboard's "Save as test") makes too.
    const test = testFromRun(
      {
        runId,
        status: run.status,
        inputs: JsonObject.parse(results.data?.toolPayload ?? {}),
        output: results.data?.data ?? null,
        recording: recorded,
        systems,
      },
      values.name,
    );
    if ('refused' in test) {
      throw new UsageError(
        test.refused === 'truncated'
          ? `run ${runId}'s recording was truncated at its size cap: it cannot answer every call`
          : `run ${runId} ${test.refused}: a test records a run that succeeded`,
      );
    }
    const next = withTest(tool.tests ?? [], test);
    if ('bound' in next) {
      throw new UsageError(
        next.bound === 'count'
          ? `the tool has ${next.tests} tests, the most it may carry (${MAX_TOOL_TESTS})`
          : `the tests would be ${next.bytes} bytes of JSON together, more than ${MAX_TOOL_TESTS_BYTES}`,
      );
    }
    const { tests } = next;
    const target = document.kind === 'Tool' ? (document.spec as Record<string, unknown>) : document;
    target.tests = tests;
    const checked = Tool.safeParse({ ...tool, tests });
    if (!checked.success)
      throw new UsageError(`the test does not fit the tool: ${formatIssues(checked.error)}`);
    if (!values.out) {
      printJson(io.stdout, document);
      return EXIT.ok;
    }
    const yaml = existing ? existing.format === 'yaml' : isYaml(values.out);
    await writeFile(values.out, yaml ? stringify(document) : `${JSON.stringify(document, null, 2)}\n`);
    io.stderr.write(`${printable(`added test ${test.name} to ${values.out} (${tests.length} tests)`)}\n`);
    return EXIT.ok;
  },
});

export const test = command({
  name: 'test',
  summary: "run a tool file's tests offline: no server, no network",
  positionals: [],
  options: {
    file: {
      type: 'string',
      short: 'f',
      value: '<tool.yaml|json>',
      help: 'the tool (as POST /v1/tools takes it, or a Tool resource) whose tests run',
    },
  },
  about: [
    "Runs each test of the tool in <file> in this process against the test's recorded exchanges: no server,",
    'no network, no credential (for CI on the tools kept in Git). A test passes when the output equals',
    'expect.output or satisfies expect.outputSchema; a failed one prints its difference. Exit code 0: every',
    'test passed; 1: a test failed; 2: the file cannot be read or is no tool. --output json prints the',
    'results as POST /v1/tools/{toolId}/test answers them.',
  ],
  examples: ['kubeglue test -f tool.yaml', 'kubeglue test record todos-1 -o tool.yaml'],
  subcommands: [testRecord],
  async run({ values, output, io }) {
    if (!values.file) throw new UsageError('give the tool file with -f <tool.yaml|json>');
    const { tool } = await readToolFile(values.file);
    if (!io.offlineTests) throw new UsageError('this kubeglue runs no tests offline');
    const answer = await io.offlineTests(tool);
    if (output === 'json') printJson(io.stdout, answer);
    else printResults(io, answer);
    return answer.passed ? EXIT.ok : EXIT.failed;
  },
});
