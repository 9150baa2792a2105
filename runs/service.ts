import { randomUUID } from 'node:crypto';
import type { JsonObject } from '../crds/json.ts';
import type {
  ExecutionMode,
  RequestSource,
  Run,
  RunOptions,
  RunRequest,
  RuntimeCredentials,
} from '../crds/run.ts';
import type { Tool } from '../crds/tool.ts';
import type { ResolvedSystem } from '../runner/engine/types.ts';
import type { WorkerPool } from '../runner/pool.ts';
import type { Store, StoredRun } from '../store/index.ts';
import { CANCELLED_MESSAGE, completionEffects, finishFromResult, inputHash } from './completion.ts';
import {
  KG_ERR_RUN_ID_CONFLICT,
  KG_ERR_RUN_LIMIT,
  KG_ERR_RUN_NOT_CANCELLABLE,
  KG_ERR_RUN_NOT_FOUND,
  KG_ERR_TOOL_ARCHIVED,
  KG_ERR_TOOL_NOT_FOUND,
} from './errors.ts';
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
  /** After a cancel was stored: reach the process executing the run wherever it is (api/cancel.ts). */
  onCancelled?: (run: StoredRun) => Promise<void>;
}

export interface Caller {
  id: string;
  /** null: every tool. */
  toolIds: string[] | null;
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

function systemIdsOf(tool: Tool): string[] {
  const ids = new Set<string>();
  for (const step of tool.steps)
    if (step.config.type === 'request' && step.config.systemId) ids.add(step.config.systemId);
  return [...ids];
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
    const given = input.request.options ?? {};
    const async = input.forceAsync === true || given.async === true;
    if (async) return this.#start(input, true);
    if (this.#syncRuns >= this.#deps.maxSyncRuns) throw KG_ERR_RUN_LIMIT(this.#deps.maxSyncRuns);
    this.#syncRuns++;
    try {
      return await this.#start(input, false);
    } finally {
      this.#syncRuns--;
    }
  }

  async #start(input: StartRun, async: boolean): Promise<StartedRun> {
    const { store, tools } = this.#deps;
    const { caller } = input;
    // Decided before the lookup: a tool the key may not use answers exactly like a missing one.
    if (!this.canSee(caller, input.toolId)) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
    const tool = await tools.get(input.toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
    if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);

    const given = input.request.options ?? {};
    checkWebhookUrl(given.webhookUrl, (toolId) => this.canSee(caller, toolId));
    const mode: ExecutionMode = input.mode ?? given.mode ?? 'prod';
    const requestSource: RequestSource = input.requestSource ?? given.requestSource ?? 'api';
    const traceId = given.traceId ?? input.traceId;
    const options: RunOptions = { ...given, async, mode, requestSource, traceId };
    const inputs: JsonObject = input.request.inputs ?? {};
    const runId = input.request.runId ?? randomUUID();
    const systemIds = systemIdsOf(tool);
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
      if (inserted.status === 'inserted') this.#deps.metrics?.runStarted(requestSource, mode);
      return { statusCode: 202, run: runView(inserted.run, { urlFor: this.#deps.urlFor }) };
    }

    const inserted = await store.batch.insertRun(run, { inputHash: inputHash(tool.id, inputs) });
    if (inserted.status === 'conflict') throw KG_ERR_RUN_ID_CONFLICT(runId);
    if (inserted.status === 'existing') return this.#existing(inserted.run);
    this.#deps.metrics?.runStarted(requestSource, mode);
    return this.#executeSync(run, tool, systems, input.request.credentials);
  }

  /** A repeated request with the same runId, tool and inputs: the run as it is now. */
  async #existing(stored: StoredRun): Promise<StartedRun> {
    const view = runView(stored, { urlFor: this.#deps.urlFor });
    if (stored.status === 'running') return { statusCode: 202, run: view };
    const result = await this.#deps.store.getRunResult(stored.runId);
    return { statusCode: 200, run: result ? withResult(view, result.data, result.stepResults) : view };
  }

  async #executeSync(
    run: StoredRun,
    tool: Tool,
    systems: ResolvedSystem[],
    credentials: RuntimeCredentials | undefined,
  ): Promise<StartedRun> {
    const controller = new AbortController();
    this.#running.set(run.runId, controller);
    const pool = this.#deps.pool;
    if (!pool) throw new Error('this process executes no sync runs (no worker pool)');
    let result: Awaited<ReturnType<WorkerPool['run']>>;
    try {
      result = await pool.run(
        {
          runId: run.runId,
          tool,
          inputs: run.toolPayload ?? {},
          systems,
          runtimeCredentials: credentials,
          timeoutMs: (run.options as RunOptions | undefined)?.timeout,
          traceId: run.traceId ?? run.runId,
        },
        { signal: controller.signal },
      );
    } finally {
      this.#running.delete(run.runId);
    }
    const finish = finishFromResult(run, result);
    const won = await this.#deps.store.batch.finishRun(run.runId, finish);
    if (!won) {
      // Cancelled (or failed by recovery) while it ran: the stored outcome stands.
      const stored = await this.#deps.store.getRun(run.runId);
      return { statusCode: 200, run: runView(stored ?? run, { urlFor: this.#deps.urlFor }) };
    }
    this.#deps.metrics?.runFinished(finish.status, run.requestSource, finish.durationMs);
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
    const view = runView(finished, { urlFor: this.#deps.urlFor });
    return { statusCode: 200, run: withResult(view, result.data, result.stepResults) };
  }

  /** Shutdown after the grace period: every run still executing here ends as aborted. */
  abortAll(): void {
    for (const controller of this.#running.values()) controller.abort();
  }

  /**
   * Starts a chained run (outbox `chain`) as the parent's key would: same user, same restriction, so a chain
   * never runs with more rights than the request that started it.
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
      caller: { id: parent.userId ?? 'tool-chain', toolIds: parent.allowedToolIds ?? null },
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
