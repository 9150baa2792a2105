/**
 * `kubeglue run <toolId>`: runs a saved tool (requestSource cli) and prints its output. The CLI names
 * the run (a random UUID as runId), so an interrupted command can say which run goes on. With --follow
 * a synchronous run's events are streamed by a trace id opened before the run starts; an asynchronous
 * run is followed by its id until it ends, and then its stored result is printed.
 */
import { randomUUID } from 'node:crypto';
import * as routes from '../../../contract/api/route-paths.ts';
import type { RunRequestOptions } from '../../../contract/api/run.ts';
import type { JsonValue } from '../../../contract/json.ts';
import { RunAnswer, RunResultsAnswer } from '../answers.ts';
import { type Answer, ApiClient } from '../client.ts';
import { command, EXIT, type Io, type OutputMode } from '../command.ts';
import { followRun, streamEvents } from '../events.ts';
import { INPUT_OPTIONS, runInputs } from '../inputs.ts';
import { printable, printJson } from '../output.ts';
import { Progress } from '../progress.ts';

/** How long a synchronous run's last events may come after its answer before the stream is closed. */
const LAST_EVENTS_MS = 2000;

export const run = command({
  name: 'run',
  summary: 'run a tool and print its output',
  positionals: ['toolId'],
  options: {
    ...INPUT_OPTIONS,
    async: { type: 'boolean', help: 'start the run in the background and print its id' },
    follow: {
      type: 'boolean',
      help: 'show each step and page as it happens; with --async, wait for the end',
    },
  },
  about: [
    'Runs the saved tool <toolId> (requestSource "cli") and prints its output: the run\'s data as JSON.',
    'A failed or aborted run prints its error and exits 1. With --async the run starts in the background',
    'and its id is printed (follow it with `kubeglue logs <runId> --follow`); --async --follow waits for',
    'it to end and prints its result. --output json prints the run record with data and step results.',
  ],
  examples: [
    'kubeglue run open-todos',
    'kubeglue run create-invoice --input customerId=42 --input \'lines=[{"sku":"A-1","qty":2}]\'',
    'kubeglue run sync-contacts --inputs-file inputs.json --follow',
    'kubeglue run nightly-export --async --follow --output json',
  ],
  async run({ values, args, output, io }) {
    const inputs = await runInputs(values.input ?? [], values['inputs-file']);
    const client = new ApiClient(await io.connect(), io);
    const runId = randomUUID();
    const params = { toolId: args.toolId as string };
    return startRun(client, io, output, values, {
      runId,
      name: 'kubeglue run',
      start: (options) =>
        client.request(routes.runTool, RunAnswer, { params, body: { runId, inputs, options } }),
      startedLine: (started) => `Run ${runId} of tool '${started.toolId}' started.`,
    });
  },
});

/** How a command starts its run (`run`, `runs resume`): the rest is `startRun`'s. */
export interface RunStart {
  /** The id the command gives the run, named when it is interrupted. */
  runId: string;
  /** The command's name, in the lines it writes to stderr. */
  name: string;
  /** Sends the request that starts the run, with these options. */
  start(options: RunRequestOptions): Promise<Answer<RunAnswer>>;
  /** What a run started in the background prints first. */
  startedLine(started: RunAnswer): string;
}

/**
 * Starts a run (requestSource cli) and prints it: a synchronous run's output once it ended; with --async
 * its id (and, with --follow, its events until it ends, then its result); with --follow alone its events
 * streamed by a trace id opened before it starts. An interrupt says which run goes on.
 */
export async function startRun(
  client: ApiClient,
  io: Io,
  output: OutputMode,
  values: { async?: boolean | undefined; follow?: boolean | undefined },
  how: RunStart,
): Promise<number> {
  const { runId, name } = how;
  // In json mode stdout holds the one document: what goes on is shown on stderr.
  const progress = new Progress(output === 'json' ? io.stderr : io.stdout);
  try {
    if (values.async) {
      const started = await how.start({ async: true, requestSource: 'cli' });
      if (!values.follow) {
        if (output === 'json') printJson(io.stdout, started.raw);
        else {
          io.stdout.write(`${printable(how.startedLine(started.value))}\n`);
          io.stdout.write(`Follow it: kubeglue logs ${runId} --follow\n`);
        }
        return EXIT.ok;
      }
      const ended = await followRun(client, runId, {
        signal: io.signal,
        onEvent: (e) => progress.event(e),
      });
      progress.stop();
      return printOutcome(io, output, await withResult(client, ended), true, name);
    }
    const answer = values.follow
      ? await runFollowingEvents(client, how, progress, io.signal)
      : await how.start({ requestSource: 'cli' });
    progress.stop();
    return printOutcome(io, output, { run: answer.value, raw: answer.raw }, values.follow === true, name);
  } catch (error) {
    progress.stop();
    if (!io.signal.aborted) throw error;
    io.stderr.write(
      `${name}: interrupted; run ${runId} goes on in the server if it started (kubeglue logs ${runId} --follow)\n`,
    );
    return EXIT.interrupted;
  }
}

/**
 * A synchronous run with its events: the stream of a fresh trace id is open before the run starts, so
 * no event is missed; it is closed once the run's final event came (or shortly after the answer).
 */
async function runFollowingEvents(client: ApiClient, how: RunStart, progress: Progress, signal: AbortSignal) {
  const traceId = randomUUID();
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal.addEventListener('abort', stop, { once: true });
  let lastEvent: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    lastEvent = resolve;
  });
  try {
    const stream = await client.openLogStream({ traceId }, controller.signal);
    const shown = (async () => {
      for await (const event of streamEvents(stream, controller.signal)) {
        progress.event(event);
        if (event.type === 'run_finished') lastEvent();
      }
    })();
    // The stream only shows progress: if it breaks, the run's answer still comes.
    shown.catch(() => {});
    const answer = await how.start({ requestSource: 'cli', traceId });
    await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, LAST_EVENTS_MS).unref())]);
    return answer;
  } finally {
    controller.abort();
    signal.removeEventListener('abort', stop);
  }
}

/** An async run's record with its stored result (data and step results), as a sync run answers. */
async function withResult(client: ApiClient, record: Answer<RunAnswer>) {
  const run = record.value;
  const params = { runId: run.runId };
  const stored = (await client.request(routes.getRunResults, RunResultsAnswer, { params })).value.data;
  const data = stored?.data ?? undefined;
  const raw: JsonValue = {
    ...(record.raw as { [key: string]: JsonValue }),
    ...(data !== undefined ? { data } : {}),
    ...(stored ? { stepResults: stored.stepResults as JsonValue } : {}),
  };
  return { run: { ...run, data }, raw };
}

/**
 * Prints a finished run: its data (text) or its record (json); exit 0 for success, else 1. A successful
 * run's loop steps that went on past failed items are named on stderr, where --follow did not list them.
 */
export function printOutcome(
  io: Io,
  output: OutputMode,
  outcome: { run: RunAnswer; raw: JsonValue },
  followed: boolean,
  name = 'kubeglue run',
): number {
  const { run, raw } = outcome;
  if (output === 'json') printJson(io.stdout, raw);
  else if (run.status === 'success' && run.data !== undefined) printJson(io.stdout, run.data);
  if (run.status === 'success') {
    if (output === 'text' && !followed) {
      for (const step of run.stepResults ?? []) {
        const loop = step.loop;
        if (!step.success || !loop || loop.failed === 0) continue;
        io.stderr.write(
          `${printable(`${name}: step '${step.stepId}': ${loop.failed} of ${loop.items} items failed (kubeglue logs ${run.runId} lists them)`)}\n`,
        );
      }
    }
    return EXIT.ok;
  }
  const what = run.status === 'aborted' ? 'was aborted' : 'failed';
  io.stderr.write(`${printable(`${name}: run ${run.runId} ${what}${run.error ? `: ${run.error}` : ''}`)}\n`);
  return EXIT.failed;
}
