/**
 * `kubeglue runs replay <runId> [-f tool.json]`: the run's tool executed again against the run's recording
 * only, no network (`POST /v1/runs/{runId}/replay`, docs/authoring.md#replay), printed as the differences
 * from the original: the output's and each step's. Nothing is stored.
 */

import type { ReplayChange, ReplayRunRequest, ReplayValueDiff } from '../../../contract/api/replay.ts';
import * as routes from '../../../contract/api/route-paths.ts';
import { ReplayRunAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command, EXIT, type Io, UsageError } from '../command.ts';
import { INPUT_OPTIONS, runInputs } from '../inputs.ts';
import { printable, printJson } from '../output.ts';
import { readDefinition } from './try.ts';

function valueText(value: unknown): string {
  return value === undefined ? '(none)' : JSON.stringify(value);
}

function changeLine(change: ReplayChange): string {
  return `${change.path || '(whole value)'}: ${valueText(change.before)} -> ${valueText(change.after)}`;
}

function printChanges(io: Io, diff: ReplayValueDiff | undefined, indent: string): void {
  if (!diff) return;
  for (const change of diff.changes) io.stdout.write(`${indent}${printable(changeLine(change))}\n`);
  if (diff.truncated) io.stdout.write(`${indent}… more changes (--output json shows the answer)\n`);
}

export const runsReplay = command({
  name: 'runs replay',
  summary: 'replay a recorded run against its recording, offline, and print what changed',
  positionals: ['runId'],
  options: {
    file: {
      type: 'string',
      short: 'f',
      value: '<path>',
      help: "a tool definition (JSON or YAML, as for try) to replay instead of the tool's current one",
    },
    snapshot: { type: 'boolean', help: 'replay the definition the run ran (its snapshot)' },
    ...INPUT_OPTIONS,
    input: {
      ...INPUT_OPTIONS.input,
      help: "an input (repeatable); without inputs the original run's are used",
    },
  },
  about: [
    'Runs the tool of <runId> (its current definition, the one in -f, or with --snapshot the one the',
    'run ran) against the exchanges the run recorded (options.record): no request leaves, and no',
    'credential is used. A step whose request differs from the recorded one, or needs one the run did',
    'not make, fails saying so. Prints the output and each step beside the original: unchanged, or',
    'changed with its differences as JSON pointers. Nothing is stored. Exits 1 when the replay failed;',
    '--output json prints the whole answer.',
  ],
  examples: ['kubeglue runs replay todos-1', 'kubeglue runs replay todos-1 -f tool.json'],
  async run({ values, args, output, io }) {
    if (values.file !== undefined && values.snapshot) {
      throw new UsageError('give -f <path> or --snapshot, not both');
    }
    const tool = values.file !== undefined ? await readDefinition(values.file) : undefined;
    const given = values.input !== undefined || values['inputs-file'] !== undefined;
    const inputs = given ? await runInputs(values.input ?? [], values['inputs-file']) : undefined;
    const body: ReplayRunRequest = {
      ...(tool ? { tool } : {}),
      ...(values.snapshot ? { definition: 'snapshot' as const } : {}),
      ...(inputs ? { inputs } : {}),
    };
    const client = new ApiClient(await io.connect(), io);
    const answer = await client.request(routes.replayRun, ReplayRunAnswer, {
      params: { runId: args.runId as string },
      body,
    });
    const replay = answer.value;
    const failed = !replay.replay.success;
    if (output === 'json') {
      printJson(io.stdout, answer.raw);
      return failed ? EXIT.failed : EXIT.ok;
    }
    const status = (success: boolean) => (success ? 'success' : 'failed');
    io.stdout.write(
      `${printable(`Replay of run ${replay.runId} (${replay.definition} definition): ${status(replay.replay.success)}; the run: ${status(replay.original.success)}`)}\n`,
    );
    if (replay.replay.error) io.stdout.write(`${printable(`Error: ${replay.replay.error}`)}\n`);
    io.stdout.write(`Output: ${replay.diff.output.changed ? 'changed' : 'unchanged'}\n`);
    printChanges(io, replay.diff.output, '  ');
    io.stdout.write('Steps:\n');
    for (const step of replay.diff.steps) {
      io.stdout.write(`  ${printable(`${step.stepId}: ${step.status}`)}\n`);
      if (step.error) io.stdout.write(`    ${printable(`failed: ${step.error}`)}\n`);
      printChanges(io, step.data, '    ');
    }
    return failed ? EXIT.failed : EXIT.ok;
  },
});
