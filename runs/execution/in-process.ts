/**
 * The in-process transport, shared by the sync path and the pool launcher: a run's order executes in this
 * process's worker pool, each engine event reaches the run's report with the worker's time, and the OAuth
 * access tokens and identity tokens its steps ask for come from this process (which owns the store and
 * the signing key).
 */
import type { RunOrder } from '../../contract/wire/run-order.ts';
import type {
  AccessTokenSource,
  BudgetSource,
  EngineResult,
  GrantedToken,
  IdentityTokenSource,
} from '../../engine/types.ts';
import type { WorkerPool } from '../../engine/worker/pool.ts';
import type { ExecutionMode } from '../../store/index.ts';
import type { RunReport } from './report.ts';

/** The current OAuth access token of a tokenManaged system for a run in `mode` (systems/oauth/service.ts). */
export type AccessTokens = (
  systemId: string,
  mode: ExecutionMode,
  rejected?: string,
) => Promise<GrantedToken>;

/** The rate budgets of systems for a run in `mode` (systems/budgets.ts SystemBudgets.forRun). */
export type Budgets = (mode: ExecutionMode) => BudgetSource;

export interface InProcessOptions {
  signal: AbortSignal;
  /** The run's execution mode: which of a system's tokens its steps get. */
  mode: ExecutionMode;
  accessToken?: AccessTokens | undefined;
  /** The run's outbound identity tokens, signed by this process (runs/identity/). */
  identityToken?: IdentityTokenSource | undefined;
  /** Where requests to systems with a rateLimit take from their budget (none: they are not held back). */
  budgets?: Budgets | undefined;
  /**
   * Send the order at once rather than with what else this turn of the event loop queues for the worker:
   * for a launch, which nothing batches with and whose caller goes on with other work meanwhile.
   */
  immediate?: boolean;
}

/** Executes the order in a worker of the pool; resolves with the engine's result (a failing run too). */
export function executeInPool(
  pool: WorkerPool,
  order: RunOrder,
  report: RunReport,
  opts: InProcessOptions,
): Promise<EngineResult> {
  const source = opts.accessToken;
  const accessToken: AccessTokenSource | undefined = source
    ? (systemId, rejected) => source(systemId, opts.mode, rejected)
    : undefined;
  return pool.run(order, {
    signal: opts.signal,
    onEvent: report.event,
    // Step data stays in the worker until the result: the report needs ids, statuses and times only.
    progressOnly: true,
    ...(opts.immediate ? { immediate: true } : {}),
    ...(accessToken ? { accessToken } : {}),
    ...(opts.identityToken ? { identityToken: opts.identityToken } : {}),
    ...(opts.budgets ? { budget: opts.budgets(opts.mode) } : {}),
  });
}
