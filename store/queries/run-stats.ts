import type { Db } from '../driver.ts';
import type { RunStatus } from '../types.ts';
import { toIso, toNumber } from './values.ts';

/**
 * What the runs of a time window add up to (GET /v1/stats/runs), and the async runs waiting to start. Both
 * window queries read runs_started_idx, which carries the columns they need (migration 21), from the window's
 * last start to its first: an index-only scan of the window's runs, never of the table. They aggregate in SQL (counts, and the percentiles, which
 * both dialects compute as percentile_cont), so what crosses to JavaScript is one row per bucket and status
 * and one per tool, however many runs the window holds.
 */
export interface RunStatsWindow {
  /** ISO instants: runs started at or after `from` and before `to`. */
  from: string;
  to: string;
  bucketSeconds: number;
  /** Only these tools' runs (a key limited to tools); absent: every tool. */
  toolIds?: readonly string[];
}

export interface BucketCount {
  /** 0 for the bucket starting at `from`, 1 for the next, … */
  bucket: number;
  status: RunStatus;
  runs: number;
}

export type StatusCounts = Record<RunStatus, number>;

export interface ToolWindowStats extends StatusCounts {
  toolId: string;
  /** Duration percentiles (ms) of the runs that ended by themselves (success or failed); null without any. */
  p50Ms: number | null;
  p95Ms: number | null;
}

export interface WaitingRunRow {
  runId: string;
  toolId: string;
  requestSource: string;
  startedAt: string;
}

export interface RunStatsQueries {
  /** Runs per bucket and status; buckets without runs have no row. */
  byBucket(window: RunStatsWindow): Promise<BucketCount[]>;
  /** Per tool with runs in the window: counts by status and duration percentiles, in no order. */
  byTool(window: RunStatsWindow): Promise<ToolWindowStats[]>;
  /**
   * Async runs accepted and not executing: running, no executor has claimed the run (the worker pool) and no
   * runner Pod holds its current attempt. Whatever their start time; the oldest `limit` of them, and how many.
   */
  waiting(opts: {
    toolIds?: readonly string[];
    limit: number;
  }): Promise<{ total: number; runs: WaitingRunRow[] }>;
}

/** The durations percentiles are taken of: runs that ended by themselves. A cancel says nothing of a tool. */
const ENDED_DURATION = `CASE WHEN status IN ('success', 'failed') THEN duration_ms END`;

type Count = number | string | bigint;

interface ToolRow {
  tool_id: string;
  running: Count;
  success: Count;
  failed: Count;
  aborted: Count;
  p50: number | string | null;
  p95: number | string | null;
}

function milliseconds(value: number | string | null): number | null {
  return value === null ? null : Math.round(Number(value));
}

export function bindRunStatsQueries(db: Db): RunStatsQueries {
  const d = db.dialect;
  /** The window's WHERE, its parameters from $1; `params` gets them in order. */
  const windowOf = (window: RunStatsWindow, params: unknown[]): string => {
    params.push(window.from, window.to);
    const conditions = [`started_at >= ${d.timestamp('$1')}`, `started_at < ${d.timestamp('$2')}`];
    if (window.toolIds !== undefined) {
      params.push([...window.toolIds]);
      conditions.push(d.inArray('tool_id', `$${params.length}`));
    }
    return conditions.join(' AND ');
  };

  return {
    async byBucket(window) {
      if (window.toolIds?.length === 0) return [];
      const params: unknown[] = [];
      const where = windowOf(window, params);
      // In floating point (date_part, not extract's numeric: half the time over a million rows); exact at
      // bucket edges, which fall on whole milliseconds.
      params.push(Date.parse(window.from), window.bucketSeconds * 1000);
      const bucket = `CAST(floor((${d.epochMs('started_at')} - $${params.length - 1}) / $${params.length}) AS integer)`;
      const { rows } = await db.query<{ bucket: Count; status: RunStatus; runs: Count }>(
        `SELECT ${bucket} AS bucket, status, count(*) AS runs FROM runs WHERE ${where} GROUP BY bucket, status`,
        params,
      );
      return rows.map((row) => ({
        bucket: toNumber(row.bucket),
        status: row.status,
        runs: toNumber(row.runs),
      }));
    },

    async byTool(window) {
      if (window.toolIds?.length === 0) return [];
      const params: unknown[] = [];
      const where = windowOf(window, params);
      const { rows } = await db.query<ToolRow>(
        `SELECT tool_id,
                count(*) FILTER (WHERE status = 'running') AS running,
                count(*) FILTER (WHERE status = 'success') AS success,
                count(*) FILTER (WHERE status = 'failed') AS failed,
                count(*) FILTER (WHERE status = 'aborted') AS aborted,
                ${d.percentileCont(0.5, ENDED_DURATION)} AS p50,
                ${d.percentileCont(0.95, ENDED_DURATION)} AS p95
           FROM runs WHERE ${where} GROUP BY tool_id`,
        params,
      );
      return rows.map((row) => ({
        toolId: row.tool_id,
        running: toNumber(row.running),
        success: toNumber(row.success),
        failed: toNumber(row.failed),
        aborted: toNumber(row.aborted),
        p50Ms: milliseconds(row.p50),
        p95Ms: milliseconds(row.p95),
      }));
    },

    async waiting(opts) {
      if (opts.toolIds?.length === 0) return { total: 0, runs: [] };
      const params: unknown[] = [];
      // A runner Pod's attempt row stays after the attempt is lost: only the current attempt's counts.
      let where = `status = 'running' AND executor IS NULL
        AND NOT EXISTS (SELECT 1 FROM run_executions e WHERE e.run_id = runs.run_id AND e.attempt = runs.attempt)`;
      if (opts.toolIds !== undefined) {
        params.push([...opts.toolIds]);
        where += ` AND ${d.inArray('tool_id', '$1')}`;
      }
      const [page, count] = await Promise.all([
        db.query<{ run_id: string; tool_id: string; request_source: string; started_at: Date | string }>(
          `SELECT run_id, tool_id, request_source, started_at FROM runs WHERE ${where}
            ORDER BY started_at, run_id LIMIT $${params.length + 1}`,
          [...params, opts.limit],
        ),
        db.query<{ total: Count }>(`SELECT count(*) AS total FROM runs WHERE ${where}`, params),
      ]);
      return {
        total: toNumber(count.rows[0]?.total ?? 0),
        runs: page.rows.map((row) => ({
          runId: row.run_id,
          toolId: row.tool_id,
          requestSource: row.request_source,
          startedAt: toIso(row.started_at),
        })),
      };
    },
  };
}
