import type { Recording } from '../contract/api/recording.ts';
import { DEFAULT_RUN_TIMEOUT_MS, type StepResult } from '../contract/api/run.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { ConnectionProtocol } from '../contract/step-protocols.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import type { RunStateChanges } from '../contract/wire/tool-state.ts';
import type { EngineSpan } from './spans.ts';

/**
 * A connection to a private system: the bytes go to the gateway target, whatever the URL says; `host`
 * and `port` are the system URL's (lower-case host), for the Host header, TLS SNI and certificate checks,
 * and to tell the system's origin from other origins a redirect may lead to.
 */
export interface GatewayRoute {
  tunnelId: string;
  target: string;
  host: string;
  port: number;
}

/** A current OAuth access token, as the run's process hands it to the engine. */
export interface GrantedToken {
  accessToken: string;
  /** Epoch ms; the engine asks for a new token once it is this close to expiry. */
  expiresAt?: number | undefined;
}

/**
 * Asks the process that owns the store for a system's current access token; `rejected` is a token the
 * target answered 401 to. Throws with a message safe to show (it becomes the step's error).
 */
export type AccessTokenSource = (systemId: string, rejected?: string) => Promise<GrantedToken>;

/** An outbound identity token (`<<kubeglue_identity_jwt>>`, identity-tokens.ts) and its expiry (epoch ms). */
export interface IdentityGrant {
  token: string;
  expiresAt: number;
}

/**
 * Asks the run's host (the API process, which holds the signing key) for an identity token of this run for
 * a request to `audience`, an origin. Throws with a message safe to show (it becomes the step's error).
 */
export type IdentityTokenSource = (audience: string) => Promise<IdentityGrant>;

/**
 * When a request to a system with a rate budget may go, as the run's host answers (engine/budget.ts). Times
 * are relative: the host may be another machine (a runner Pod asks the API).
 */
export type BudgetTicket =
  /**
   * Go after waitMs (0: now); give `lease` back once the request has ended (maxConcurrent). `at`: the same
   * moment on the host's clock (epoch ms), given where the host and the engine share a clock (a worker of
   * the host's pool), so that the time the answer took to arrive does not move the request later.
   */
  | { waitMs: number; at?: number | undefined; lease?: string | undefined }
  /** Every slot of the system's maxConcurrent is in use: ask again after retryInMs. */
  | { retryInMs: number };

/**
 * The host's side of systems' rate budgets, kept in its store and shared by every process (the API's
 * systems/budgets.ts; a runner Pod asks the internal API). Only systems whose order entry has a rateLimit
 * are asked about. `take` throws with a message safe to show when no request can go within `withinMs`.
 */
export interface BudgetSource {
  take(systemId: string, withinMs: number): Promise<BudgetTicket>;
  release(systemId: string, lease: string): void;
  /** The system answered 429 or 503 with Retry-After: nothing of its budget goes for `forMs`. */
  pause(systemId: string, forMs: number): void;
}

/**
 * A property of the first argument that exists for code but throws `message` when read; its value
 * never reaches the sandbox (a credential code may not see: credentials.ts).
 */
export interface GuardedProperty {
  path: readonly string[];
  message: string;
}

export interface EvaluateOptions {
  label?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  guarded?: readonly GuardedProperty[] | undefined;
  /** Answer `[result, args[0][capture]]` instead of the result (the sandbox's EvaluateOptions.capture). */
  capture?: string | undefined;
}

/** Runs a user function source in the sandbox with JSON arguments. */
export type Evaluate = (source: string, args: JsonValue[], options?: EvaluateOptions) => Promise<JsonValue>;

/** What a protocol receives once templates are rendered. */
export interface ProtocolContext {
  signal: AbortSignal;
  /** Epoch ms; every outbound call must finish before it. */
  deadline: number;
  traceId: string;
  /**
   * A traced run's span this call is made in (its step, loop item or page: spans.ts): the parent its
   * `traceparent` names. Absent: the run is not traced, and the traceparent's span id is random.
   */
  spanId?: string | undefined;
  /** Replaces the run's credential values; protocols apply it to text before they cut it short. */
  redact?: ((text: string) => string) | undefined;
  /** Told before a failed attempt is retried (HTTP): progress for live logs, never data. */
  onRetry?: ((retry: RetryInfo) => void) | undefined;
  /** The step data bound (KUBEGLUE_MAX_STEP_DATA_BYTES): protocols that can stop reading past it do. */
  maxDataBytes?: number | undefined;
  /** Which exchange of the run this call is (its step, loop item and page), for a recording (recording.ts). */
  exchange?: { stepId: string; item?: number | undefined; page?: number | undefined } | undefined;
  /** The step system's rate budget, when it has one: every request (each attempt) takes from it. */
  budget?: RequestBudget | undefined;
}

/** A system's rate budget as a protocol sees it (engine/budget.ts). */
export interface RequestBudget {
  /**
   * Resolves once a request may go, with what ends it (a maxConcurrent slot given back); waits as long as
   * the budget says, and throws when it could not go before `deadline` or `signal` aborts.
   */
  take(signal: AbortSignal, deadline: number): Promise<() => void>;
  /** The system answered 429 or 503 with Retry-After: the whole budget waits `forMs`. */
  pause(forMs: number): void;
}

export interface RetryInfo {
  /** The attempt about to be made (2 for the first retry). */
  attempt: number;
  delayMs: number;
  /** The HTTP status being retried; absent for a network error. */
  status?: number | undefined;
}

export interface HttpCall {
  method: string;
  url: string;
  headers: Record<string, string>;
  query: Array<[string, string]>;
  body?: string | JsonValue | undefined;
  retry: boolean;
  /** Headers that carry a credential (system auth, or a value containing one): never sent to another origin by a redirect. */
  credentialHeaders?: string[] | undefined;
  /** Query parameters that carry a credential: removed on a redirect to another origin. */
  credentialQueryParams?: string[] | undefined;
  /** The body carries a credential: not re-sent to another origin by a 307/308 redirect. */
  credentialBody?: boolean | undefined;
  /** The step system's allowedNetworks. */
  allowedNetworks?: string[] | undefined;
  /** Set when the step's system is behind a gateway. */
  gateway?: GatewayRoute | undefined;
}

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  data: JsonValue;
}

/** A step of a protocol that connects to a server (every protocol but HTTP), once templates are rendered. */
export interface ConnectionCall {
  url: string;
  body: unknown;
  credentials: Record<string, string>;
  /** The step's `modify`: false asks the protocol to refuse (or roll back) writes where it can tell them. */
  modify: boolean;
  /** The step system's allowedNetworks. */
  allowedNetworks?: string[] | undefined;
  /** Set when the step's system is behind a gateway: the connection goes through its tunnel. */
  gateway?: GatewayRoute | undefined;
}

/** A connection protocol's step: the call in, the step's data out (already within the protocol's bounds). */
export type ConnectionStep = (call: ConnectionCall, ctx: ProtocolContext) => Promise<JsonValue>;

/**
 * The outbound side of the engine, injected so the engine itself performs no I/O: HTTP, and one function
 * per connection protocol of contract/step-protocols.ts.
 */
export type Protocols = {
  http(call: HttpCall, ctx: ProtocolContext): Promise<HttpReply>;
} & ConnectionSteps;

/** One step function per connection protocol of contract/step-protocols.ts. */
export type ConnectionSteps = { [P in ConnectionProtocol]: ConnectionStep };

/**
 * The connection half of a Protocols, each protocol's step made by `step`: the real one, one that
 * records or one that replays share this one list (a new protocol is a type error here, not a gap).
 */
export function connectionSteps(step: (protocol: ConnectionProtocol) => ConnectionStep): ConnectionSteps {
  return {
    postgres: step('postgres'),
    ftp: step('ftp'),
    sftp: step('sftp'),
    redis: step('redis'),
    mysql: step('mysql'),
    smb: step('smb'),
  };
}

export interface EngineLimits {
  maxLoopItems: number;
  defaultTimeoutMs: number;
  /** Largest data of one step, as UTF-8 JSON (KUBEGLUE_MAX_STEP_DATA_BYTES): above it the step fails. */
  maxStepDataBytes: number;
  /**
   * Largest result of a run, as UTF-8 JSON: its output data (files included) and every step's data
   * together, as they are stored (KUBEGLUE_MAX_RESULT_BYTES). Above it the run fails.
   */
  maxResultBytes: number;
  /**
   * Largest recording of a run (RunOrder.record), as UTF-8 JSON (KUBEGLUE_MAX_RECORDING_BYTES): past it
   * exchanges are left out, and the recording says so; the run goes on.
   */
  maxRecordingBytes: number;
}

/**
 * The engine's own bounds. The data bounds are the role's (KUBEGLUE_MAX_*_BYTES, config/engine.ts, through
 * createEngineDeps); an engine built in code without them does not bound data.
 */
export const DEFAULT_LIMITS: EngineLimits = {
  maxLoopItems: 10_000,
  defaultTimeoutMs: DEFAULT_RUN_TIMEOUT_MS,
  maxStepDataBytes: Number.POSITIVE_INFINITY,
  maxResultBytes: Number.POSITIVE_INFINITY,
  maxRecordingBytes: Number.POSITIVE_INFINITY,
};

/** The evaluations of one run: they may share state the run's other evaluations see, never another run's. */
export interface EvaluationScope {
  evaluate: Evaluate;
  /** The run ended. */
  close(): void;
}

/** Whose run it is, for sharing the sandbox fairly (engine/sandbox/fair-queue.ts). */
export interface ScopeOwner {
  /** The API key (id) that started the run; '' when unknown. */
  key: string;
  tool: string;
}

export interface EngineDeps {
  evaluate: Evaluate;
  /** One scope per run (the sandbox: one context per run); without it every run uses `evaluate`. */
  openScope?: ((owner: ScopeOwner) => EvaluationScope) | undefined;
  protocols: Protocols;
  limits?: Partial<EngineLimits>;
  now?: () => number;
}

/**
 * What runTool executes: the run order (contract/wire/run-order.ts; its runId is the caller's business) and
 * what cannot cross a process boundary.
 */
export type EngineRequest = Omit<RunOrder, 'runId'> & {
  signal: AbortSignal;
  onEvent?: ((event: EngineEvent) => void) | undefined;
  /** Where tokenManaged systems get their access token; without it their steps fail with a clear error. */
  accessToken?: AccessTokenSource | undefined;
  /** Where `<<kubeglue_identity_jwt>>` comes from; without it the steps that send one fail with a clear error. */
  identityToken?: IdentityTokenSource | undefined;
  /** Where systems with a rateLimit take from their budget; without it their requests are not held back. */
  budget?: BudgetSource | undefined;
};

/**
 * A step result with `notes`: things the user should know about a step that did not fail it (credentials
 * withheld from a request to another origin). Optional and additive, so StepResult readers are unaffected.
 */
/** A step's result as the engine reports it (notes included: see StepResult). */
export type EngineStepResult = StepResult;

export type EngineEvent =
  | { type: 'step_started'; stepId: string }
  | { type: 'step_finished'; result: EngineStepResult }
  | { type: 'page_fetched'; stepId: string; page: number; totalFetched: number }
  | ({ type: 'retry'; stepId: string } & RetryInfo)
  /** A traced run's step, loop item or page ended (spans.ts); only when the order carries `trace`. */
  | { type: 'span'; span: EngineSpan }
  /** A request of the step waits for its system's rate budget (`system`: its host, or its id). */
  | { type: 'budget_wait'; stepId: string; system: string; waitMs: number };

export interface ProducedFile {
  fileKey: string;
  filename: string;
  contentType: string;
  size: number;
  contentBase64: string;
}

export interface EngineResult {
  status: 'success' | 'failed' | 'aborted';
  data: JsonValue;
  stepResults: EngineStepResult[];
  error?: string;
  files: ProducedFile[];
  /** What the run changed in its tool's persistent state; only when the order carried a persistedState. */
  state?: RunStateChanges;
  /** Every exchange of the run's request steps, redacted; only when the order asked to record. */
  recording?: Recording;
  /** A try (the order's untilStep) that reached its step: what the next step would receive. */
  until?: { stepId: string; nextStepId?: string; sourceData: JsonObject };
}
