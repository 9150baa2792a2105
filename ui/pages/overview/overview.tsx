/**
 * The Overview: the last hour's or day's runs per minute (or quarter hour) by status, the failure rate,
 * per tool the p50/p95 duration, and the async runs waiting to start, from GET /v1/stats/runs (computed by
 * the store, so it works without Prometheus). The window is kept in the page's URL; the figures are read
 * again while the tab is visible, like the runs list. Loaded as a chunk of its own (pages.tsx).
 */
import { useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { RunStats } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
import { LiveUpdates } from '../../components/live.tsx';
import { usePolled } from '../../components/poll.ts';
import { Table } from '../../components/table.tsx';
import { runHref } from '../../hrefs.ts';
import { Link, location, navigate, withQuery } from '../../router.tsx';
import { client } from '../../session.ts';
import { BucketTable, DurationBars, Legend, StatusColumns, toolRunsHref } from './charts.tsx';

interface TimeWindow {
  label: string;
  lengthMs: number;
  bucketSeconds: number;
  /** What a bucket is, in words ("minute"). */
  per: string;
  /** How often the figures are read again. */
  pollMs: number;
}

/** A day's quarter hours change slowly, and reading a day costs the store more than an hour. */
export const WINDOWS = {
  hour: { label: 'Last hour', lengthMs: 3_600_000, bucketSeconds: 60, per: 'minute', pollMs: 10_000 },
  day: { label: 'Last day', lengthMs: 86_400_000, bucketSeconds: 900, per: '15 minutes', pollMs: 60_000 },
} as const satisfies Record<string, TimeWindow>;
type WindowName = keyof typeof WINDOWS;

/**
 * The window ending with the current bucket: its edges on bucket boundaries, so a bucket keeps its place
 * from one read to the next, and the last one fills as runs come.
 */
function windowQuery(range: TimeWindow, now: number): Record<string, string> {
  const bucketMs = range.bucketSeconds * 1000;
  const to = Math.ceil((now + 1) / bucketMs) * bucketMs;
  return {
    from: new Date(to - range.lengthMs).toISOString(),
    to: new Date(to).toISOString(),
    bucket: String(range.bucketSeconds),
  };
}

const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);

function WindowChoice({ current }: { current: WindowName }) {
  return (
    <fieldset class="window-choice">
      <legend>Time window</legend>
      {(Object.keys(WINDOWS) as WindowName[]).map((name) => (
        <label key={name}>
          <input
            type="radio"
            name="window"
            value={name}
            checked={current === name}
            onChange={() =>
              navigate(withQuery('/overview', { window: name === 'hour' ? undefined : name }), {
                replace: true,
              })
            }
          />{' '}
          {WINDOWS[name].label}
        </label>
      ))}
    </fieldset>
  );
}

function Figures({ stats }: { stats: RunStats }) {
  const { totals } = stats;
  const figures: [string, string][] = [
    ['Runs', totals.runs.toLocaleString()],
    ['Failed', totals.failed.toLocaleString()],
    ['Failure rate', percent(totals.failureRate)],
    ['Running', totals.running.toLocaleString()],
    ['Waiting to start', stats.queue.waiting.toLocaleString()],
  ];
  return (
    <dl class="figures">
      {figures.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function ToolTable({ stats }: { stats: RunStats }) {
  return (
    <Table
      class="tool-stats"
      caption={`Runs per tool, most first${
        stats.toolCount > stats.tools.length
          ? ` (the ${stats.tools.length} busiest of ${stats.toolCount})`
          : ''
      }`}
      columns={['Tool', 'Runs', 'Failed', 'Failure rate', 'p50', 'p95']}
    >
      {stats.tools.map((tool) => (
        <tr key={tool.toolId}>
          <th scope="row">
            <Link href={toolRunsHref(tool.toolId, stats.from)}>{tool.toolId}</Link>
          </th>
          <td>{tool.runs.toLocaleString()}</td>
          <td>{tool.failed.toLocaleString()}</td>
          <td>{percent(tool.failureRate)}</td>
          <td>{formatDuration(tool.p50Ms ?? undefined)}</td>
          <td>{formatDuration(tool.p95Ms ?? undefined)}</td>
        </tr>
      ))}
    </Table>
  );
}

function Queue({ stats, now }: { stats: RunStats; now: number }) {
  const { queue } = stats;
  if (queue.waiting === 0) return <p>No async run is waiting to start.</p>;
  return (
    <>
      <p>
        {queue.waiting.toLocaleString()} async run{queue.waiting === 1 ? '' : 's'} accepted and not executing
        yet, oldest first{queue.waiting > queue.runs.length ? ` (the first ${queue.runs.length})` : ''}.
      </p>
      <Table
        class="queue-table"
        caption="Async runs waiting to start, oldest first"
        captionHidden
        columns={['Run', 'Tool', 'Source', 'Accepted', 'Waiting', 'Why']}
      >
        {queue.runs.map((run) => (
          <tr key={run.runId}>
            <td>
              <Link href={runHref(run.runId)}>{run.runId}</Link>
            </td>
            <td>{run.toolId}</td>
            <td>{run.requestSource}</td>
            <td>{formatTime(run.acceptedAt)}</td>
            <td>{formatDuration(Math.max(0, now - Date.parse(run.acceptedAt)))}</td>
            <td>{run.admission ?? 'Starting'}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

export function OverviewPage() {
  const asked = location.value.query.get('window');
  const name: WindowName = asked === 'day' ? 'day' : 'hour';
  const range = WINDOWS[name];
  // Kept with the window it is of: after a change of window, the other window's figures are not shown.
  const [live, setLive] = useState(true);
  const {
    answer: read,
    error,
    updatedAt,
  } = usePolled(
    async (signal) => ({
      window: name,
      stats: await client().call(routes.getRunStats, { query: windowQuery(range, Date.now()), signal }),
    }),
    live ? range.pollMs : undefined,
    [name, live],
  );
  const stats = read?.window === name ? read.stats : undefined;

  return (
    <section aria-labelledby="overview-title" class="overview">
      <div class="page-head">
        <h1 id="overview-title">Overview</h1>
        <LiveUpdates
          live={live}
          onChange={setLive}
          status={updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}` : 'Loading…'}
        />
      </div>
      <WindowChoice current={name} />
      <ErrorMessage error={error} title="The statistics could not be read" />
      {stats && (
        <>
          <Figures stats={stats} />
          <h2>Runs per {range.per} by status</h2>
          <figure class="chart">
            <Legend />
            <StatusColumns stats={stats} per={range.per} />
            <details>
              <summary>The runs per {range.per} as a table</summary>
              <BucketTable stats={stats} per={range.per} />
            </details>
          </figure>
          <h2>Duration per tool</h2>
          {stats.tools.length === 0 ? (
            <p>No runs in this window.</p>
          ) : (
            <>
              <DurationBars tools={stats.tools.slice(0, 20)} from={stats.from} />
              <ToolTable stats={stats} />
            </>
          )}
          <h2>Waiting to start</h2>
          <Queue stats={stats} now={updatedAt?.getTime() ?? Date.now()} />
        </>
      )}
    </section>
  );
}
