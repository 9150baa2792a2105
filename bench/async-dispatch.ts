/**
 * The async dispatch figure (api.async_dispatch), measured by `api` and `dispatch` alike: async runs of the
 * one-step tool (`bench-get`), one at a time.
 *
 * - `p50Ms`/`p99Ms`: from sending the request to the run no longer `running` (the client polls
 *   GET /v1/runs/{id} between turns of its event loop), as before.
 * - `stepRunningP50Ms`/`stepRunningP99Ms`: from the run's acceptance to its step running, as the run's log
 *   stream shows them: `step_started`'s timestamp less `run_started`'s (both on the server's machine: the
 *   acceptance when the run is stored, the step's start when the engine starts it; millisecond resolution).
 */
import type { RunLogEvent } from '../contract/api/run.ts';
import { percentile, round } from './stats.ts';

/** A JSON call of the API as bench/api.ts's client makes it. */
type Call = (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<Record<string, unknown>>;

/** Async runs measured (after WARM_UP_RUNS that are not). */
export const DISPATCH_RUNS = 200;
const WARM_UP_RUNS = 20;

/**
 * The events of a run's log stream (`GET /v1/logs/stream?runId=`) up to its `run_finished` (the stream
 * itself lingers a while after it, for more runs of the trace).
 */
async function runEvents(base: string, key: string, runId: string): Promise<RunLogEvent[]> {
  const response = await fetch(`${base}/logs/stream?runId=${encodeURIComponent(runId)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (response.status !== 200 || !response.body)
    throw new Error(`log stream of ${runId}: ${response.status}`);
  const events: RunLogEvent[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk, { stream: true });
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('data:')) continue;
      const event = JSON.parse(line.slice('data:'.length)) as RunLogEvent;
      events.push(event);
      // Leaving the loop cancels the rest of the body.
      if (event.type === 'run_finished') return events;
    }
  }
  return events;
}

/** Accepted → its (first) step running, by the server's timestamps in the run's log stream. */
function acceptToStepMs(events: RunLogEvent[]): number {
  const started = events.find((event) => event.type === 'run_started');
  const step = events.find((event) => event.type === 'step_started');
  if (!started || !step)
    throw new Error(`log stream without run_started/step_started: ${JSON.stringify(events)}`);
  return Date.parse(step.timestamp) - Date.parse(started.timestamp);
}

/**
 * `runs` async runs of the one-step tool (`bench-get`, from createBenchTools), one at a time: the figures
 * of api.async_dispatch.
 */
export async function measureDispatch(base: string, key: string, call: Call, runs: number) {
  const done: number[] = [];
  const stepRunning: number[] = [];
  for (let i = 0; i < WARM_UP_RUNS + runs; i++) {
    const start = performance.now();
    const accepted = await call('POST', '/tools/bench-get/run', { options: { async: true } });
    const runId = accepted.runId as string;
    for (;;) {
      const current = await call('GET', `/runs/${runId}`);
      if (current.status !== 'running') {
        if (current.status !== 'success') throw new Error(`async bench run ${runId}: ${current.status}`);
        break;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const elapsed = performance.now() - start;
    // Read after the run ended, so the stream's own request never falls inside the figure.
    const stepMs = acceptToStepMs(await runEvents(base, key, runId));
    if (i < WARM_UP_RUNS) continue;
    done.push(elapsed);
    stepRunning.push(stepMs);
  }
  return {
    runs,
    p50Ms: round(percentile(done, 50)),
    p99Ms: round(percentile(done, 99)),
    stepRunningP50Ms: percentile(stepRunning, 50),
    stepRunningP99Ms: percentile(stepRunning, 99),
    targetStepRunningP50Ms: 5,
  };
}
