/**
 * `kubeglue runs resume <runId>`: a new run of the tool's current definition that starts where a failed
 * or aborted run stopped, reusing the stored results of the unchanged steps before it
 * (`POST /v1/runs/{runId}/resume`, docs/authoring.md#resume). Without inputs it keeps the original run's.
 */
import { randomUUID } from 'node:crypto';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ResumeRunRequest } from '../../../contract/api/run.ts';
import { RunAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command } from '../command.ts';
import { runInputs } from '../inputs.ts';
import { startRun } from './run.ts';

const NAME = 'kubeglue runs resume';

export const runsResume = command({
  name: 'runs resume',
  summary: 'resume a failed run at the step where it stopped',
  positionals: ['runId'],
  options: {
    input: {
      type: 'string',
      multiple: true,
      value: '<key=value>',
      help: "an input (repeatable), as for run; without inputs the original run's are kept",
    },
    'inputs-file': {
      type: 'string',
      value: '<path>',
      help: 'a file holding the inputs as a JSON object (--input keys win over its keys)',
    },
    async: { type: 'boolean', help: 'start the resumed run in the background and print its id' },
    follow: {
      type: 'boolean',
      help: 'show each step and page as it happens; with --async, wait for the end',
    },
  },
  about: [
    "Starts a new run of the tool's current definition at the step where the failed or aborted run",
    '<runId> stopped. The steps before it whose definition is unchanged are not executed again: their',
    'stored results are reused. Prints the output like run (a failed run exits 1); --output json prints',
    "the new run's record, whose resumedFrom names <runId> and whose reused steps say reusedFrom.",
    '--follow shows the steps it executes (not the reused ones) as they happen, as for run.',
  ],
  examples: [
    'kubeglue runs resume todos-1',
    'kubeglue runs resume 6f1c0e2a-0d4b-4d43-9a55-4f1e4c0b1a77 --input userId=3 --async',
    'kubeglue runs resume todos-1 --follow',
  ],
  async run({ values, args, output, io }) {
    const given = values.input !== undefined || values['inputs-file'] !== undefined;
    const inputs = given ? await runInputs(values.input ?? [], values['inputs-file']) : undefined;
    const client = new ApiClient(await io.connect(), io);
    const runId = randomUUID();
    const params = { runId: args.runId as string };
    return startRun(client, io, output, values, {
      runId,
      name: NAME,
      start: (options) => {
        const body: ResumeRunRequest = { runId, ...(inputs ? { inputs } : {}), options };
        return client.request(routes.resumeRun, RunAnswer, { params, body });
      },
      startedLine: () => `Run ${runId} resumes run ${params.runId}.`,
    });
  },
});
