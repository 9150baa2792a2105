/**
 * The Overview: the last hour's or day's runs per minute (or quarter hour) by status, the failure rate,
 * per tool the p50/p95 duration, and the async runs waiting to start, from GET /v1/stats/runs (computed by
 * the store, so it works without Prometheus). The window is kept in the page's URL; the figures are read
 * again while the tab is visible, like the runs list. Loaded as a chunk of its own (pages.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import type { RunStats } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
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
  return (
    <dl class="figures">
      <div>
        <dt>Runs</dt>
        <dd>{totals.runs.toLocaleString()}</dd>
      </div>
      <div>
        <dt>Failed</dt>
        <dd>{totals.failed.toLocaleString()}</dd>
      </div>
      <div>
        <dt>Failure rate</dt>
        <dd>{percent(totals.failureRate)}</dd>
      </div>
      <div>
        <dt>Running</dt>
        <dd>{totals.running.toLocaleString()}</dd>
      </div>
      <div>
        <dt>Waiting to start</dt>
        <dd>{stats.queue.waiting.toLocaleString()}</dd>
      </div>
    </dl>
  );
}

function ToolTable({ stats }: { stats: RunStats }) {
  return (
    <div class="table-wrap">
      <table class="tool-stats">
        <caption>
          Runs per tool, most first
          {stats.toolCount > stats.tools.length
            ? ` (the ${stats.tools.length} busiest of ${stats.toolCount})`
            : ''}
        </caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Runs</th>
            <th scope="col">Failed</th>
            <th scope="col">Failure rate</th>
            <th scope="col">p50</th>
            <th scope="col">p95</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
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
      <div class="table-wrap">
        <table class="queue-table">
          <caption class="visually-hidden">Async runs waiting to start, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Tool</th>
              <th scope="col">Source</th>
              <th scope="col">Accepted</th>
              <th scope="col">Waiting</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {queue.runs.map((run) => (
              <tr key={run.runId}>
                <td>
                  <Link href={`/runs/${encodeURIComponent(run.runId)}`}>{run.runId}</Link>
                </td>
                <td>{run.toolId}</td>
                <td>{run.requestSource}</td>
                <td>{formatTime(run.acceptedAt)}</td>
                <td>{formatDuration(Math.max(0, now - Date.parse(run.acceptedAt)))}</td>
                <td>{run.admission ?? 'Starting'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

export function OverviewPage() {
  const asked = location.value.query.get('window');
  const name: WindowName = asked === 'day' ? 'day' : 'hour';
  const range = WINDOWS[name];
  const [stats, setStats] = useState<RunStats>();
  const [error, setError] = useState<unknown>();
  const [updatedAt, setUpdatedAt] = useState<Date>();
  const [live, setLive] = useState(true);

  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      try {
        const answer = await client().json<RunStats>('GET', '/stats/runs', {
          query: windowQuery(range, Date.now()),
          signal: abort.signal,
        });
        setStats(answer);
        setError(undefined);
        setUpdatedAt(new Date());
      } catch (caught) {
        if (!abort.signal.aborted) setError(caught);
      }
      if (!abort.signal.aborted && live) timer = setTimeout(poll, range.pollMs);
    };
    const poll = () => {
      if (document.visibilityState === 'visible') void load();
      else timer = setTimeout(poll, range.pollMs);
    };
    setStats(undefined);
    void load();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [name, live]);

  return (
    <section aria-labelledby="overview-title" class="overview">
      <div class="page-head">
        <h1 id="overview-title">Overview</h1>
        <div class="live">
          <label>
            <input
              type="checkbox"
              checked={live}
              onChange={(event) => setLive(event.currentTarget.checked)}
            />{' '}
            Live updates
          </label>
          <span class="muted" role="status">
            {updatedAt ? `Updated ${updatedAt.toLocaleTimeString()}` : 'Loading…'}
          </span>
        </div>
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
