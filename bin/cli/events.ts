/**
 * Reading `GET /v1/logs/stream`: Server-Sent Events parsed as the EventSource rules say (fields,
 * comments, multi-line data, CR/LF), each `data:` checked as a RunLogEvent. `followRun` follows one run
 * to its end: it reopens a stream that ended early (a proxy's timeout, a server restart), dropping
 * the events it already showed, and asks the run's record when a stream cannot say how the run ended.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiFailure, CLIENT_CODES } from '../../contract/api/route-client.ts';
import * as routes from '../../contract/api/route-paths.ts';
import { RunLogEvent } from '../../contract/api/run.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import { RunAnswer } from './answers.ts';
import type { Answer, ApiClient } from './client.ts';

/** The `data` of each event of a text/event-stream body, until it ends. */
export async function* serverSentData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.search(/\r\n|\r|\n/); end !== -1; end = buffer.search(/\r\n|\r|\n/)) {
      const line = buffer.slice(0, end);
      // A CR at the end of a chunk may be the first half of CRLF: wait for the next one.
      if (buffer[end] === '\r' && end === buffer.length - 1) break;
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      }
      // `id:`, `event:` and `: comments` (pings) carry nothing the commands use.
    }
  }
}

function parseEvent(data: string): RunLogEvent {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new ApiFailure({
      status: 200,
      code: CLIENT_CODES.unexpectedAnswer,
      message: 'the log stream sent an event that is not JSON',
    });
  }
  const parsed = RunLogEvent.safeParse(json);
  if (!parsed.success) {
    throw new ApiFailure({
      status: 200,
      code: CLIENT_CODES.unexpectedAnswer,
      message: `the log stream sent an unexpected event: ${formatIssues(parsed.error)}`,
    });
  }
  return parsed.data;
}

/** The events of one open stream, until it ends or `signal` aborts it (then it just stops). */
export async function* streamEvents(response: Response, signal: AbortSignal): AsyncGenerator<RunLogEvent> {
  if (!response.body) return;
  try {
    for await (const data of serverSentData(response.body)) yield parseEvent(data);
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
}

/** Waits before reopening a stream that ended early, longer after each try. */
const REOPEN_DELAYS_MS = [250, 1000, 2000, 5000];

/**
 * Follows run `runId` to its end, handing each event to `onEvent` once; resolves with the run's record
 * (`GET /v1/runs/{runId}`) once it is no longer running.
 */
export async function followRun(
  client: ApiClient,
  runId: string,
  options: { signal: AbortSignal; onEvent(event: RunLogEvent): void },
): Promise<Answer<RunAnswer>> {
  const seen = new Set<string>();
  for (let attempt = 0; ; attempt++) {
    const controller = new AbortController();
    const stop = () => controller.abort();
    options.signal.addEventListener('abort', stop, { once: true });
    try {
      const response = await client.openLogStream({ runId }, controller.signal);
      for await (const event of streamEvents(response, controller.signal)) {
        if (seen.has(event.id)) continue;
        seen.add(event.id);
        options.onEvent(event);
        if (event.type === 'run_finished' && event.runId === runId) break;
      }
    } catch (error) {
      // A 404 (no such run) or a refused key will not change by trying again.
      if (error instanceof ApiFailure && error.status >= 400 && error.status < 500) throw error;
      if (options.signal.aborted) throw error;
    } finally {
      controller.abort();
      options.signal.removeEventListener('abort', stop);
    }
    options.signal.throwIfAborted();
    // The record is the source of truth: its terminal state is written before the final event.
    const record = await client.request(routes.getRun, RunAnswer, { params: { runId } });
    if (record.value.status !== 'running') return record;
    await sleep(REOPEN_DELAYS_MS[Math.min(attempt, REOPEN_DELAYS_MS.length - 1)], undefined, {
      signal: options.signal,
    });
  }
}
