import type { FastifyInstance } from 'fastify';
import {
  KG_ERR_RUN_EVENTS_GAP,
  KG_ERR_RUN_NOT_FOUND,
  KG_ERR_RUN_NOT_RUNNING,
  KG_ERR_RUN_ORDER_REFUSED,
  KG_ERR_RUN_SYSTEM_NOT_USED,
  KG_ERR_RUN_TOKENS_UNAVAILABLE,
} from '../../contract/api/errors.ts';
import type { RunOrder } from '../../contract/wire/run-order.ts';
import {
  type AccessTokenAnswer,
  AccessTokenRequest,
  EventBatch,
  Heartbeat,
  INTERNAL_PATHS,
  ResultBody,
  type RunnerAck,
} from '../../contract/wire/runner.ts';
import type { EngineResult, GrantedToken } from '../../engine/types.ts';
import { recordFinish } from '../../runs/completion.ts';
import type { RunEventHub, RunRef } from '../../runs/run-events.ts';
import type { ExecutionMode, Store, StoredRun, TerminalRunStatus } from '../../store/index.ts';
import { defaultStateLimits, type StateLimits } from '../../tools/state.ts';
import { parseInput } from '../validation.ts';
import { assertAttempt, identifyRunner } from './auth.ts';
import { buildRunOrder, OrderRefusal, type OrderSources } from './order.ts';

export interface InternalRoutesDeps extends OrderSources {
  store: Store;
  /** Removes the run's runtime credentials once it has ended. */
  dropRuntimeCredentials(runId: string): Promise<void>;
  /** Called after this API wrote a run's terminal state (metrics). */
  onFinished?(run: StoredRun, status: TerminalRunStatus, durationMs: number): void;
  /** Live progress of runner Pods for `GET /v1/logs/stream` (never data: see runs/run-events.ts). */
  events?: Pick<RunEventHub, 'emit'>;
  /**
   * The current OAuth access token of a tokenManaged system for a run in `mode` (systems/oauth/service.ts, the
   * source the worker pool uses too); without it runner Pods get no managed tokens.
   */
  accessToken?(systemId: string, mode: ExecutionMode, rejected?: { sha256: string }): Promise<GrantedToken>;
  /** Bounds of persistent tool state (KUBEGLUE_TOOL_STATE_*); the defaults without it. */
  stateLimits?: StateLimits;
  log(line: string): void;
  now(): number;
}

type RunParams = { Params: { runId: string } };

/** The contract's paths as fastify routes; derived from INTERNAL_PATHS so the two cannot drift apart. */
function route(path: (runId: string) => string): string {
  return path('__run__').replace('__run__', ':runId');
}

/** Runs whose ids, tool and trace this replica knows (live events need them; one store read per run). */
const KNOWN_RUNS = 10_000;

const STOP: RunnerAck = { cancel: true };
const GO_ON: RunnerAck = { cancel: false };

/** The runner's side of an async run (contract/wire/runner.ts): order, events, heartbeat, result. */
export function registerInternalRoutes(app: FastifyInstance, deps: InternalRoutesDeps): void {
  const { store, events } = deps;
  const known = new Map<string, RunRef>();
  const remember = (run: StoredRun): RunRef => {
    const ref = { runId: run.runId, toolId: run.toolId, traceId: run.traceId ?? run.runId };
    known.delete(run.runId);
    known.set(run.runId, ref);
    if (known.size > KNOWN_RUNS) known.delete(known.keys().next().value as string);
    return ref;
  };
  const refOf = async (runId: string): Promise<RunRef | undefined> => {
    const cached = known.get(runId);
    if (cached) return cached;
    const run = await store.getRun(runId);
    return run ? remember(run) : undefined;
  };

  /** The terminal write with completion effects, then the credentials go: nothing will run with them. */
  async function finish(run: StoredRun, result: EngineResult): Promise<boolean> {
    const limits = deps.stateLimits ?? defaultStateLimits();
    const { won: recorded, finish: finished } = await recordFinish(
      store,
      run,
      result,
      limits,
      new Date(deps.now()),
    );
    if (recorded) {
      deps.onFinished?.(run, finished.status, finished.durationMs);
      events?.emit(remember(run), {
        type: 'run_finished',
        status: finished.status,
        ...(finished.error !== undefined ? { error: finished.error } : {}),
        durationMs: finished.durationMs,
      });
      known.delete(run.runId);
    }
    await deps.dropRuntimeCredentials(run.runId).catch((error: unknown) => {
      deps.log(`internal api: could not drop the runtime credentials of run ${run.runId}: ${String(error)}`);
    });
    return recorded;
  }

  app.get<RunParams>(route(INTERNAL_PATHS.order), async (request): Promise<RunOrder> => {
    const { runId } = await identifyRunner(store, request, { ended: false });
    const run = await store.getRun(runId);
    if (run?.status !== 'running') throw KG_ERR_RUN_NOT_RUNNING(runId);
    try {
      const order = await buildRunOrder(run, deps, deps.now());
      events?.emit(remember(run), { type: 'run_started' });
      return order;
    } catch (error) {
      if (!(error instanceof OrderRefusal)) throw error;
      await finish(run, { status: 'failed', data: null, stepResults: [], error: error.message, files: [] });
      throw KG_ERR_RUN_ORDER_REFUSED(error.message);
    }
  });

  app.post<RunParams>(route(INTERNAL_PATHS.events), async (request): Promise<RunnerAck> => {
    const identity = await identifyRunner(store, request, { ended: true });
    const batch = parseInput(EventBatch, request.body, 'event batch');
    assertAttempt(identity, batch.attempt);
    if (!identity.live) return STOP;
    const { runId, attempt } = identity;
    const count = batch.events.length;
    // Accepting and applying share one transaction: a batch is either recorded with its effects or not at all.
    const fresh = await store.transaction(async (tx) => {
      const accepted = await tx.acceptEvents(runId, attempt, batch.firstSeq, count);
      if (accepted === undefined) return undefined;
      const finished = batch.events
        .slice(count - accepted)
        .flatMap((e) => (e.type === 'step_finished' ? [e] : []));
      if (finished.length > 0) {
        // The seq the terminal write will give the same result, so it overwrites rather than duplicates.
        let seq = await tx.nextStepSeq(runId);
        for (const event of finished) await tx.saveStepResult(runId, seq++, event.result);
      }
      return accepted;
    });
    if (fresh !== undefined) {
      if (events && fresh > 0) {
        const ref = await refOf(runId).catch(() => undefined);
        const first = count - fresh;
        // Numbered by the runner, so the same event reported twice (or to two replicas) is one event.
        // Batches arrive after the fact: durations measured here would be wrong.
        if (ref) {
          batch.events.slice(first).forEach((event, i) => {
            events.emit(ref, event, { seq: batch.firstSeq + first + i, timed: false });
          });
        }
      }
      return GO_ON;
    }
    const [run, current] = await Promise.all([store.getRun(runId), store.getRunnerAttempt(runId)]);
    if (run?.status !== 'running' || current?.attempt !== attempt) return STOP;
    throw KG_ERR_RUN_EVENTS_GAP(batch.firstSeq, current.lastSeq);
  });

  app.post<RunParams>(route(INTERNAL_PATHS.heartbeat), async (request): Promise<RunnerAck> => {
    const identity = await identifyRunner(store, request, { ended: true });
    assertAttempt(identity, parseInput(Heartbeat, request.body, 'heartbeat').attempt);
    if (!identity.live) return STOP;
    const live = await store.recordHeartbeat(
      identity.runId,
      identity.attempt,
      new Date(deps.now()).toISOString(),
    );
    return live ? GO_ON : STOP;
  });

  // A running run's runner only, for systems its tool uses; the answer is a credential: never cached.
  app.post<RunParams>(
    route(INTERNAL_PATHS.accessToken),
    async (request, reply): Promise<AccessTokenAnswer> => {
      const identity = await identifyRunner(store, request, { ended: false });
      const body = parseInput(AccessTokenRequest, request.body, 'access token request');
      assertAttempt(identity, body.attempt);
      const run = await store.getRun(identity.runId);
      if (run?.status !== 'running') throw KG_ERR_RUN_NOT_RUNNING(identity.runId);
      if (!run.systemIds.includes(body.systemId)) throw KG_ERR_RUN_SYSTEM_NOT_USED(body.systemId);
      if (!deps.accessToken) throw KG_ERR_RUN_TOKENS_UNAVAILABLE(body.systemId);
      const rejected = body.rejectedSha256 !== undefined ? { sha256: body.rejectedSha256 } : undefined;
      const token = await deps.accessToken(body.systemId, run.executionMode ?? 'prod', rejected);
      reply.header('cache-control', 'no-store');
      return {
        accessToken: token.accessToken,
        ...(token.expiresAt !== undefined ? { expiresAt: token.expiresAt } : {}),
      };
    },
  );

  app.put<RunParams>(route(INTERNAL_PATHS.result), async (request) => {
    const identity = await identifyRunner(store, request, { ended: true });
    const body = parseInput(ResultBody, request.body, 'result');
    assertAttempt(identity, body.attempt);
    // Ended already: a cancel won, or this is a resend after a lost answer. The stored outcome stands.
    if (!identity.live) return { recorded: false, status: identity.status };
    const run = await store.getRun(identity.runId);
    if (!run) throw KG_ERR_RUN_NOT_FOUND(identity.runId);
    const recorded = await finish(run, body.result);
    if (recorded) return { recorded, status: body.result.status };
    return { recorded, status: (await store.getRun(run.runId))?.status ?? run.status };
  });
}
