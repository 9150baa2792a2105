import type { JsonObject } from '../crds/json.ts';
import type { RuntimeCredentials } from '../crds/run.ts';
import type { Tool } from '../crds/tool.ts';
import type { EngineEvent, EngineResult, GrantedToken, ResolvedSystem } from './engine/types.ts';

/** Everything a worker needs to execute one run; plain data, so it crosses process boundaries. */
export interface RunOrder {
  runId: string;
  tool: Tool;
  inputs: JsonObject;
  systems: ResolvedSystem[];
  runtimeCredentials?: RuntimeCredentials | undefined;
  timeoutMs?: number | undefined;
  traceId: string;
}

export type ToWorker =
  /** events: true sends every engine event, 'progress' the same without step data (false: none). */
  | { type: 'run'; id: number; order: RunOrder; events: boolean | 'progress' }
  | { type: 'cancel'; id: number }
  /** The answer to a token request of run `id`: a token, or the error message to fail the step with. */
  | { type: 'token'; id: number; requestId: number; token?: GrantedToken; error?: string }
  | { type: 'shutdown' };

/** What crosses the channel: one message, or the messages of one event-loop turn together. */
export type ToWorkerFrame = ToWorker | { type: 'batch'; messages: ToWorker[] };

export type FromWorker =
  | { type: 'ready' }
  /** Engine events of runs, in order, batched (a run's events always precede its result). */
  | { type: 'events'; events: { id: number; event: EngineEvent }[] }
  | { type: 'result'; id: number; result: EngineResult }
  /** Run `id` needs a system's current OAuth access token (rejected: the one its target refused). */
  | { type: 'token_request'; id: number; requestId: number; systemId: string; rejected?: string };

export type FromWorkerFrame = FromWorker | { type: 'batch'; messages: FromWorker[] };

/**
 * Coalesces the messages sent during one turn of the event loop into one frame, sent from setImmediate
 * (after the I/O callbacks of the turn, so no later than the next turn). Each message over a
 * child_process channel costs a serialization and a write system call on one side and a parse on the
 * other; under load a worker reports dozens of events and results per turn.
 */
export function frameBatcher<M>(write: (frame: M | { type: 'batch'; messages: M[] }) => void): {
  send(message: M): void;
  /** Sends what is queued now (before a message that must not wait, such as shutdown). */
  flush(): void;
} {
  let queued: M[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const messages = queued;
    queued = [];
    if (messages.length === 1) write(messages[0] as M);
    else if (messages.length > 1) write({ type: 'batch', messages });
  };
  return {
    send: (message) => {
      queued.push(message);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
