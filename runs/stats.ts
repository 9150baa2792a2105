/**
 * The statistics of runs (GET /v1/stats/runs): a time window's runs per bucket and status, and per tool
 * the counts, failure rate and p50/p95 duration, from the store (so they need no Prometheus); and the async
 * runs waiting now to start, each with what its ToolRun says about its admission (its place in the queue
 * and the limit reached), read from the Resources the API already has (the cluster, or the embedded store).
 */
import { KG_ERR_VALIDATION } from '../contract/api/errors.ts';
import type { RequestSource } from '../contract/api/run.ts';
import {
  RUN_STATS_DEFAULT_BUCKET_SECONDS,
  RUN_STATS_DEFAULT_WINDOW_MS,
  RUN_STATS_MAX_BUCKETS,
  RUN_STATS_MAX_TOOLS,
  RUN_STATS_MAX_WAITING,
  RUN_STATS_MAX_WINDOW_MS,
  type RunStats,
  type RunStatsQuery,
  type RunStatusCounts,
  type WaitingRun,
} from '../contract/api/run-stats.ts';
import { ToolRunConditionType } from '../contract/reasons.ts';
import type { ToolRunResource } from '../contract/resources/kinds.ts';
import type { ResourceClient } from '../kube/resources/index.ts';
import type { RunStatsQueries, RunStatsWindow, WaitingRunRow } from '../store/index.ts';
import type { Caller } from './context.ts';
import { toolRunName } from './toolrun.ts';

export interface RunStatsDeps {
  store: { runStats: RunStatsQueries };
  toolRuns: Pick<ResourceClient<ToolRunResource>, 'get'>;
}

/** The window a query asks for: `to` defaults to now, `from` to an hour before it. */
export function statsWindow(query: RunStatsQuery, now: Date): Omit<RunStatsWindow, 'toolIds'> {
  const to = query.to ? new Date(query.to) : now;
  const from = query.from ? new Date(query.from) : new Date(to.getTime() - RUN_STATS_DEFAULT_WINDOW_MS);
  const bucketSeconds = query.bucket ?? RUN_STATS_DEFAULT_BUCKET_SECONDS;
  const length = to.getTime() - from.getTime();
  if (length <= 0) throw KG_ERR_VALIDATION('query', 'from: must be before to');
  if (length > RUN_STATS_MAX_WINDOW_MS) {
    throw KG_ERR_VALIDATION('query', 'from: the window from `from` to `to` may span at most 7 days');
  }
  if (Math.ceil(length / (bucketSeconds * 1000)) > RUN_STATS_MAX_BUCKETS) {
    throw KG_ERR_VALIDATION(
      'query',
      `bucket: ${bucketSeconds} s makes more than ${RUN_STATS_MAX_BUCKETS} buckets of this window; choose a larger one`,
    );
  }
  return { from: from.toISOString(), to: to.toISOString(), bucketSeconds };
}

const zero = (): RunStatusCounts => ({ running: 0, success: 0, failed: 0, aborted: 0 });

function failureRate(counts: RunStatusCounts): number | null {
  const ended = counts.success + counts.failed;
  return ended === 0 ? null : counts.failed / ended;
}

/** The message of a waiting ToolRun's Admitted=False condition, when it has one. */
async function admissionOf(deps: RunStatsDeps, run: WaitingRunRow): Promise<string | undefined> {
  try {
    const toolRun = await deps.toolRuns.get(toolRunName(run.runId));
    const admitted = toolRun?.status?.conditions?.find((c) => c.type === ToolRunConditionType.Admitted);
    return admitted?.status === 'False' ? admitted.message : undefined;
  } catch {
    // The reason is a detail of the queue: an API server that does not answer now leaves it out, and the
    // counts, which come from the store, still show.
    return undefined;
  }
}

/** The statistics of `window` as `caller` may see them: a key limited to tools sees those tools' runs only. */
export async function runStats(
  deps: RunStatsDeps,
  window: Omit<RunStatsWindow, 'toolIds'>,
  caller: Pick<Caller, 'toolIds'>,
): Promise<RunStats> {
  const scoped: RunStatsWindow = {
    ...window,
    ...(caller.toolIds !== null ? { toolIds: caller.toolIds } : {}),
  };
  const [bucketRows, toolRows, waiting] = await Promise.all([
    deps.store.runStats.byBucket(scoped),
    deps.store.runStats.byTool(scoped),
    deps.store.runStats.waiting({
      ...(scoped.toolIds ? { toolIds: scoped.toolIds } : {}),
      limit: RUN_STATS_MAX_WAITING,
    }),
  ]);

  const fromMs = Date.parse(window.from);
  const bucketMs = window.bucketSeconds * 1000;
  const buckets = Array.from(
    { length: Math.ceil((Date.parse(window.to) - fromMs) / bucketMs) },
    (_, index) => ({ start: new Date(fromMs + index * bucketMs).toISOString(), ...zero() }),
  );
  const totals = zero();
  for (const row of bucketRows) {
    const bucket = buckets[row.bucket];
    if (bucket) bucket[row.status] += row.runs;
    totals[row.status] += row.runs;
  }

  const tools = toolRows
    .map((row) => {
      const runs = row.running + row.success + row.failed + row.aborted;
      return { ...row, runs, failureRate: failureRate(row) };
    })
    .sort((a, b) => b.runs - a.runs || (a.toolId < b.toolId ? -1 : 1))
    .slice(0, RUN_STATS_MAX_TOOLS);

  const admissions = await Promise.all(waiting.runs.map((run) => admissionOf(deps, run)));
  const waitingRuns = waiting.runs.map((run, index): WaitingRun => {
    const admission = admissions[index];
    return {
      runId: run.runId,
      toolId: run.toolId,
      requestSource: run.requestSource as RequestSource,
      acceptedAt: run.startedAt,
      ...(admission ? { admission } : {}),
    };
  });

  return {
    from: window.from,
    to: window.to,
    bucketSeconds: window.bucketSeconds,
    totals: {
      ...totals,
      runs: totals.running + totals.success + totals.failed + totals.aborted,
      failureRate: failureRate(totals),
    },
    buckets,
    tools,
    toolCount: toolRows.length,
    queue: { waiting: waiting.total, runs: waitingRuns },
  };
}
