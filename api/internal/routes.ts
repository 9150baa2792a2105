/**
 * The runner's side of an async run (contract/wire/runner.ts): a transport over runs/execution/, which
 * builds the order a runner fetches, takes the events it posts and finishes the run with the result it
 * puts. What is decided here is who is calling (auth.ts), and what each answer tells the runner.
 */
import type { FastifyInstance } from 'fastify';
import {
  KG_ERR_RUN_BUDGET_EXHAUSTED,
  KG_ERR_RUN_EVENTS_GAP,
  KG_ERR_RUN_IDENTITY_UNAVAILABLE,
  KG_ERR_RUN_NOT_FOUND,
  KG_ERR_RUN_NOT_RUNNING,
  KG_ERR_RUN_ORDER_REFUSED,
  KG_ERR_RUN_SYSTEM_NOT_USED,
  KG_ERR_RUN_TOKENS_UNAVAILABLE,
} from '../../contract/api/errors.ts';
import type { RuntimeCredentials } from '../../contract/api/run.ts';
import type { ResolvedSystem, RunOrder } from '../../contract/wire/run-order.ts';
import {
  type AccessTokenAnswer,
  AccessTokenRequest,
  type BudgetAnswer,
  BudgetRequest,
  EventBatch,
  Heartbeat,
  type IdentityTokenAnswer,
  IdentityTokenRequest,
  INTERNAL_PATHS,
  ResultBody,
  type RunnerAck,
} from '../../contract/wire/runner.ts';
import type { GrantedToken, IdentityGrant } from '../../engine/types.ts';
import type { TraceExport } from '../../platform/traces.ts';
import {
  buildOrder,
  type FinishDeps,
  type FinishMetrics,
  failedResult,
  finishRun,
  OrderRefusal,
  type OrderSources,
  RunnerReports,
} from '../../runs/execution/index.ts';
import type { RunEventHub } from '../../runs/run-events.ts';
import type { ExecutionMode, Store, StoredRun } from '../../store/index.ts';
import type { SystemBudgets } from '../../systems/budgets.ts';
import type { StateLimits } from '../../tools/state.ts';
import { parseInput } from '../validation.ts';
import { assertAttempt, identifyRunner, runningRunAsks } from './auth.ts';

export interface InternalRoutesDeps {
  store: Store;
  /** Systems of the run's tool, with their credentials for the run's mode. */
  resolveSystems(systemIds: string[], mode: ExecutionMode): Promise<ResolvedSystem[]>;
  /** The runtime credentials the run was started with (read, not removed: the order may be fetched again). */
  takeRuntimeCredentials(runId: string): Promise<RuntimeCredentials | undefined>;
  /** Removes the run's runtime credentials once it has ended. */
  dropRuntimeCredentials(runId: string): Promise<void>;
  /** Counts the runs whose terminal state this API wrote (api/metrics.ts). */
  metrics?: FinishMetrics;
  /** Live progress of runner Pods for `GET /v1/logs/stream` (never data: see runs/run-events.ts). */
  events?: Pick<RunEventHub, 'emit'>;
  /** Where traced runs' spans go (platform/traces.ts, docs/operations.md); absent: tracing is off. */
  traces?: TraceExport | undefined;
  /**
   * The current OAuth access token of a tokenManaged system for a run in `mode` (systems/oauth/service.ts, the
   * source the worker pool uses too); without it runner Pods get no managed tokens.
   */
  accessToken?(systemId: string, mode: ExecutionMode, rejected?: { sha256: string }): Promise<GrantedToken>;
  /** An outbound identity token of the run for a request to `audience` (runs/identity/, the pool's source too). */
  identityToken?(run: StoredRun, audience: string): Promise<IdentityGrant>;
  /** Systems' rate budgets, the same the worker pool takes from; without it runner Pods are not held back. */
  budgets?: Pick<SystemBudgets, 'take' | 'release' | 'pause'>;
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

const STOP: RunnerAck = { cancel: true };
const GO_ON: RunnerAck = { cancel: false };

/** The runner's side of an async run (contract/wire/runner.ts): order, events, heartbeat, result. */
export function registerInternalRoutes(app: FastifyInstance, deps: InternalRoutesDeps): void {
  const { store } = deps;
  const reports = new RunnerReports({ store, events: deps.events, traces: deps.traces });
  /** A runner fetches its order after admission, scheduling and the image pull: that time counts. */
  const sources: OrderSources = {
    systems: (run) => deps.resolveSystems(run.systemIds, run.executionMode ?? 'prod'),
    runtimeCredentials: (run) => deps.takeRuntimeCredentials(run.runId),
    store,
    timeoutFrom: 'accepted',
    traced: deps.traces !== undefined,
  };
  const finishing: FinishDeps = {
    store,
    stateLimits: deps.stateLimits,
    metrics: deps.metrics,
    dropCredentials: (runId) => deps.dropRuntimeCredentials(runId),
    log: (line) => deps.log(`internal api: ${line}`),
    now: deps.now,
  };

  app.get<RunParams>(route(INTERNAL_PATHS.order), async (request): Promise<RunOrder> => {
    const { runId } = await identifyRunner(store, request, { ended: false });
    const run = await store.getRun(runId);
    if (run?.status !== 'running') throw KG_ERR_RUN_NOT_RUNNING(runId);
    const report = reports.of(run);
    try {
      const order = await buildOrder(run, sources, deps.now());
      report.started();
      return order;
    } catch (error) {
      if (!(error instanceof OrderRefusal)) throw error;
      if ((await finishRun(run, failedResult(error.message), report, finishing)).won) reports.forget(runId);
      throw KG_ERR_RUN_ORDER_REFUSED(error.message);
    }
  });

  app.post<RunParams>(route(INTERNAL_PATHS.events), async (request): Promise<RunnerAck> => {
    const identity = await identifyRunner(store, request, { ended: true });
    const batch = parseInput(EventBatch, request.body, 'event batch');
    assertAttempt(identity, batch.attempt);
    if (!identity.live) return STOP;
    const verdict = await reports.batch(identity.runId, identity.attempt, batch);
    if (verdict.applied) return GO_ON;
    if (verdict.stop) return STOP;
    throw KG_ERR_RUN_EVENTS_GAP(batch.firstSeq, verdict.lastSeq);
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
      const { run, body } = await runningRunAsks(store, request, {
        schema: AccessTokenRequest,
        what: 'access token request',
      });
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

  // A running run's runner only; the answer is a credential: never cached.
  app.post<RunParams>(
    route(INTERNAL_PATHS.identityToken),
    async (request, reply): Promise<IdentityTokenAnswer> => {
      const { run, body } = await runningRunAsks(store, request, {
        schema: IdentityTokenRequest,
        what: 'identity token request',
      });
      if (!deps.identityToken) throw KG_ERR_RUN_IDENTITY_UNAVAILABLE();
      const grant = await deps.identityToken(run, body.audience);
      reply.header('cache-control', 'no-store');
      return { token: grant.token, expiresAt: grant.expiresAt };
    },
  );
  // A running run's runner only, for systems its tool uses: the budget is every process's, not the runner's.
  app.post<RunParams>(route(INTERNAL_PATHS.budget), async (request): Promise<BudgetAnswer> => {
    const { run, body } = await runningRunAsks(store, request, {
      schema: BudgetRequest,
      what: 'budget request',
    });
    if (!run.systemIds.includes(body.systemId)) throw KG_ERR_RUN_SYSTEM_NOT_USED(body.systemId);
    const mode = run.executionMode ?? 'prod';
    const { budgets } = deps;
    if (!budgets) return body.take ? { waitMs: 0 } : {};
    if (body.release) await budgets.release(body.systemId, mode, body.release.lease);
    if (body.pause) await budgets.pause(body.systemId, mode, body.pause.forMs);
    if (!body.take) return {};
    try {
      const ticket = await budgets.take(body.systemId, mode, body.take.withinMs);
      if ('retryInMs' in ticket) return ticket;
      return {
        waitMs: ticket.waitMs,
        ...(ticket.at !== undefined ? { at: ticket.at } : {}),
        ...(ticket.lease !== undefined ? { lease: ticket.lease } : {}),
      };
    } catch (error) {
      throw KG_ERR_RUN_BUDGET_EXHAUSTED(
        body.systemId,
        error instanceof Error ? error.message : String(error),
      );
    }
  });

  app.put<RunParams>(route(INTERNAL_PATHS.result), async (request) => {
    const identity = await identifyRunner(store, request, { ended: true });
    const body = parseInput(ResultBody, request.body, 'result');
    assertAttempt(identity, body.attempt);
    // Ended already: a cancel won, or this is a resend after a lost answer. The stored outcome stands.
    if (!identity.live) return { recorded: false, status: identity.status };
    const run = await store.getRun(identity.runId);
    if (!run) throw KG_ERR_RUN_NOT_FOUND(identity.runId);
    const { won: recorded } = await finishRun(run, body.result, reports.of(run), finishing);
    if (recorded) {
      reports.forget(run.runId);
      return { recorded, status: body.result.status };
    }
    return { recorded, status: (await store.getRun(run.runId))?.status ?? run.status };
  });
}
