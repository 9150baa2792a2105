import type { RunOrder } from '../../contract/wire/run-order.ts';
import type { EngineSettings } from '../deps.ts';
import type { GatewayRelayAddress } from '../protocols/gateway-socket.ts';
import type { BudgetTicket, EngineEvent, EngineResult, GrantedToken, IdentityGrant } from '../types.ts';

/** What a worker runs with, sent as its first message. */
export interface WorkerSettings extends EngineSettings {
  /** The API's gateway relay and the token this process enters it with (steps on private systems). */
  gatewayRelay: GatewayRelayAddress | undefined;
}

/**
 * Both directions send arrays of these messages: what one side queues in one turn of its event loop
 * crosses in one IPC write (pool.ts, worker.ts). The channel is JSON (what the order and the result are
 * anyway: runner Pods get and send them over HTTP), which V8's structured serializer only slows down.
 */
export type ToWorker =
  | { type: 'init'; settings: WorkerSettings }
  /** events: true sends every engine event, 'progress' the same without step data (false: none). */
  | { type: 'run'; id: number; order: RunOrder; events: boolean | 'progress' }
  | { type: 'cancel'; id: number }
  /** The answer to a token request of run `id`: a token, or the error message to fail the step with. */
  | { type: 'token'; id: number; requestId: number; token?: GrantedToken; error?: string }
  /** The answer to an identity token request of run `id`: a token, or the error message to fail the step with. */
  | { type: 'identity'; id: number; requestId: number; grant?: IdentityGrant; error?: string }
  /** The answer to a budget take of run `id`: a ticket, or the error message to fail the request with. */
  | { type: 'budget'; id: number; requestId: number; ticket?: BudgetTicket; error?: string }
  | { type: 'shutdown' };

export type FromWorker =
  | { type: 'ready' }
  /** The worker lost control of a sandbox isolate (its thread may stay stuck): replace it once its runs end. */
  | { type: 'unhealthy'; reason: string }
  /**
   * Engine events of runs, in order, batched (a run's events always precede its result), each with when it
   * happened (epoch ms): a batch crosses up to EVENT_BATCH_MS after its first event.
   */
  | { type: 'events'; events: { id: number; event: EngineEvent; at: number }[] }
  | { type: 'result'; id: number; result: EngineResult }
  /** Run `id` needs a system's current OAuth access token (rejected: the one its target refused). */
  | { type: 'token_request'; id: number; requestId: number; systemId: string; rejected?: string }
  /** Run `id` needs an outbound identity token for a request to `audience` (an origin). */
  | { type: 'identity_request'; id: number; requestId: number; audience: string }
  /**
   * Run `id` takes from a system's rate budget (answered by 'budget'), gives a maxConcurrent slot back, or
   * pauses the budget after a Retry-After (neither answered). Only for systems with a rateLimit.
   */
  | { type: 'budget_request'; id: number; requestId: number; systemId: string; take: { withinMs: number } }
  | { type: 'budget_release'; id: number; systemId: string; lease: string }
  | { type: 'budget_pause'; id: number; systemId: string; forMs: number };
