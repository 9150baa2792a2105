/**
 * runs/: the run lifecycle — accepting a run (idempotency, admission, input validation), sync execution,
 * cancel, chains, completion effects, views, live events, the runtime-credential vault, recovery.
 *
 * May import: contract, config, engine, kube, store, tools, systems.
 */
import { randomUUID } from 'node:crypto';
import {
  KG_ERR_RUN_ID_CONFLICT,
  KG_ERR_RUN_LIMIT,
  KG_ERR_RUN_NOT_CANCELLABLE,
  KG_ERR_RUN_NOT_FOUND,
  KG_ERR_TOOL_ARCHIVED,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_UNSUPPORTED_FIELD,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import type {
  DraftRunRequest,
  ExecutionMode,
  RequestSource,
  Run,
  RunOptions,
  RunRequest,
  RuntimeCredentials,
  StepResult,
  StepRunRequest,
} from '../contract/api/run.ts';
import { stepSystemIds, Tool, type ToolDefinition } from '../contract/api/tool.ts';
import { formatIssues } from '../contract/format-issues.ts';
import type { JsonObject } from '../contract/json.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { EngineEvent, EngineResult, GrantedToken } from '../engine/types.ts';
import type { WorkerPool } from '../engine/worker/pool.ts';
import type { Store, StoredRun } from '../store/index.ts';
import { assertSystemsGranted } from '../systems/grants.ts';
import { CANCELLED_MESSAGE, completionEffects, finishFromResult, inputHash } from './completion.ts';
import { assertInputsMatchSchema } from './input-schema.ts';
import {
  interruptedSteps,
  SHUTDOWN_MESSAGE,
  ShutdownInterrupt,
  stoppedByShutdown,
  syncRunError,
} from './interrupted.ts';
import type { RunEventHub, RunRef } from './run-events.ts';
import { runView, type UrlForFile, withResult } from './run-view.ts';
import type { RuntimeCredentialVault } from './runtime-credentials.ts';
import { checkWebhookUrl } from './webhook-url.ts';

export type { RuntimeCredentialVault } from './runtime-credentials.ts';

export interface ToolLookup {
  get(toolId: string): Promise<Tool | undefined>;
}

export interface SystemResolver {
  resolveForRun(systemIds: string[], mode: ExecutionMode): Promise<ResolvedSystem[]>;
}

export interface RunMetrics {
  runStarted(source: string, mode: string): void;
  runFinished(status: string, source: string, durationMs: number): void;
}

export interface RunServiceDeps {
  store: Store;
  tools: ToolLookup;
  systems: SystemResolver;
  /** Executes sync runs; a process that starts only async runs (the operator's chains) has none. */
  pool?: WorkerPool;
  /** Seals the runtime credentials of async runs (stored with the run row). */
  vault: Pick<RuntimeCredentialVault, 'seal'>;
  urlFor: UrlForFile;
  /**
   * Sync runs this process executes at once (KUBEGLUE_MAX_SYNC_RUNS); more are refused at once with 429
   * rather than held, so a burst cannot pile up requests, worker queue entries and results in memory.
   */
  maxSyncRuns: number;
  /** Identifies this process in `runs.executor`, so a restart can tell its dead runs apart. */
  executor: string;
  metrics?: RunMetrics;
  /** After a cancel was stored: reach the process executing the run wherever it is (runs/cancel.ts). */
  onCancelled?: (run: StoredRun) => Promise<void>;
  /** Live progress for `GET /v1/logs/stream`. */
  events?: Pick<RunEventHub, 'emit'>;
  /**
   * Save-time checks (code compiles, systems exist; KG_ERR_TOOL_INVALID) applied to definitions that run
   * without being saved (`POST /v1/tools/run`, `/v1/tools/step/run`).
   */
  validateTool?: (tool: Tool) => Promise<void>;
  /** The current OAuth access token of a tokenManaged system (systems/oauth/service.ts). */
  accessToken?: (systemId: string, mode: ExecutionMode, rejected?: string) => Promise<GrantedToken>;
}

export interface Caller {
  id: string;
  /** null: every tool. */
  toolIds: string[] | null;
  /** The systems the caller's tools may use; null: every system. */
  systemIds: string[] | null;
}

export interface StartRun {
  toolId: string;
  request: RunRequest;
  caller: Caller;
  traceId: string;
  /** Server-set sources (webhook, tool-chain) override what the client declared. */
  requestSource?: RequestSource;
  forceAsync?: boolean;
  mode?: ExecutionMode;
  parentRunId?: string;
}

export interface StartedRun {
  statusCode: 200 | 202;
  run: Run;
}

/** A tool definition run without saving it (`POST /v1/tools/run`). */
export interface StartDraftRun {
  definition: ToolDefinition;
  request: DraftRunRequest;
  /** Record the run (GET /v1/runs, files, cancel); without it nothing is stored. */
  createRun: boolean;
  caller: Caller;
  traceId: string;
  /** Aborts an unrecorded run (the client went away: nobody could see its outcome). */
  signal?: AbortSignal;
}

/** One step run with a payload and earlier results (`POST /v1/tools/step/run`). */
export interface StartStepRun {
  request: StepRunRequest;
  caller: Caller;
  traceId: string;
  signal?: AbortSignal;
}

export interface StepRunOutcome {
  stepId: string;
  success: boolean;
  data?: Run['data'];
  error?: string;
  notes?: string[];
  runId: string;
}

/** What one launch needs, whichever route started it. */
interface Launch {
  tool: Tool;
  request: RunRequest;
  caller: Caller;
  traceId: string;
  async: boolean;
  /** false: the run is executed but not stored (no record, no files, no completion effects). */
  record: boolean;
  /** A definition that was not saved gets the save-time checks first. */
  validate?: boolean;
  requestSource?: RequestSource | undefined;
  mode?: ExecutionMode | undefined;
  parentRunId?: string | undefined;
  signal?: AbortSignal | undefined;
}

interface StepTiming {
  startedAt: string;
  started: number;
  durationMs?: number;
}

function refOf(run: Pick<StoredRun, 'runId' | 'toolId' | 'traceId'>): RunRef {
  return { runId: run.runId, toolId: run.toolId, traceId: run.traceId ?? run.runId };
}

/**
 * Fields superglue's clients send for features kubeglue does not have: accepted when empty (their
 * clients send them that way), refused when they would change what the run does.
 */
export function refuseUnsupportedFields(request: {
  files?: Record<string, unknown> | undefined;
  stateFixture?: Record<string, unknown> | undefined;
  options?:
    | {
        pinnedCredentials?: Record<string, string> | undefined;
        credentialsList?: Record<string, string> | undefined;
      }
    | undefined;
}): void {
  const given = (value: Record<string, unknown> | undefined) =>
    value !== undefined && Object.keys(value).length > 0;
  if (given(request.files)) {
    throw KG_ERR_UNSUPPORTED_FIELD(
      'files',
      'kubeglue has no file inputs; put the file content in the inputs',
    );
  }
  if (given(request.stateFixture)) {
    throw KG_ERR_UNSUPPORTED_FIELD(
      'stateFixture',
      'kubeglue has no persistent tool state; pass the values in the inputs',
    );
  }
  for (const field of ['pinnedCredentials', 'credentialsList'] as const) {
    if (given(request.options?.[field])) {
      throw KG_ERR_UNSUPPORTED_FIELD(
        `options.${field}`,
        "kubeglue has no credential sets: a run uses its systems' stored credentials for its mode " +
          '(options.mode), overridden by runtime credentials',
      );
    }
  }
}

/** Step results without data: stepId, success, error, notes, and the timing measured here (if any). */
export function stepResultsWithoutData(
  results: readonly StepResult[],
  timings?: ReadonlyMap<string, StepTiming>,
): StepResult[] {
  return results.map(({ data: _data, ...rest }) => {
    const timing = timings?.get(rest.stepId);
    return {
      ...rest,
      ...(timing ? { startedAt: timing.startedAt } : {}),
      ...(timing?.durationMs !== undefined ? { durationMs: timing.durationMs } : {}),
    };
  });
}

/** A sync run's result once a shutdown stopped it: failed, with the steps that finished. */
function shutDownSyncResult(result: EngineResult): EngineResult {
  return {
    ...result,
    status: 'failed',
    data: null,
    error: syncRunError(SHUTDOWN_MESSAGE),
    stepResults: interruptedSteps(result.stepResults),
  };
}

/** Starts, cancels and reads runs; the one place the /v1 run endpoints, webhooks and chains go through. */
export class RunService {
  readonly #deps: RunServiceDeps;
  /** Runs executing in this process, for cancellation. */
  readonly #running = new Map<string, AbortController>();
  /** Sync runs accepted by this process and not answered yet. */
  #syncRuns = 0;

  constructor(deps: RunServiceDeps) {
    this.#deps = deps;
  }

  canSee(caller: Caller, toolId: string): boolean {
    return caller.toolIds === null || caller.toolIds.includes(toolId);
  }

  async start(input: StartRun): Promise<StartedRun> {
    refuseUnsupportedFields(input.request);
    const async = input.forceAsync === true || input.request.options?.async === true;
    return this.#admitted(async, async () => {
      const { caller } = input;
      // Decided before the lookup: a tool the key may not use answers exactly like a missing one.
      if (!this.canSee(caller, input.toolId)) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
      const tool = await this.#deps.tools.get(input.toolId);
      if (!tool) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
      if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);
      return this.#launch({
        tool,
        request: input.request,
        caller,
        traceId: input.traceId,
        async,
        record: true,
        requestSource: input.requestSource,
        mode: input.mode,
        parentRunId: input.parentRunId,
      });
    });
  }

  /**
   * Runs a definition that is not saved, with the same checks as saving it (schema, code, systems) and
   * the same limits, sandbox and egress rules as a saved tool. Unrecorded runs are synchronous and have
   * no completion effects (nothing would hold their outcome).
   */
  async startDraft(input: StartDraftRun): Promise<StartedRun> {
    const { request } = input;
    refuseUnsupportedFields(request);
    const async = request.options?.async === true;
    if (!input.createRun && (async || request.options?.webhookUrl !== undefined)) {
      throw KG_ERR_VALIDATION(
        'run request',
        `options.${async ? 'async' : 'webhookUrl'}: an unsaved run that is not recorded has nobody to ` +
          'report to; add ?createRun=true',
      );
    }
    const { systemIds: _systemIds, ...definition } = input.definition;
    const tool = this.#definition(definition);
    const {
      payload,
      inputs,
      tool: _tool,
      executionKind: _k,
      parentToolId: _p,
      draftId: _d,
      ...rest
    } = request;
    return this.#admitted(async, () =>
      this.#launch({
        tool,
        request: { ...rest, inputs: payload ?? inputs ?? {} },
        caller: input.caller,
        traceId: input.traceId,
        async,
        record: input.createRun,
        validate: true,
        signal: input.signal,
      }),
    );
  }

  /** Runs one step as a one-step tool; sourceData holds the payload and the earlier results by step id. */
  async runStep(input: StartStepRun): Promise<StepRunOutcome> {
    const { request } = input;
    refuseUnsupportedFields({ files: request.files });
    const tool = this.#definition({ id: request.parentToolId ?? request.step.id, steps: [request.step] });
    const started = await this.#admitted(false, () =>
      this.#launch({
        tool,
        request: {
          ...(request.runId ? { runId: request.runId } : {}),
          inputs: { ...request.payload, ...request.previousResults },
          ...(request.credentials ? { credentials: request.credentials } : {}),
          ...(request.options?.timeout !== undefined
            ? { options: { timeout: request.options.timeout } }
            : {}),
        },
        caller: input.caller,
        traceId: input.traceId,
        async: false,
        record: request.createRun === true,
        validate: true,
        signal: input.signal,
      }),
    );
    const { run } = started;
    const result = run.stepResults?.find((step) => step.stepId === request.step.id);
    if (!result) {
      return {
        stepId: request.step.id,
        success: false,
        error: run.error ?? 'The step did not run',
        runId: run.runId,
      };
    }
    return {
      stepId: result.stepId,
      success: result.success,
      ...(result.data !== undefined ? { data: result.data } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
      ...(result.notes?.length ? { notes: result.notes } : {}),
      runId: run.runId,
    };
  }

  /** A definition as the engine runs it (the tool schema; the save-time checks come at launch). */
  #definition(input: unknown): Tool {
    const parsed = Tool.safeParse(input);
    if (!parsed.success) throw KG_ERR_VALIDATION('tool', formatIssues(parsed.error));
    return parsed.data;
  }

  /** Sync runs are bounded per process (KUBEGLUE_MAX_SYNC_RUNS); more are refused at once. */
  async #admitted(async: boolean, start: () => Promise<StartedRun>): Promise<StartedRun> {
    if (async) return start();
    if (this.#syncRuns >= this.#deps.maxSyncRuns) throw KG_ERR_RUN_LIMIT(this.#deps.maxSyncRuns);
    this.#syncRuns++;
    try {
      return await start();
    } finally {
      this.#syncRuns--;
    }
  }

  async #launch(input: Launch): Promise<StartedRun> {
    const { store } = this.#deps;
    const { caller, tool, async } = input;
    // First: a definition's unknown system must answer like a known one the key may not use.
    assertSystemsGranted(caller.systemIds, tool.steps);
    if (input.validate) await this.#deps.validateTool?.(tool);
    const {
      pinnedCredentials: _pinned,
      credentialsList: _list,
      clientInfo: _client,
      ...given
    } = input.request.options ?? {};
    checkWebhookUrl(given.webhookUrl, (toolId) => this.canSee(caller, toolId));
    const mode: ExecutionMode = input.mode ?? given.mode ?? 'prod';
    const requestSource: RequestSource = input.requestSource ?? given.requestSource ?? 'api';
    const traceId = given.traceId ?? input.traceId;
    const options: RunOptions = { ...given, async, mode, requestSource, traceId };
    const inputs: JsonObject = input.request.inputs ?? {};
    assertInputsMatchSchema(tool, inputs);
    const runId = input.request.runId ?? randomUUID();
    const systemIds = stepSystemIds(tool.steps);
    // Resolved before anything is stored: an unknown system is the caller's error, not a failed run.
    const systems = await this.#deps.systems.resolveForRun(systemIds, mode);

    const run: StoredRun = {
      runId,
      toolId: tool.id,
      status: 'running',
      requestSource,
      userId: caller.id,
      // Travels with the run: its chain is checked against it, and a chained run inherits it.
      ...(caller.toolIds !== null ? { allowedToolIds: [...caller.toolIds] } : {}),
      ...(caller.systemIds !== null ? { allowedSystemIds: [...caller.systemIds] } : {}),
      systemIds,
      executionMode: mode,
      traceId,
      ...(input.parentRunId ? { parentRunId: input.parentRunId } : {}),
      tool: tool as unknown as JsonObject,
      toolPayload: inputs,
      options: options as JsonObject,
      ...(async ? {} : { executor: this.#deps.executor }),
      metadata: { startedAt: new Date().toISOString() },
    };

    if (async) {
      const credentials = input.request.credentials;
      // Stored by the run's own insert, and only if that insert stores the run: a repeated or conflicting
      // request, or one losing a race for the same new run id, never writes credentials.
      const sealed =
        credentials && Object.keys(credentials).length > 0
          ? this.#deps.vault.seal(runId, credentials)
          : undefined;
      const inserted = await store.batch.insertRun(run, {
        inputHash: inputHash(tool.id, inputs),
        outbox: [{ kind: 'start', runId, payload: {} }],
        ...(sealed ? { sealedCredentials: sealed } : {}),
      });
      if (inserted.status === 'conflict') throw KG_ERR_RUN_ID_CONFLICT(runId);
      if (inserted.status === 'inserted') {
        this.#deps.metrics?.runStarted(requestSource, mode);
        this.#deps.events?.emit(refOf(run), { type: 'run_started' });
      }
      return { statusCode: 202, run: runView(inserted.run, { urlFor: this.#deps.urlFor }) };
    }

    const withData = input.request.includeStepResultData !== false;
    let startWrite: Promise<void> | undefined;
    if (input.record) {
      const insert = store.batch.insertRun(run, { inputHash: inputHash(tool.id, inputs) });
      if (input.request.runId !== undefined) {
        // A client-chosen id may repeat an earlier request or conflict with another run: decided first.
        const inserted = await insert;
        if (inserted.status === 'conflict') throw KG_ERR_RUN_ID_CONFLICT(runId);
        if (inserted.status === 'existing') return this.#existing(inserted.run, withData);
      } else {
        // A new random id can do neither: the start record is written while the run executes, and
        // the terminal write waits for it (#executeSync), so it is never overtaken.
        startWrite = insert.then((inserted) => {
          if (inserted.status !== 'inserted') throw KG_ERR_RUN_ID_CONFLICT(runId);
        });
      }
    }
    this.#deps.metrics?.runStarted(requestSource, mode);
    this.#deps.events?.emit(refOf(run), { type: 'run_started' });
    return this.#executeSync(run, tool, systems, input.request.credentials, {
      record: input.record,
      startWrite,
      withData,
      signal: input.signal,
    });
  }

  /** A repeated request with the same runId, tool and inputs: the run as it is now. */
  async #existing(stored: StoredRun, withData: boolean): Promise<StartedRun> {
    const view = runView(stored, { urlFor: this.#deps.urlFor });
    if (stored.status === 'running') return { statusCode: 202, run: view };
    const result = await this.#deps.store.getRunResult(stored.runId);
    if (!result) return { statusCode: 200, run: view };
    const steps = withData ? result.stepResults : stepResultsWithoutData(result.stepResults);
    return { statusCode: 200, run: withResult(view, result.data, steps) };
  }

  async #executeSync(
    run: StoredRun,
    tool: Tool,
    systems: ResolvedSystem[],
    credentials: RuntimeCredentials | undefined,
    opts: {
      record: boolean;
      /** The start record, still being written: awaited before the terminal write. */
      startWrite?: Promise<void> | undefined;
      withData: boolean;
      signal?: AbortSignal | undefined;
    },
  ): Promise<StartedRun> {
    const controller = new AbortController();
    const abort = () => controller.abort();
    // A run whose start record could not be stored stops: its outcome could not be stored either.
    opts.startWrite?.catch(abort);
    // Only an unrecorded run stops with its client: a recorded one must reach its stored outcome.
    if (!opts.record) {
      if (opts.signal?.aborted) controller.abort();
      opts.signal?.addEventListener('abort', abort, { once: true });
    }
    this.#running.set(run.runId, controller);
    const pool = this.#deps.pool;
    if (!pool) throw new Error('this process executes no sync runs (no worker pool)');
    const ref = refOf(run);
    const events = this.#deps.events;
    const timings = new Map<string, StepTiming>();
    const onEvent = (event: EngineEvent) => {
      if (event.type === 'step_started') {
        const started = Date.now();
        timings.set(event.stepId, { startedAt: new Date(started).toISOString(), started });
      } else if (event.type === 'step_finished') {
        const timing = timings.get(event.result.stepId);
        if (timing) timing.durationMs = Date.now() - timing.started;
      }
      events?.emit(ref, event);
    };
    let result: EngineResult;
    try {
      result = await pool.run(
        {
          runId: run.runId,
          keyId: run.userId,
          tool,
          inputs: run.toolPayload ?? {},
          systems,
          runtimeCredentials: credentials,
          timeoutMs: (run.options as RunOptions | undefined)?.timeout,
          traceId: run.traceId ?? run.runId,
        },
        {
          signal: controller.signal,
          onEvent,
          progressOnly: true,
          ...(this.#deps.accessToken ? { accessToken: this.#tokenSource(run) } : {}),
        },
      );
    } finally {
      this.#running.delete(run.runId);
      opts.signal?.removeEventListener('abort', abort);
    }
    // Stopped because this process shuts down, not by a cancel: the caller is answered now, so the run is
    // not executed again (runs/interrupted.ts); it fails saying why.
    if (result.status === 'aborted' && stoppedByShutdown(controller.signal)) {
      result = shutDownSyncResult(result);
    }
    // Throws (the request fails) when the start record could not be stored.
    await opts.startWrite;
    const finish = finishFromResult(run, result);
    const won = opts.record ? await this.#deps.store.batch.finishRun(run.runId, finish) : true;
    if (!won) {
      // Cancelled (or failed by recovery) while it ran: the stored outcome stands.
      const stored = await this.#deps.store.getRun(run.runId);
      if (stored && stored.status !== 'running') {
        events?.emit(ref, {
          type: 'run_finished',
          status: stored.status,
          ...(stored.error !== undefined ? { error: stored.error } : {}),
          ...(stored.metadata.durationMs !== undefined ? { durationMs: stored.metadata.durationMs } : {}),
        });
      }
      return { statusCode: 200, run: runView(stored ?? run, { urlFor: this.#deps.urlFor }) };
    }
    this.#deps.metrics?.runFinished(finish.status, run.requestSource, finish.durationMs);
    events?.emit(ref, {
      type: 'run_finished',
      status: finish.status,
      ...(finish.error !== undefined ? { error: finish.error } : {}),
      durationMs: finish.durationMs,
    });
    const finished: StoredRun = {
      ...run,
      status: finish.status,
      ...(finish.error !== undefined ? { error: finish.error } : {}),
      metadata: { ...run.metadata, completedAt: finish.completedAt, durationMs: finish.durationMs },
      ...(result.files.length
        ? {
            fileArtifacts: result.files.map((f) => ({
              fileKey: f.fileKey,
              filename: f.filename,
              contentType: f.contentType,
              size: f.size,
            })),
          }
        : {}),
    };
    // Files of an unrecorded run are not kept: no link could serve them.
    const view = runView(finished, opts.record ? { urlFor: this.#deps.urlFor } : {});
    const steps = opts.withData ? result.stepResults : stepResultsWithoutData(result.stepResults, timings);
    return { statusCode: 200, run: withResult(view, result.data, steps) };
  }

  #tokenSource(run: StoredRun) {
    const source = this.#deps.accessToken;
    const mode = run.executionMode ?? 'prod';
    return (systemId: string, rejected?: string) => {
      if (!source) return Promise.reject(new Error('no OAuth token source'));
      return source(systemId, mode, rejected);
    };
  }

  /**
   * Shutdown after the grace period: every run still executing here is stopped. Not a cancel: a sync run
   * fails saying the server shut down, and the pool launcher hands read-only async runs back.
   */
  interruptAll(): void {
    const reason = new ShutdownInterrupt();
    for (const controller of this.#running.values()) controller.abort(reason);
  }

  /**
   * Starts a chained run (outbox `chain`) as the parent's key would: same user, same tool and system
   * restrictions, so a chain never runs with more rights than the request that started it (a chained tool
   * using a system the key may not use is refused here, before any step runs).
   */
  async startChained(input: {
    runId: string;
    toolId: string;
    inputs: JsonObject;
    parent: StoredRun;
  }): Promise<StartedRun> {
    const { parent } = input;
    return this.start({
      toolId: input.toolId,
      request: { runId: input.runId, inputs: input.inputs },
      caller: {
        id: parent.userId ?? 'tool-chain',
        toolIds: parent.allowedToolIds ?? null,
        systemIds: parent.allowedSystemIds ?? null,
      },
      traceId: parent.traceId ?? parent.runId,
      requestSource: 'tool-chain',
      forceAsync: true,
      mode: parent.executionMode ?? 'prod',
      parentRunId: parent.runId,
    });
  }

  /** A chain the guard refused, kept as a failed tool-chain run so users can see why it did not start. */
  async recordRefusedChain(input: {
    runId: string;
    toolId: string;
    parent: StoredRun;
    reason: string;
  }): Promise<void> {
    const now = new Date().toISOString();
    await this.#deps.store.insertRun(
      {
        runId: input.runId,
        toolId: input.toolId,
        status: 'failed',
        error: input.reason,
        requestSource: 'tool-chain',
        ...(input.parent.userId ? { userId: input.parent.userId } : {}),
        ...(input.parent.allowedToolIds ? { allowedToolIds: input.parent.allowedToolIds } : {}),
        ...(input.parent.allowedSystemIds ? { allowedSystemIds: input.parent.allowedSystemIds } : {}),
        systemIds: [],
        executionMode: input.parent.executionMode ?? 'prod',
        ...(input.parent.traceId ? { traceId: input.parent.traceId } : {}),
        parentRunId: input.parent.runId,
        metadata: { startedAt: now, completedAt: now, durationMs: 0 },
      },
      { inputHash: inputHash(input.toolId, {}) },
    );
  }

  /** Registers an execution in this process so cancel can reach it (used by the async launcher). */
  track(runId: string, controller: AbortController): () => void {
    this.#running.set(runId, controller);
    return () => this.#running.delete(runId);
  }

  async get(runId: string, caller: Caller): Promise<StoredRun> {
    const run = await this.#deps.store.getRun(runId);
    // A key limited to other tools learns nothing about the run, not even that it exists.
    if (!run || !this.canSee(caller, run.toolId)) throw KG_ERR_RUN_NOT_FOUND(runId);
    return run;
  }

  async cancel(runId: string, caller: Caller): Promise<Run> {
    const run = await this.get(runId, caller);
    if (run.status === 'success' || run.status === 'failed')
      throw KG_ERR_RUN_NOT_CANCELLABLE(runId, run.status);
    const urlFor = this.#deps.urlFor;
    if (run.status === 'aborted') return runView(run, { urlFor });
    const aborted = await this.#deps.store.transaction(async (tx) => {
      const updated = await tx.abortRun(runId, {
        error: CANCELLED_MESSAGE,
        completedAt: new Date().toISOString(),
      });
      if (updated) {
        await tx.enqueueOutbox(completionEffects(updated, 'aborted'));
        // A queued run that is cancelled never starts: its runtime credentials have no use left.
        await tx.deleteRunCredentials(runId);
      }
      return updated;
    });
    if (!aborted) return this.cancel(runId, caller);
    this.abortLocal(runId);
    this.#deps.metrics?.runFinished('aborted', aborted.requestSource, aborted.metadata.durationMs ?? 0);
    this.#deps.events?.emit(refOf(aborted), {
      type: 'run_finished',
      status: 'aborted',
      error: CANCELLED_MESSAGE,
      ...(aborted.metadata.durationMs !== undefined ? { durationMs: aborted.metadata.durationMs } : {}),
    });
    // The store already says aborted; telling the executor elsewhere is best effort (its own checks
    // of the stored status, the runner's heartbeat and the operator's resync catch a lost message).
    await this.#deps.onCancelled?.(aborted).catch(() => {});
    return runView(aborted, { urlFor });
  }

  /** Aborts the execution of runId in this process, if it runs here; whether it did. */
  abortLocal(runId: string): boolean {
    const controller = this.#running.get(runId);
    controller?.abort();
    return controller !== undefined;
  }
}
