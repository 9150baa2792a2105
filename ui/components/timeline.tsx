/**
 * Where a run's time went: one bar per step on a shared time axis, with a tick for each page a paginated
 * step fetched. Fed by the live events of a run (timelineFromEvents) or by stored step timings.
 */
import type { RunLogEvent, StepResult } from '../api/types.ts';
import { formatDuration } from './format.ts';
import { ShowMore, useShownRows } from './pager.tsx';

export interface TimelineStep {
  stepId: string;
  /** From the run's start. */
  startMs: number;
  /** Absent while the step runs. */
  durationMs?: number;
  status: 'running' | 'success' | 'failed';
  /** When each page was fetched, from the run's start. */
  pagesAtMs: number[];
}

/** The steps of a run as its live events tell them (run_started first). */
export function timelineFromEvents(events: readonly RunLogEvent[]): TimelineStep[] {
  const start = events.find((event) => event.type === 'run_started');
  const origin = Date.parse((start ?? events[0])?.timestamp ?? '') || 0;
  const steps: TimelineStep[] = [];
  const open = new Map<string, TimelineStep>();
  for (const event of events) {
    if (!event.stepId) continue;
    const at = Date.parse(event.timestamp) - origin;
    let step = open.get(event.stepId);
    if (event.type === 'step_started' || !step) {
      step = { stepId: event.stepId, startMs: at, status: 'running', pagesAtMs: [] };
      steps.push(step);
      open.set(event.stepId, step);
      if (event.type === 'step_started') continue;
    }
    if (event.type === 'page_fetched') step.pagesAtMs.push(at);
    if (event.type === 'step_finished') {
      step.durationMs = event.durationMs ?? Math.max(0, at - step.startMs);
      step.status = event.status === 'failed' ? 'failed' : 'success';
    }
  }
  return steps;
}

/** The steps of a stored result that carry their timing (startedAt, durationMs). */
export function timelineFromResults(steps: readonly StepResult[], runStartedAt: string): TimelineStep[] {
  const origin = Date.parse(runStartedAt);
  return steps.flatMap((step) =>
    step.startedAt !== undefined && step.durationMs !== undefined
      ? [
          {
            stepId: step.stepId,
            startMs: Math.max(0, Date.parse(step.startedAt) - origin),
            durationMs: step.durationMs,
            status: step.success ? ('success' as const) : ('failed' as const),
            pagesAtMs: [],
          },
        ]
      : [],
  );
}

const ROWS_PER_PAGE = 200;

export function Timeline({ steps, nowMs }: { steps: readonly TimelineStep[]; nowMs: number }) {
  const rows = useShownRows(ROWS_PER_PAGE);
  const span = Math.max(1, ...steps.map((step) => step.startMs + (step.durationMs ?? nowMs - step.startMs)));
  const percent = (ms: number) => `${Math.min(100, Math.max(0, (ms / span) * 100))}%`;
  return (
    <div class="timeline">
      <p class="muted timeline-axis">
        <span>0</span>
        <span>{formatDuration(span)}</span>
      </p>
      <ol class="timeline-rows">
        {steps.slice(0, rows.shown).map((step, index) => {
          const duration = step.durationMs ?? Math.max(0, nowMs - step.startMs);
          const what = `${step.stepId}: ${step.status}, started at ${formatDuration(step.startMs)}, ${step.durationMs === undefined ? 'running for' : 'took'} ${formatDuration(duration)}${step.pagesAtMs.length ? `, ${step.pagesAtMs.length} pages` : ''}`;
          return (
            <li key={`${step.stepId}-${index}`} class="timeline-row">
              <span class="timeline-label">{step.stepId}</span>
              <span class="timeline-track" title={what}>
                <span
                  class={`timeline-bar timeline-${step.status}`}
                  style={{ left: percent(step.startMs), width: `max(2px, ${percent(duration)})` }}
                />
                {step.pagesAtMs.map((at, page) => (
                  <span key={page} class="timeline-page" style={{ left: percent(at) }} />
                ))}
              </span>
              <span class="timeline-time">
                <span class="visually-hidden">{what}</span>
                <span aria-hidden="true">{formatDuration(duration)}</span>
              </span>
            </li>
          );
        })}
      </ol>
      <ShowMore class="link-button" rows={rows} total={steps.length} what={`steps of ${steps.length}`} />
    </div>
  );
}
