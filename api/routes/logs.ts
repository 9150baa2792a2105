import type { FastifyInstance } from 'fastify';
import { KG_ERR_RUN_NOT_FOUND } from '../../contract/api/errors.ts';
import type { RunLogEvent } from '../../contract/api/run.ts';
import { type RunEventHub, type RunRef, runLogEvent } from '../../runs/run-events.ts';
import type { Caller } from '../../runs/service.ts';
import type { StoredRun } from '../../store/index.ts';
import { principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

export interface LogStreamTimings {
  /** A `: ping` comment this often keeps proxies and clients from timing the stream out. */
  heartbeatMs: number;
  /** Followed runs are read from the store this often, for outcomes decided elsewhere (the operator). */
  pollMs: number;
  /** A trace stream whose first run does not show up within this ends. */
  waitMs: number;
  /**
   * The stream ends this long after the last followed run finished: the synchronous answer of that run
   * reaches its client first (superglue's CLI closes the stream then; it would wait to reconnect else).
   */
  lingerMs: number;
}

export const DEFAULT_LOG_STREAM_TIMINGS: LogStreamTimings = {
  heartbeatMs: 15_000,
  pollMs: 2_000,
  waitMs: 60_000,
  lingerMs: 1_500,
};

/** A client that reads slower than events come gets its stream ended rather than memory piling up. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface LogRouteDeps {
  events: Pick<RunEventHub, 'subscribe'>;
  runs: { get(runId: string, caller: Caller): Promise<StoredRun> };
  timings?: Partial<LogStreamTimings>;
}

function refOf(run: StoredRun): RunRef {
  return { runId: run.runId, toolId: run.toolId, traceId: run.traceId ?? run.runId };
}

/** The final event of a run that ended, from its record (its live one may have been missed). */
function finishedEvent(run: StoredRun): RunLogEvent {
  return runLogEvent(
    refOf(run),
    {
      type: 'run_finished',
      status: run.status === 'running' ? 'failed' : run.status,
      ...(run.error !== undefined ? { error: run.error } : {}),
      ...(run.metadata.durationMs !== undefined ? { durationMs: run.metadata.durationMs } : {}),
    },
    { seq: 0, timestamp: run.metadata.completedAt ?? new Date().toISOString() },
  );
}

/**
 * `GET /v1/logs/stream?traceId=…|runId=…`: Server-Sent Events of the runs the key may see (the runs of
 * its tools for a key limited to tools), ending when the followed runs end. Each event is `id:` and one
 * `data:` line of JSON (a RunLogEvent), so EventSource clients and superglue's log client both read it.
 */
export function logHandlers(app: FastifyInstance, deps: LogRouteDeps): HandlersOf<'streamLogs'> {
  const timings = { ...DEFAULT_LOG_STREAM_TIMINGS, ...deps.timings };
  const open = new Set<() => void>();
  // Streams never end by themselves while runs go on: the server's close would wait for them.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  const streamLogs: HandlersOf<'streamLogs'>['streamLogs'] = async ({ query }, request, reply) => {
    const caller = principalOf(request);
    // An EventSource reconnecting after the final event: nothing more will come, and 204 stops it.
    const lastEventId = request.headers['last-event-id'];
    if (typeof lastEventId === 'string' && lastEventId.endsWith(':end')) return reply.status(204).send();
    let initial: StoredRun | undefined;
    if (query.runId !== undefined) {
      // A run the key may not see answers 404 exactly like an unknown one.
      initial = await deps.runs.get(query.runId, caller);
      if (query.traceId !== undefined && initial.traceId !== query.traceId) {
        throw KG_ERR_RUN_NOT_FOUND(query.runId);
      }
    }

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      // The answer hook (api/auth.ts) does not see a hijacked reply: its rule, written here.
      'cache-control': 'no-store, no-transform',
      'x-accel-buffering': 'no',
    });
    res.write(': kubeglue run events\n\n');

    const visible = (toolId: string) => caller.toolIds === null || caller.toolIds.includes(toolId);
    const seen = new Set<string>();
    /** Runs this stream follows, and whether each has finished. */
    const followed = new Map<string, boolean>();
    let ended = false;
    let lingering: NodeJS.Timeout | undefined;
    let subscription: { close(): void } | undefined;

    const write = (chunk: string) => {
      if (ended) return;
      res.write(chunk);
      if (res.writableLength > MAX_BUFFERED_BYTES) end();
    };
    const send = (event: RunLogEvent) => {
      if (ended || seen.has(event.id) || !visible(event.toolId)) return;
      seen.add(event.id);
      const finished = event.type === 'run_finished';
      const known = followed.get(event.runId);
      write(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`);
      // Late events of a run that ended (the step a cancel interrupted) change nothing.
      if (known === true) return;
      followed.set(event.runId, finished);
      if (!finished) {
        // Another run of the trace started while the stream was about to end: follow it too.
        if (lingering) clearTimeout(lingering);
        lingering = undefined;
      } else if (!lingering && [...followed.values()].every(Boolean)) {
        lingering = setTimeout(end, timings.lingerMs);
      }
    };

    const heartbeat = setInterval(() => write(': ping\n\n'), timings.heartbeatMs);
    const waiting =
      query.runId === undefined
        ? setTimeout(() => {
            if (followed.size > 0) return;
            write(`: no run with this trace id started within ${Math.round(timings.waitMs / 1000)} s\n\n`);
            end();
          }, timings.waitMs)
        : undefined;
    // Outcomes decided outside the API (the operator: a Pod lost, OOM-killed, past its deadline) and events
    // lost between replicas still end the stream: the record says when a run ended.
    let polling = false;
    const poll = setInterval(() => {
      const pending = [...followed].filter(([, finished]) => !finished).map(([runId]) => runId);
      if (polling || pending.length === 0) return;
      polling = true;
      Promise.all(
        pending.map(async (runId) => {
          const run = await deps.runs.get(runId, caller).catch(() => undefined);
          if (run && run.status !== 'running') send(finishedEvent(run));
        }),
      ).finally(() => {
        polling = false;
      });
    }, timings.pollMs);

    function end(): void {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      clearInterval(poll);
      if (waiting) clearTimeout(waiting);
      if (lingering) clearTimeout(lingering);
      subscription?.close();
      open.delete(end);
      res.end();
    }
    open.add(end);
    res.on('close', end);

    // What is kept of matching runs comes first, then live events.
    subscription = deps.events.subscribe({ traceId: query.traceId, runId: query.runId }, (event) =>
      send(event),
    );
    if (ended) subscription.close();
    if (initial) {
      const ref = refOf(initial);
      send(runLogEvent(ref, { type: 'run_started' }, { seq: 0, timestamp: initial.metadata.startedAt }));
      if (initial.status !== 'running') {
        // Ended before the stream opened: its outcome, and the stream is over.
        send(finishedEvent(initial));
        end();
      }
    }
  };
  return { streamLogs };
}
