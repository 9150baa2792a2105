/**
 * Pool worker: a long-lived child process that executes many runs at once for the API process,
 * over IPC. User code runs in its sandbox; a crash here fails only this worker's runs.
 */

import { createLogger, logProcessWarnings } from '../../contract/log.ts';
import { createEngineDeps } from '../deps.ts';
import { closeGatewayAgents } from '../protocols/gateway-http.ts';
import { closeHttpAgent } from '../protocols/http.ts';
import { closeConnectionPools } from '../protocols/index.ts';
import { runTool } from '../run-tool.ts';
import type { BudgetSource, BudgetTicket, EngineEvent, GrantedToken, IdentityGrant } from '../types.ts';
import type { FromWorker, ToWorker, WorkerSettings } from './ipc.ts';
import { startWorkerWatchdog } from './watchdog.ts';

// Its warnings share the API's log (stderr is inherited): one JSON line each, as the API's own.
logProcessWarnings(createLogger('worker'));

// First: whatever happens to this thread later, the process neither outlives the API process nor
// stays stuck with runs the pool waits for.
startWorkerWatchdog();

/**
 * isolated-vm lost control of an isolate: its thread may stay stuck, and a normal exit would then hang
 * for good (isolated-vm's thread pool joins its threads while the process exits).
 */
let unhealthy = false;

/** Exits; without the normal exit's C++ clean-up once an isolate's thread may be stuck. */
function exit(code: number): never {
  if (unhealthy) process.kill(process.pid, 'SIGKILL');
  process.exit(code);
}

/** The engine, built from the settings the pool sends first (the 'init' message). */
let engine: ReturnType<typeof createEngineDeps> | undefined;

function start(settings: WorkerSettings): void {
  engine = createEngineDeps({
    ...settings,
    // An isolate's thread may stay stuck (isolated-vm could not stop a script): this process should
    // end. The pool sends it no more runs and stops it once these have ended.
    onCatastrophicError: (message) => {
      process.emitWarning(`isolated-vm catastrophic error: ${message}`);
      if (unhealthy) return;
      unhealthy = true;
      send({ type: 'unhealthy', reason: 'the sandbox lost control of an isolate' });
    },
  });
  send({ type: 'ready' });
}

const running = new Map<number, AbortController>();
/**
 * How long the worker waits with no run in flight before giving back the sandbox's memory (a burst
 * grows the isolates' heaps; they would keep that size). Short enough to matter, long enough that
 * steady traffic with small gaps never pays for a fresh isolate.
 */
const TRIM_AFTER_IDLE_MS = 2_000;
let trimTimer: NodeJS.Timeout | undefined;

function runFinished(id: number): void {
  running.delete(id);
  if (running.size > 0) return;
  clearTimeout(trimTimer);
  trimTimer = setTimeout(() => engine?.sandbox.trim(), TRIM_AFTER_IDLE_MS);
  trimTimer.unref();
}
/** Questions to the parent (tokens, budgets) waiting for its answer, by request id. */
const parentRequests = new Map<
  number,
  { resolve: (answer: never) => void; reject: (error: Error) => void }
>();
let nextParentRequest = 1;

/** Sends a question to the parent, which owns the store; resolves with its answer (see `answered`). */
function askParent<T>(question: (requestId: number) => FromWorker): Promise<T> {
  const requestId = nextParentRequest++;
  return new Promise<T>((resolve, reject) => {
    parentRequests.set(requestId, { resolve: resolve as (answer: never) => void, reject });
    send(question(requestId));
  });
}

/** The parent's answer to a question: a value, or the error message to fail with. */
function answered<T>(requestId: number, value: T | undefined, error: string | undefined, what: string): void {
  const waiting = parentRequests.get(requestId);
  parentRequests.delete(requestId);
  if (value !== undefined) waiting?.resolve(value as never);
  else waiting?.reject(new Error(error ?? `no ${what}`));
}

/** The parent process owns the store: it answers with the system's current token (or why there is none). */
function askToken(runId: number, systemId: string, rejected: string | undefined): Promise<GrantedToken> {
  return askParent((requestId) => ({
    type: 'token_request',
    id: runId,
    requestId,
    systemId,
    ...(rejected ? { rejected } : {}),
  }));
}

/** Systems' rate budgets are in the parent's store too; a release and a pause need no answer. */
function budgetOf(runId: number): BudgetSource {
  return {
    take: async (systemId, withinMs) => {
      const ticket = await askParent<BudgetTicket>((requestId) => ({
        type: 'budget_request',
        id: runId,
        requestId,
        systemId,
        take: { withinMs },
      }));
      // The parent's clock is this one: its moment, not its wait, which the way back made late.
      return 'at' in ticket && ticket.at !== undefined
        ? { ...ticket, waitMs: Math.max(0, ticket.at - Date.now()) }
        : ticket;
    },
    release: (systemId, lease) => send({ type: 'budget_release', id: runId, systemId, lease }),
    pause: (systemId, forMs) => send({ type: 'budget_pause', id: runId, systemId, forMs }),
  };
}

/** The parent process holds the signing key: it answers with a token of the run for `audience`. */
function askIdentity(runId: number, audience: string): Promise<IdentityGrant> {
  return askParent((requestId) => ({ type: 'identity_request', id: runId, requestId, audience }));
}

/** 'progress': step_finished without its data, so a listener that wants progress only copies no results. */
function eventFor(mode: boolean | 'progress', event: EngineEvent): EngineEvent {
  if (mode !== 'progress' || event.type !== 'step_finished') return event;
  const { data: _data, ...result } = event.result;
  return { type: 'step_finished', result };
}

/**
 * Engine events wait here for a few milliseconds and cross to the parent in one message: a paginated
 * run has a dozen, and one IPC message each cost more than the pages themselves.
 */
const EVENT_BATCH_MS = 10;
let pendingEvents: { id: number; event: EngineEvent; at: number }[] = [];
let eventTimer: NodeJS.Timeout | undefined;
/**
 * Other messages (results, token requests) wait for the end of this turn of the event loop and cross
 * with the pending events in one IPC write: each write is a system call here and a wake-up and a read
 * in the API process, which at concurrency cost more CPU than the messages themselves (bench/README.md).
 */
let outgoing: FromWorker[] = [];
let flushQueued = false;

/** Sends what waits, events first: a run's events always arrive before its result. */
function flush(): void {
  flushQueued = false;
  clearTimeout(eventTimer);
  eventTimer = undefined;
  const batch: FromWorker[] = pendingEvents.length > 0 ? [{ type: 'events', events: pendingEvents }] : [];
  pendingEvents = [];
  if (outgoing.length > 0) {
    batch.push(...outgoing);
    outgoing = [];
  }
  if (batch.length > 0 && process.connected) process.send?.(batch);
}

function sendEvent(id: number, event: EngineEvent): void {
  // Its time now: the batch reaches the parent later, and a step's start and duration are the engine's.
  pendingEvents.push({ id, event, at: Date.now() });
  eventTimer ??= setTimeout(flush, EVENT_BATCH_MS);
}

function send(message: FromWorker): void {
  outgoing.push(message);
  if (flushQueued) return;
  flushQueued = true;
  setImmediate(flush);
}

let stopping = false;

async function shutdown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const controller of running.values()) controller.abort();
  await Promise.allSettled([closeHttpAgent(), closeGatewayAgents(), closeConnectionPools()]);
  engine?.sandbox.dispose();
  flush();
  exit(0);
}

process.on('message', (messages: ToWorker[]) => {
  for (const message of messages) receive(message);
});

function receive(message: ToWorker): void {
  switch (message.type) {
    case 'init':
      start(message.settings);
      break;
    case 'run': {
      // The pool sends 'init' first, on the same ordered channel.
      const { deps } = engine!;
      const controller = new AbortController();
      clearTimeout(trimTimer);
      running.set(message.id, controller);
      runTool(deps, {
        ...message.order,
        signal: controller.signal,
        accessToken: (systemId, rejected) => askToken(message.id, systemId, rejected),
        identityToken: (audience) => askIdentity(message.id, audience),
        budget: budgetOf(message.id),
        onEvent: message.events
          ? (event) => sendEvent(message.id, eventFor(message.events, event))
          : undefined,
      }).then((result) => {
        runFinished(message.id);
        send({ type: 'result', id: message.id, result });
      });
      break;
    }
    case 'cancel':
      running.get(message.id)?.abort();
      break;
    case 'token':
      answered(message.requestId, message.token, message.error, 'access token');
      break;
    case 'budget':
      answered(message.requestId, message.ticket, message.error, 'budget');
      break;
    case 'identity':
      answered(message.requestId, message.grant, message.error, 'identity token');
      break;
    case 'shutdown':
      void shutdown();
      break;
  }
}

// The parent is gone: nobody will read results any more. (If this thread is stuck, the watchdog
// ends the process instead.)
process.on('disconnect', () => void shutdown());
// A signal to the whole process group (Ctrl-C in a terminal, kill -- -pid) reaches the workers too: the
// parent decides when they stop (after its grace period for in-flight runs), by 'shutdown' or by leaving.
// Once told to shut down, SIGTERM is the pool saying the shutdown took too long: exit at once.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {
  if (stopping) exit(1);
});
