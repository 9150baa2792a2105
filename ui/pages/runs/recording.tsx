/**
 * A run's recording (options.record, docs/authoring.md#recording) on its page: what the Run view says of
 * it (exchanges, size, whether the cap cut it), and each step's exchanges, request and response, read from
 * GET /v1/runs/{runId}/recording the first time a step's exchanges are opened (one read for the page).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { RecordedExchange, RecordingAnswer, Run } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { formatBytes } from '../../components/format.ts';
import { JsonView } from '../../components/json-view.tsx';
import { client } from '../../session.ts';

/** The run's recording as the page reads it: nothing until `load`, then the answer or why not. */
export interface RecordingState {
  answer?: RecordingAnswer;
  error?: unknown;
  load(): void;
}

/** Reads the recording of `runId` once, when first asked (`load`); a new run forgets it. */
export function useRecording(runId: string): RecordingState {
  const [answer, setAnswer] = useState<RecordingAnswer>();
  const [error, setError] = useState<unknown>();
  const started = useRef<AbortController | undefined>(undefined);
  useEffect(() => {
    setAnswer(undefined);
    setError(undefined);
    return () => {
      started.current?.abort();
      started.current = undefined;
    };
  }, [runId]);
  const load = () => {
    if (started.current) return;
    const abort = new AbortController();
    started.current = abort;
    client()
      .call(routes.getRunRecording, { params: { runId }, signal: abort.signal })
      .then(setAnswer, (caught: unknown) => abort.signal.aborted || setError(caught));
  };
  return { answer, error, load };
}

/** What the run recorded, in a sentence; the cap's cut said plainly. */
export function RecordingSummary({ run }: { run: Run }) {
  const summary = run.recording;
  if (!summary) return null;
  const count = `${summary.exchanges.toLocaleString()} exchange${summary.exchanges === 1 ? '' : 's'}`;
  return (
    <section aria-labelledby="recording-title">
      <h2 id="recording-title">Recording</h2>
      <p>
        This run recorded {count} with its systems ({formatBytes(summary.bytes)}), redacted like its step
        results. Each step's exchanges are under the step.
      </p>
      {summary.truncated && (
        <p role="note" class="recording-truncated">
          Not everything was recorded: the recording reached its size cap (KUBEGLUE_MAX_RECORDING_BYTES), and
          every exchange after that point was left out.
        </p>
      )}
    </section>
  );
}

/** Where an exchange was in its step: its loop item and page, when it has them. */
function exchangeName(exchange: RecordedExchange, index: number): string {
  const where = [
    exchange.item !== undefined ? `item ${exchange.item}` : undefined,
    exchange.page !== undefined ? `page ${exchange.page}` : undefined,
  ].filter((part) => part !== undefined);
  const request = exchange.request;
  const what = 'method' in request ? `${request.method} ${request.url}` : request.url;
  return `${where.length > 0 ? where.join(', ') : `Exchange ${index + 1}`}: ${exchange.protocol} ${what}`;
}

/** One step's recorded exchanges, behind one click; the recording is read when first opened. */
export function StepExchanges({ stepId, recording }: { stepId: string; recording: RecordingState }) {
  const entries = recording.answer?.recording.entries.filter((entry) => entry.stepId === stepId);
  const leftOut = recording.answer?.recording.leftOut?.steps.includes(stepId) ?? false;
  return (
    <details
      class="step-exchanges"
      onToggle={(event) => (event.currentTarget as HTMLDetailsElement).open && recording.load()}
    >
      <summary>Recorded exchanges of {stepId}</summary>
      <ErrorMessage error={recording.error} title="The recording could not be read" />
      {!recording.answer && !recording.error && <p role="status">Reading the recording…</p>}
      {entries && entries.length === 0 && !leftOut && (
        <p class="muted">This step had no exchange with a system.</p>
      )}
      {entries && entries.length > 0 && (
        <ol class="exchanges">
          {entries.map((exchange, index) => (
            <li key={`${exchange.item}-${exchange.page}-${index}`} class="exchange">
              <h4 class="exchange-name">{exchangeName(exchange, index)}</h4>
              <details>
                <summary>Request</summary>
                <JsonView value={exchange.request} label={`Request ${index + 1} of ${stepId}`} />
              </details>
              {exchange.response && (
                <details>
                  <summary>
                    Response{exchange.response.status !== undefined ? ` (${exchange.response.status})` : ''}
                  </summary>
                  <JsonView value={exchange.response} label={`Response ${index + 1} of ${stepId}`} />
                </details>
              )}
              {exchange.error && (
                <div
                  class="step-error"
                  role="note"
                  aria-label={`Error of exchange ${index + 1} of ${stepId}`}
                >
                  <pre>{exchange.error}</pre>
                </div>
              )}
            </li>
          ))}
        </ol>
      )}
      {leftOut && (
        <p role="note" class="recording-truncated">
          Exchanges of this step past the recording's size cap were not recorded.
        </p>
      )}
    </details>
  );
}
