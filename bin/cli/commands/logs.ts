/**
 * `kubeglue logs <runId>`: what a run did. Without --follow, from its stored record and results (one
 * line per step, then the outcome); with --follow, its events as they happen until it ends. Exits 1
 * when the run failed or was aborted, so a script can wait on a run with it.
 */
import * as routes from '../../../contract/api/route-paths.ts';
import type { RunLogEvent, StepLoop } from '../../../contract/api/run.ts';
import type { JsonValue } from '../../../contract/json.ts';
import { RunAnswer, RunResultsAnswer } from '../answers.ts';
import { type Answer, ApiClient } from '../client.ts';
import { command, EXIT } from '../command.ts';
import { followRun } from '../events.ts';
import { printable, printJson, shortDuration } from '../output.ts';
import { failedItemLines, Progress } from '../progress.ts';

/** The lines of a run's stored record: its start, each step's result (and failed loop items), its outcome. */
function recordLines(
  run: RunAnswer,
  steps: ReadonlyArray<{ stepId: string; success: boolean; error?: string; loop?: StepLoop }>,
) {
  const took = run.metadata.durationMs !== undefined ? ` in ${shortDuration(run.metadata.durationMs)}` : '';
  const outcome =
    run.status === 'running'
      ? `Run ${run.runId} is running; follow it: kubeglue logs ${run.runId} --follow`
      : run.status === 'success'
        ? `Run ${run.runId} succeeded${took}`
        : `Run ${run.runId} ${run.status === 'aborted' ? 'was aborted' : 'failed'}${took}${run.error ? `: ${run.error}` : ''}`;
  return [
    `Run ${run.runId} of tool '${run.toolId}' started at ${run.metadata.startedAt} (${run.requestSource ?? 'api'})`,
    ...steps.flatMap((step) => {
      if (!step.success) return [`Step '${step.stepId}' failed: ${step.error ?? ''}`];
      const { loop } = step;
      const itemsFailed = loop && loop.failed > 0 ? `; ${loop.failed} of ${loop.items} items failed` : '';
      const rest = `every item is in the step's data: GET /v1/runs/${run.runId}/results`;
      return [`Step '${step.stepId}' succeeded${itemsFailed}`, ...failedItemLines(step, rest)];
    }),
    outcome,
  ];
}

export const logs = command({
  name: 'logs',
  summary: 'show what a run did, or follow it as it happens',
  positionals: ['runId'],
  options: {
    follow: { type: 'boolean', help: 'show each step and page as it happens, until the run ends' },
  },
  about: [
    "Shows the run <runId>: when it started, each step's result and its outcome, from its stored record.",
    'With --follow, its events as they happen (steps, pages, retries) until it ends. Exits 1 when the run',
    'failed or was aborted. --output json prints the run record with its step results (without their',
    'data) and, with --follow, the events received.',
  ],
  examples: [
    'kubeglue logs 5b0c8f9e-2d71-4c3e-9a4f-0e6d2b7a1c55',
    'kubeglue logs 5b0c8f9e-2d71-4c3e-9a4f-0e6d2b7a1c55 --follow --output json',
  ],
  async run({ values, args, output, io }) {
    const client = new ApiClient(await io.connect(), io);
    const runId = args.runId as string;
    const events: RunLogEvent[] = [];
    let record: Answer<RunAnswer>;
    if (values.follow) {
      const progress = new Progress(output === 'json' ? io.stderr : io.stdout);
      try {
        record = await followRun(client, runId, {
          signal: io.signal,
          onEvent: (event) => {
            events.push(event);
            progress.event(event);
          },
        });
      } finally {
        progress.stop();
      }
    } else {
      record = await client.request(routes.getRun, RunAnswer, { params: { runId } });
    }
    const run = record.value;
    const stored =
      run.status === 'running'
        ? undefined
        : (await client.request(routes.getRunResults, RunResultsAnswer, { params: { runId } })).value.data;
    const steps = (stored?.stepResults ?? []).map(({ stepId, success, error, loop }) => ({
      stepId,
      success,
      ...(error !== undefined ? { error } : {}),
      ...(loop !== undefined ? { loop } : {}),
    }));
    if (output === 'json') {
      printJson(io.stdout, {
        ...(record.raw as { [key: string]: JsonValue }),
        stepResults: steps,
        ...(values.follow ? { events } : {}),
      });
    } else if (!values.follow) {
      for (const line of recordLines(run, steps)) io.stdout.write(`${printable(line)}\n`);
    }
    return run.status === 'failed' || run.status === 'aborted' ? EXIT.failed : EXIT.ok;
  },
});
