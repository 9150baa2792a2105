/**
 * One run: its record (GET /v1/runs/{id}), its live events while it runs (GET /v1/logs/stream, read with
 * fetch so the key stays in the Authorization header), then its stored results (GET …/results): output,
 * each step's result and error, a timeline of steps and pages, file artifacts; cancel, run again
 * with the same inputs, and resume a failed or aborted run from the step where it stopped; a recorded
 * run replayed, or saved as a test of its tool (replay.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { Run, RunLogEvent, RunResults, StepResult } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Fact } from '../../components/fact.tsx';
import { formatBytes, formatDuration, formatTime } from '../../components/format.ts';
import { JsonView } from '../../components/json-view.tsx';
import { useNarrowScreen } from '../../components/narrow-screen.ts';
import { ShowMore, useShownRows } from '../../components/pager.tsx';
import { Badge, StatusBadge, StepOutcome } from '../../components/status.tsx';
import { Timeline, timelineFromEvents, timelineFromResults } from '../../components/timeline.tsx';
import { runHref } from '../../hrefs.ts';
import { Link, navigate } from '../../router.tsx';
import { client, session } from '../../session.ts';
import { type RecordingState, RecordingSummary, StepExchanges, useRecording } from './recording.tsx';
import { ReplayPanel, SaveAsTest } from './replay.tsx';
import { LONG_DATA_CHARS, longerThan, resumeLabel } from './run-rules.ts';

const STEPS_PER_PAGE = 100;
/** Events kept on screen; the timeline is built from all of them. */
const EVENTS_SHOWN = 200;
/** Data as JSON; long data on a narrow screen starts collapsed behind "Show the <label>". */
function RunData({ value, label }: { value: unknown; label: string }) {
  const narrow = useNarrowScreen();
  const view = <JsonView value={value} label={label} />;
  if (!narrow || !longerThan(value, LONG_DATA_CHARS)) return view;
  return (
    <details>
      <summary>Show the {label.toLowerCase()}</summary>
      {view}
    </details>
  );
}

function Facts({ run }: { run: Run }) {
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={run.status} />
      </dd>
      <dt>Tool</dt>
      <dd>{run.toolId}</dd>
      <dt>Started</dt>
      <dd>{formatTime(run.metadata.startedAt)}</dd>
      <dt>Completed</dt>
      <dd>{formatTime(run.metadata.completedAt)}</dd>
      <dt>Duration</dt>
      <dd>{formatDuration(run.metadata.durationMs)}</dd>
      <dt>Request source</dt>
      <dd>{run.requestSource ?? 'api'}</dd>
      <dt>Trace id</dt>
      <dd>
        <code>{run.traceId ?? '—'}</code>
      </dd>
      {run.executionMode && <Fact term="Mode">{run.executionMode}</Fact>}
      {run.attempt !== undefined && run.attempt > 1 && <Fact term="Attempt">{run.attempt}</Fact>}
      {run.resumedFrom && (
        <Fact term="Resumed from">
          <Link href={runHref(run.resumedFrom)}>{run.resumedFrom}</Link>
        </Fact>
      )}
      {run.parentRunId && (
        <Fact term="Started by run">
          <Link href={runHref(run.parentRunId)}>{run.parentRunId}</Link>
        </Fact>
      )}
      {run.userId && (
        <Fact term="API key">
          <code>{run.userId}</code>
        </Fact>
      )}
    </dl>
  );
}

/** A loop step's failed items, each with its error, behind one click. */
function FailedItems({ step }: { step: StepResult }) {
  const loop = step.loop;
  if (!loop || loop.failed === 0) return null;
  return (
    <details class="failed-items">
      <summary>
        Failed items of {step.stepId} ({loop.failed})
      </summary>
      <ul class="failed-item-list">
        {loop.failedItems.map((item) => (
          <li key={item.index}>
            <span class="failed-item-index">Item {item.index}</span>
            <pre>{item.error}</pre>
          </li>
        ))}
      </ul>
      {loop.failed > loop.failedItems.length && (
        <p class="muted">
          The first {loop.failedItems.length} of {loop.failed} failed items; the step's result below holds
          every item.
        </p>
      )}
    </details>
  );
}

/** The steps' results; with `recording`, each executed step's recorded exchanges too. */
function Steps({ steps, recording }: { steps: readonly StepResult[]; recording?: RecordingState }) {
  const rows = useShownRows(STEPS_PER_PAGE);
  const failing = steps.findIndex((step) => !step.success);
  const withFailedItems = steps.findIndex((step) => (step.loop?.failed ?? 0) > 0);
  const first = failing >= 0 ? failing : withFailedItems;
  useEffect(() => {
    if (first >= rows.shown) rows.show((Math.floor(first / STEPS_PER_PAGE) + 1) * STEPS_PER_PAGE);
  }, [first]);
  if (steps.length === 0) return <p class="muted">No step ran.</p>;
  return (
    <>
      {failing >= 0 && (
        <p>
          <a href={`#step-${failing}`}>Go to the failing step ({steps[failing]?.stepId})</a>
        </p>
      )}
      {failing < 0 && withFailedItems >= 0 && (
        <p>
          <a href={`#step-${withFailedItems}`}>
            Go to the step with failed items ({steps[withFailedItems]?.stepId})
          </a>
        </p>
      )}
      <ol class="steps">
        {steps.slice(0, rows.shown).map((step, index) => (
          <li key={`${step.stepId}-${index}`} id={`step-${index}`} class="step">
            <h3 class="step-head">
              <StepOutcome success={step.success} /> <span class="step-id">{step.stepId}</span>
              {step.loop !== undefined && step.loop.failed > 0 && (
                <Badge
                  icon="⚠"
                  word={`${step.loop.failed} of ${step.loop.items} items failed`}
                  tone="aborted"
                />
              )}
              {step.durationMs !== undefined && <span class="muted"> {formatDuration(step.durationMs)}</span>}
            </h3>
            {step.reusedFrom && (
              <p class="step-reused">
                Reused from run <Link href={runHref(step.reusedFrom)}>{step.reusedFrom}</Link>, not executed
                again.
              </p>
            )}
            {step.error && (
              <div class="step-error" role="note" aria-label={`Error of step ${step.stepId}`}>
                <pre>{step.error}</pre>
              </div>
            )}
            <FailedItems step={step} />
            {step.notes?.map((note) => (
              <p key={note} class="muted">
                {note}
              </p>
            ))}
            {step.data !== undefined && (
              <details>
                <summary>Result of {step.stepId}</summary>
                <JsonView value={step.data} label={`Result of ${step.stepId}`} />
              </details>
            )}
            {recording && !step.reusedFrom && <StepExchanges stepId={step.stepId} recording={recording} />}
          </li>
        ))}
      </ol>
      <ShowMore rows={rows} total={steps.length} what={`steps of ${steps.length}`} />
    </>
  );
}

function Files({ run }: { run: Run }) {
  const files = run.fileArtifacts ?? [];
  if (files.length === 0) return null;
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      <ul class="files">
        {files.map((file) => (
          <li key={file.fileKey}>
            {file.downloadUrl ? (
              <a href={file.downloadUrl} download={file.filename}>
                Download {file.filename}
              </a>
            ) : (
              file.filename
            )}{' '}
            <span class="muted">
              {file.contentType}, {formatBytes(file.size)}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

/**
 * A running step that waits for its system's rate budget: the latest such wait of each step whose next
 * event has not come yet ("waiting for api.example.com's budget, 1.2 s"; docs/operations.md).
 */
function BudgetWaits({ events }: { events: readonly RunLogEvent[] }) {
  const waiting = new Map<string, RunLogEvent>();
  for (const event of events) {
    if (event.stepId === undefined) continue;
    if (event.type === 'budget_wait') waiting.set(event.stepId, event);
    else if (event.type === 'step_finished' || event.type === 'page_fetched') waiting.delete(event.stepId);
  }
  if (waiting.size === 0) return null;
  return (
    <p role="status" class="budget-waits">
      {[...waiting.values()].map((event) => (
        <span key={event.id}>
          Step <code>{event.stepId}</code> is waiting for {event.system}'s budget,{' '}
          {((event.delayMs ?? 0) / 1000).toFixed(1)} s.{' '}
        </span>
      ))}
    </p>
  );
}

function LiveEvents({ events }: { events: readonly RunLogEvent[] }) {
  const shown = events.slice(-EVENTS_SHOWN);
  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">Live events</h2>
      {events.length > shown.length && (
        <p class="muted">
          The last {shown.length} of {events.length} events.
        </p>
      )}
      <div role="log" aria-live="polite" aria-labelledby="events-title">
        <ol class="events">
          {shown.map((event) => (
            <li key={event.id} class={`event event-${event.level.toLowerCase()}`}>
              <time dateTime={event.timestamp}>{new Date(event.timestamp).toLocaleTimeString()}</time>{' '}
              <span class="event-level">{event.level}</span> {event.message}
            </li>
          ))}
        </ol>
      </div>
    </section>
  );
}

export function RunPage({ params }: { params: Record<string, string> }) {
  const runId = params.runId ?? '';
  const [run, setRun] = useState<Run>();
  const [results, setResults] = useState<RunResults>();
  const [events, setEvents] = useState<RunLogEvent[]>([]);
  const [error, setError] = useState<unknown>();
  const action = useAction();
  const [now, setNow] = useState(Date.now());
  const recording = useRecording(runId);

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    setRun(undefined);
    setResults(undefined);
    setEvents([]);
    setError(undefined);
    const api = client();
    const finish = async () => {
      const [record, stored] = await Promise.all([
        api.call(routes.getRun, { params: { runId }, signal }),
        api.call(routes.getRunResults, { params: { runId }, signal }),
      ]);
      setRun(record);
      setResults(stored);
      // The bench (bench/ui.ts) reads this mark: the run's page is complete and usable.
      requestAnimationFrame(() => performance.mark('kubeglue:run-page-ready'));
    };
    const follow = async (record: Run) => {
      const collected: RunLogEvent[] = [];
      let pending: number | undefined;
      // Events come in bursts (a page a millisecond): render at most once a frame.
      const flush = () => {
        pending = undefined;
        setEvents([...collected]);
        setNow(Date.now());
      };
      const ticker = setInterval(() => setNow(Date.now()), 500);
      try {
        await api.followRun(
          record.runId,
          (event) => {
            collected.push(event);
            pending ??= requestAnimationFrame(flush);
          },
          signal,
        );
      } finally {
        clearInterval(ticker);
        if (pending !== undefined) cancelAnimationFrame(pending);
        if (!signal.aborted) flush();
      }
    };
    (async () => {
      const record = await api.call(routes.getRun, { params: { runId }, signal });
      setRun(record);
      if (record.status === 'running') await follow(record);
      await finish();
    })().catch((caught: unknown) => {
      if (!signal.aborted) setError(caught);
    });
    return () => abort.abort();
  }, [runId]);

  if (error && !run) {
    return (
      <section>
        <h1>Run {runId}</h1>
        <ErrorMessage error={error} title="The run could not be read" />
        <p>
          <Link href="/runs">Back to the runs</Link>
        </p>
      </section>
    );
  }
  if (!run) return <p role="status">Loading run {runId}…</p>;

  const cancel = () =>
    action.run(async () => {
      setRun(await client().call(routes.cancelRun, { params: { runId: run.runId } }));
    });
  const again = () =>
    action.run(async () => {
      const started = await client().startRun(run.toolId, run.toolPayload);
      navigate(runHref(started.runId));
    });

  const resume = () =>
    action.run(async () => {
      const started = await client().resumeRun(run.runId);
      navigate(runHref(started.runId));
    });

  const scopes = session.value?.me.scopes ?? [];
  const canSaveTest = scopes.includes('tools:write') && scopes.includes('runs:read');
  const canReplay = scopes.includes('runs:execute');
  const stored = results?.data ?? undefined;
  const steps = stored?.stepResults ?? [];
  const resumable = (run.status === 'failed' || run.status === 'aborted') && results !== undefined;
  const liveTimeline = timelineFromEvents(events);
  const timeline =
    liveTimeline.length > 0 ? liveTimeline : timelineFromResults(steps, run.metadata.startedAt);
  const elapsed = (run.metadata.durationMs ?? now - Date.parse(run.metadata.startedAt)) || 0;

  return (
    <article aria-labelledby="run-title">
      <div class="page-head">
        <h1 id="run-title">
          Run <code>{run.runId}</code>
        </h1>
        <div class="actions">
          {run.status === 'running' && (
            <button type="button" class="danger" disabled={action.busy} onClick={cancel}>
              Cancel run
            </button>
          )}
          <button type="button" disabled={action.busy} onClick={again}>
            Run again with these inputs
          </button>
          {resumable && (
            <button type="button" class="secondary" disabled={action.busy} onClick={resume}>
              {resumeLabel(steps)}
            </button>
          )}
        </div>
      </div>
      <ErrorMessage error={action.error} title="That did not work" />
      <Facts run={run} />
      {run.waiting && (
        <p class="run-waiting" role="status" aria-label="Why the run waits">
          {run.waiting.message}
        </p>
      )}
      {run.error && (
        <div class="run-error" role="note" aria-label="Error of the run">
          <h2>Error</h2>
          <pre>{run.error}</pre>
        </div>
      )}
      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        {timeline.length > 0 ? (
          <Timeline steps={timeline} nowMs={elapsed} />
        ) : (
          <p class="muted">
            {run.status === 'running'
              ? 'Waiting for the first step…'
              : 'This run stored no step timings (a run in a runner Pod keeps them only while watched live here).'}
          </p>
        )}
      </section>
      {run.status === 'running' && <BudgetWaits events={events} />}
      {(run.status === 'running' || events.length > 0) && <LiveEvents events={events} />}
      <section aria-labelledby="inputs-title">
        <h2 id="inputs-title">Inputs</h2>
        {run.toolPayload && Object.keys(run.toolPayload).length > 0 ? (
          <RunData value={run.toolPayload} label="Inputs" />
        ) : (
          <p class="muted">No inputs.</p>
        )}
      </section>
      <section aria-labelledby="output-title">
        <h2 id="output-title">Output</h2>
        {run.status === 'running' ? (
          <p class="muted">The output is stored when the run finishes.</p>
        ) : stored?.data !== undefined && stored.data !== null ? (
          <RunData value={stored.data} label="Output" />
        ) : (
          <p class="muted">{stored ? 'No output.' : (results?.message ?? 'No output.')}</p>
        )}
      </section>
      <Files run={run} />
      <RecordingSummary run={run} />
      {run.recording && run.status === 'success' && !run.recording.truncated && canSaveTest && (
        <SaveAsTest run={run} />
      )}
      {run.recording && run.status !== 'running' && canReplay && <ReplayPanel run={run} />}
      <section aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        {run.status === 'running' ? (
          <p class="muted">Step results are shown when the run finishes.</p>
        ) : (
          <Steps steps={steps} recording={run.recording ? recording : undefined} />
        )}
      </section>
    </article>
  );
}
