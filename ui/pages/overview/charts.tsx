/**
 * The Overview's charts, drawn with plain elements and the stylesheet: no chart library (the whole page,
 * charts included, is a 2.6 KB gzip chunk; uPlot alone is 23.6 KB: docs/developers/architecture.md). Each
 * status has a fill pattern of its own besides its colour (solid, hatched, dotted, striped) and the legend
 * names it; each chart has its figures as text too (a table, values beside the bars, a summary).
 */
import type { RunStats, RunStatus } from '../../api/types.ts';
import { formatDuration, formatTime } from '../../components/format.ts';
import { StatusBadge } from '../../components/status.tsx';
import { Table } from '../../components/table.tsx';
import { Link, withQuery } from '../../router.tsx';

type Bucket = RunStats['buckets'][number];
type ToolStats = RunStats['tools'][number];

/** Bottom to top in a column, and the legend's order. */
export const STACK: readonly RunStatus[] = ['success', 'failed', 'aborted', 'running'];

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayClock = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });

/** The smallest 1, 2 or 5 × 10^n at or above value (at least 1): the top of an axis. */
export function axisTop(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

const totalOf = (bucket: Bucket) => STACK.reduce((sum, status) => sum + bucket[status], 0);

function Swatch({ status }: { status: RunStatus }) {
  return <span class={`chart-swatch chart-${status}`} aria-hidden="true" />;
}

export function Legend() {
  return (
    <ul class="chart-legend" aria-label="Legend">
      {STACK.map((status) => (
        <li key={status}>
          <Swatch status={status} />
          <StatusBadge status={status} />
        </li>
      ))}
    </ul>
  );
}

/** Runs per bucket as columns stacked by status, over the window. */
export function StatusColumns({ stats, per }: { stats: RunStats; per: string }) {
  const { buckets } = stats;
  const peak = Math.max(0, ...buckets.map(totalOf));
  const top = axisTop(peak);
  const middle = buckets[Math.floor(buckets.length / 2)];
  // A window longer than half a day crosses midnight: its axis names the days.
  const axis = Date.parse(stats.to) - Date.parse(stats.from) > 12 * 3_600_000 ? dayClock : clock;
  const summary =
    `Runs per ${per} by status, ${clock.format(new Date(stats.from))} to ${clock.format(new Date(stats.to))}: ` +
    `${stats.totals.runs} runs (${STACK.map((status) => `${stats.totals[status]} ${status}`).join(', ')}); ` +
    `at most ${peak} in one ${per}. The table below has every ${per}.`;
  return (
    <div class="columns-chart">
      <div class="chart-y" aria-hidden="true">
        <span>{top}</span>
        <span>{top % 2 === 0 ? top / 2 : ''}</span>
        <span>0</span>
      </div>
      <div class="chart-plot" role="img" aria-label={summary}>
        {buckets.map((bucket) => {
          const total = totalOf(bucket);
          const parts = STACK.filter((status) => bucket[status] > 0);
          return (
            <div
              key={bucket.start}
              class="chart-column"
              title={`${clock.format(new Date(bucket.start))}: ${total} run${total === 1 ? '' : 's'}${
                parts.length ? ` (${parts.map((status) => `${bucket[status]} ${status}`).join(', ')})` : ''
              }`}
            >
              {parts.map((status) => (
                <div
                  key={status}
                  class={`chart-part chart-${status}`}
                  style={{ height: `${(bucket[status] / top) * 100}%` }}
                />
              ))}
            </div>
          );
        })}
      </div>
      <div class="chart-x" aria-hidden="true">
        <span>{axis.format(new Date(stats.from))}</span>
        {middle && <span>{axis.format(new Date(middle.start))}</span>}
        <span>{axis.format(new Date(stats.to))}</span>
      </div>
    </div>
  );
}

/** The columns' figures, one row per bucket. */
export function BucketTable({ stats, per }: { stats: RunStats; per: string }) {
  return (
    <Table class="bucket-table" caption={`Runs per ${per} by status`} columns={['Starting', ...STACK, 'all']}>
      {stats.buckets.map((bucket) => (
        <tr key={bucket.start}>
          <th scope="row">{formatTime(bucket.start)}</th>
          {STACK.map((status) => (
            <td key={status}>{bucket[status]}</td>
          ))}
          <td>{totalOf(bucket)}</td>
        </tr>
      ))}
    </Table>
  );
}

/** The runs list filtered to one tool's runs of the window. */
export function toolRunsHref(toolId: string, from: string): string {
  return withQuery('/runs', { toolId, startedAfter: from });
}

/** Per tool, the median and the 95th percentile duration as two bars on one scale, with their values. */
export function DurationBars({ tools, from }: { tools: readonly ToolStats[]; from: string }) {
  const timed = tools.filter((tool) => tool.p95Ms !== null);
  if (timed.length === 0) return <p class="muted">No run ended by itself in this window.</p>;
  const top = Math.max(1, ...timed.map((tool) => tool.p95Ms ?? 0));
  const width = (ms: number | null) => ({ width: `${((ms ?? 0) / top) * 100}%` });
  return (
    <>
      <ul class="chart-legend" aria-label="Legend">
        <li>
          <span class="chart-swatch duration-p50" aria-hidden="true" /> p50 (median)
        </li>
        <li>
          <span class="chart-swatch duration-p95" aria-hidden="true" /> p95
        </li>
      </ul>
      <ul class="duration-rows">
        {timed.map((tool) => (
          <li key={tool.toolId} class="duration-row">
            <Link href={toolRunsHref(tool.toolId, from)} class="duration-tool">
              {tool.toolId}
            </Link>
            <div class="duration-track" aria-hidden="true">
              <div class="duration-bar duration-p95" style={width(tool.p95Ms)} />
              <div class="duration-bar duration-p50" style={width(tool.p50Ms)} />
            </div>
            <span class="duration-values">
              p50 {formatDuration(tool.p50Ms ?? undefined)} · p95 {formatDuration(tool.p95Ms ?? undefined)}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
