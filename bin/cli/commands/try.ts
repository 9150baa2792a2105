/**
 * `kubeglue try <file>`: runs a tool definition from a file without saving it (`POST /v1/tools/run`),
 * up to a step with --until, and prints each step's data and what the next step would receive
 * (docs/authoring.md#try). Nothing is stored unless --record asks for it.
 */
import * as routes from '../../../contract/api/route-paths.ts';
import type { DraftRunRequest } from '../../../contract/api/run.ts';
import { ToolDefinition } from '../../../contract/api/tool.ts';
import { formatIssues } from '../../../contract/format-issues.ts';
import { TryAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command, EXIT, type Io, UsageError } from '../command.ts';
import { readDocument, toolInDocument } from '../files.ts';
import { INPUT_OPTIONS, runInputs } from '../inputs.ts';
import { printable, printJson } from '../output.ts';

const NAME = 'kubeglue try';

/** The definition in the file, checked as the API checks it (its code is checked by the API). */
export async function readDefinition(path: string): Promise<ToolDefinition> {
  const json = toolInDocument(path, await readDocument(path, { yaml: true }));
  const definition = ToolDefinition.safeParse(json);
  if (!definition.success) {
    throw new UsageError(`${path} is not a tool definition: ${formatIssues(definition.error)}`);
  }
  return definition.data;
}

export const tryDraft = command({
  name: 'try',
  summary: 'try a tool definition from a file, up to a step, without saving it',
  positionals: ['file'],
  options: {
    until: {
      type: 'string',
      value: '<stepId>',
      help: 'stop after this step (no output transform) and show what the next step would receive',
    },
    ...INPUT_OPTIONS,
    record: { type: 'boolean', help: 'store the run (kubeglue runs lists it); by default nothing is stored' },
  },
  about: [
    "Runs the tool definition in <file> without saving it, and prints each step's outcome and data. The",
    'file is JSON or YAML (.yaml, .yml): a tool as POST /v1/tools takes it, or a Tool resource as kubectl',
    'apply takes it. With --until the run stops after that step and prints the keys of the sourceData the',
    'next step would receive; a credential never appears, only its placeholder. Nothing is stored unless',
    '--record. A failed step exits 1. --output json prints the answer: the run with its step results and',
    "until (the next step's sourceData with its values).",
  ],
  examples: [
    'kubeglue try tool.json --until todos --input userId=2',
    'kubeglue try tool.json --inputs-file inputs.json --output json',
    'kubeglue try tool.yaml --until todos',
  ],
  async run({ values, args, output, io }) {
    const tool = await readDefinition(args.file as string);
    const inputs = await runInputs(values.input ?? [], values['inputs-file']);
    const client = new ApiClient(await io.connect(), io);
    const body: DraftRunRequest = {
      tool,
      inputs,
      options: { requestSource: 'cli' },
      ...(values.until !== undefined ? { untilStep: values.until } : {}),
    };
    const answer = await client.request(routes.runToolDefinition, TryAnswer, {
      query: { createRun: values.record ? 'true' : 'false' },
      body,
    });
    if (output === 'json') printJson(io.stdout, answer.raw);
    else printSteps(io, answer.value);
    if (answer.value.status === 'success') return EXIT.ok;
    const what = answer.value.status === 'aborted' ? 'was aborted' : 'failed';
    const error = answer.value.error;
    io.stderr.write(`${printable(`${NAME}: the run ${what}${error ? `: ${error}` : ''}`)}\n`);
    return EXIT.failed;
  },
});

/** Each step's outcome and data, then where the try stopped and the next step's sourceData keys. */
function printSteps(io: Io, run: TryAnswer): void {
  for (const step of run.stepResults ?? []) {
    const loop = step.loop ? `, ${step.loop.items} items, ${step.loop.failed} failed` : '';
    const pages = step.pagination ? `, ${step.pagination.pages} pages` : '';
    const outcome = step.success ? 'ok' : `failed: ${step.error ?? ''}`;
    io.stdout.write(`${printable(`step ${step.stepId}: ${outcome}${loop}${pages}`)}\n`);
    if (step.data !== undefined) printJson(io.stdout, step.data);
  }
  const until = run.until;
  if (!until) {
    if (run.status === 'success') {
      io.stdout.write('output:\n');
      printJson(io.stdout, run.data ?? null);
    }
    return;
  }
  const keys = until.sourceDataKeys.join(', ');
  const next = until.nextStepId
    ? `next step ${until.nextStepId} receives sourceData with keys: ${keys}`
    : `stopped after the last step; sourceData has keys: ${keys}`;
  io.stdout.write(`${printable(next)}\n`);
}
