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
import { ApiError, badRequest, conflict, notFound } from './errors.ts';
import { runView, type UrlForFile, withResult } from './run-view.ts';

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

/** Where runtime credentials of queued async runs wait, encrypted, until the run starts. */
export interface RuntimeCredentialVault {
  put(name: string, data: Record<string, string>): Promise<void>;
  get(name: string): Promise<Record<string, string> | undefined>;
  delete(name: string): Promise<void>;
}

export interface RunServiceDeps {
  store: Store;
  tools: ToolLookup;
  systems: SystemResolver;
  pool: WorkerPool;
  vault: RuntimeCredentialVault;
  urlFor: UrlForFile;
  /** Identifies this process in `runs.executor`, so a restart can tell its dead runs apart. */
  executor: string;
  metrics?: RunMetrics;
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

/** Runtime credentials of a queued async run are kept in a Secret of this name, deleted once it ran. */
export function runtimeCredentialName(runId: string): string {
  return `run-${runId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-credentials`;
}

function flatten(credentials: RuntimeCredentials): Record<string, string> {
  // Grouped credentials travel as JSON strings under their group name and are restored on read.
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(credentials))
    out[key] = typeof value === 'string' ? value : JSON.stringify(value);
  return out;
}

export function unflattenCredentials(data: Record<string, string>): RuntimeCredentials {
  const out: RuntimeCredentials = {};
  for (const [key, value] of Object.entries(data)) {
    if (value.startsWith('{')) {
      try {
        out[key] = JSON.parse(value) as Record<string, string>;
        continue;
      } catch {
        // a plain string that happens to start with a brace
      }
    }
    out[key] = value;
  }
  return out;
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

  constructor(deps: RunServiceDeps) {
    this.#deps = deps;
  }

  canSee(caller: Caller, toolId: string): boolean {
    return caller.toolIds === null || caller.toolIds.includes(toolId);
  }

  async start(input: StartRun): Promise<StartedRun> {
    const { store, tools } = this.#deps;
    const tool = await tools.get(input.toolId);
    if (!tool) throw notFound(`Tool '${input.toolId}'`);
    if (!this.canSee(input.caller, tool.id)) {
      throw new ApiError(403, `This API key is not allowed to use tool '${tool.id}'`);
    }
    if (tool.archived) throw badRequest(`Tool '${tool.id}' is archived and cannot be run`);

    const given = input.request.options ?? {};
    const mode: ExecutionMode = input.mode ?? given.mode ?? 'prod';
    const requestSource: RequestSource = input.requestSource ?? given.requestSource ?? 'api';
    const traceId = given.traceId ?? input.traceId;
    const async = input.forceAsync === true || given.async === true;
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
      userId: input.caller.id,
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
      // A repeated or conflicting request must not replace the credentials of the run it names.
      const taken = input.request.runId !== undefined && (await store.getRun(runId)) !== undefined;
      if (!taken && credentials && Object.keys(credentials).length > 0) {
        await this.#deps.vault.put(runtimeCredentialName(runId), flatten(credentials));
      }
      const inserted = await store.batch.insertRun(run, {
        inputHash: inputHash(tool.id, inputs),
        outbox: [{ kind: 'start', runId, payload: {} }],
      });
      if (inserted.status === 'conflict')
        throw conflict(`Run id '${runId}' is already used by another tool or other inputs`);
      if (inserted.status === 'inserted') this.#deps.metrics?.runStarted(requestSource, mode);
      return { statusCode: 202, run: runView(inserted.run, { urlFor: this.#deps.urlFor }) };
    }

    const inserted = await store.batch.insertRun(run, { inputHash: inputHash(tool.id, inputs) });
    if (inserted.status === 'conflict')
      throw conflict(`Run id '${runId}' is already used by another tool or other inputs`);
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
    let result: Awaited<ReturnType<WorkerPool['run']>>;
    try {
      result = await this.#deps.pool.run(
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
    if (!run || !this.canSee(caller, run.toolId)) throw notFound(`Run '${runId}'`);
    return run;
  }

  async cancel(runId: string, caller: Caller): Promise<Run> {
    const run = await this.get(runId, caller);
    if (run.status === 'success' || run.status === 'failed') {
      throw badRequest(
        `Run '${runId}' already ${run.status === 'success' ? 'succeeded' : 'failed'}; only running runs can be cancelled`,
      );
    }
    const urlFor = this.#deps.urlFor;
    if (run.status === 'aborted') return runView(run, { urlFor });
    const aborted = await this.#deps.store.transaction(async (tx) => {
      const updated = await tx.abortRun(runId, {
        error: CANCELLED_MESSAGE,
        completedAt: new Date().toISOString(),
      });
      if (updated) await tx.enqueueOutbox(completionEffects(updated, 'aborted'));
      return updated;
    });
    if (!aborted) return this.cancel(runId, caller);
    this.#running.get(runId)?.abort();
    this.#deps.metrics?.runFinished('aborted', aborted.requestSource, aborted.metadata.durationMs ?? 0);
    return runView(aborted, { urlFor });
  }
}
