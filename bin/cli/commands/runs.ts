/** `kubeglue runs`: the latest runs, newest first, filtered by tool and status. */
import * as routes from '../../../contract/api/route-paths.ts';
import { RUNS_OFFSET_MAX, RunStatus } from '../../../contract/api/run.ts';
import { type RunAnswer, RunListAnswer } from '../answers.ts';
import { ApiClient, type Item, itemsOf } from '../client.ts';
import { command, EXIT, UsageError } from '../command.ts';
import { printList, shortDuration, shortTime } from '../output.ts';
import { runsReplay } from './runs-replay.ts';
import { runsResume } from './runs-resume.ts';

const DEFAULT_LIMIT = 20;
/** The API's largest page; more runs are read page by page (its cursor). */
const PAGE_MAX = 100;
const LIMIT_MAX = 1000;

function limitOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_LIMIT;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    throw new UsageError(`--limit must be a whole number from 1 to ${LIMIT_MAX}, not '${text}'`);
  }
  return limit;
}

export const runs = command({
  name: 'runs',
  summary: 'list runs, newest first',
  positionals: [],
  options: {
    tool: { type: 'string', value: '<toolId>', help: 'only the runs of this tool' },
    status: {
      type: 'string',
      value: '<status>',
      help: 'only runs that are running, success, failed or aborted',
    },
    limit: {
      type: 'string',
      value: '<n>',
      help: `at most n runs (default ${DEFAULT_LIMIT}, at most ${LIMIT_MAX})`,
    },
  },
  about: [
    'Lists the runs the API key may see, newest first: id, tool, status, who started it, when, how long.',
    `When more runs match than listed, stderr says how many, counted up to ${RUNS_OFFSET_MAX.toLocaleString('en-US')} ("20 of ${RUNS_OFFSET_MAX.toLocaleString('en-US')}+").`,
    '--output json prints them as a JSON array of run records.',
    '`kubeglue runs resume <runId>` resumes a failed run (`kubeglue runs resume --help`).',
    '`kubeglue runs replay <runId>` replays a recorded run offline (`kubeglue runs replay --help`).',
  ],
  examples: ['kubeglue runs', 'kubeglue runs --tool open-todos --status failed --limit 5'],
  subcommands: [runsResume, runsReplay],
  async run({ values, output, io }) {
    const limit = limitOf(values.limit);
    let status: RunStatus | undefined;
    if (values.status !== undefined) {
      const parsed = RunStatus.safeParse(values.status);
      if (!parsed.success) {
        throw new UsageError(
          `--status must be one of ${RunStatus.options.join(', ')}, not '${values.status}'`,
        );
      }
      status = parsed.data;
    }
    const client = new ApiClient(await io.connect(), io);
    const found: Array<Item<RunAnswer>> = [];
    let cursor: string | undefined;
    let matching = '';
    do {
      const answer = await client.request(routes.listRuns, RunListAnswer, {
        query: { toolId: values.tool, status, limit: Math.min(PAGE_MAX, limit - found.length), cursor },
      });
      found.push(...itemsOf(answer));
      cursor = answer.value.nextCursor ?? undefined;
      // The API counts up to RUNS_OFFSET_MAX matching runs; beyond, total is that lower bound.
      matching = `${answer.value.total.toLocaleString('en-US')}${answer.value.totalExact === false ? '+' : ''}`;
    } while (cursor !== undefined && found.length < limit);

    printList(io, output, found, {
      plural: 'runs',
      headers: ['RUN', 'TOOL', 'STATUS', 'SOURCE', 'STARTED', 'DURATION'],
      row: (run) => [
        run.runId,
        run.toolId,
        run.status,
        run.requestSource ?? '-',
        shortTime(run.metadata.startedAt),
        shortDuration(run.metadata.durationMs),
      ],
    });
    // On stderr, so the table (and --output json) stays what a script reads.
    if (cursor !== undefined && output !== 'json') {
      io.stderr.write(`${found.length} of ${matching} matching runs; --limit lists more.\n`);
    }
    return EXIT.ok;
  },
});
