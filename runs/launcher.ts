import type { ToolRunResource } from '../crds/resources.ts';
import type { RunOptions } from '../crds/run.ts';
import type { EngineResult, ResolvedSystem } from '../runner/engine/types.ts';
import type { RunOrder } from '../runner/ipc.ts';
import type { WorkerPool } from '../runner/pool.ts';
import type { Store, StoredRun } from '../store/index.ts';
import { finishFromResult } from './completion.ts';

/** What a launcher needs besides the pool: the run's inputs and credentials, resolved at launch time. */
export interface LaunchContext {
  store: Store;
  pool: WorkerPool;
  executor: string;
  resolveSystems(systemIds: string[], mode: 'dev' | 'prod'): Promise<ResolvedSystem[]>;
  /** Runtime credentials of the run (and their removal once it ran). */
  takeCredentials(runId: string): Promise<RunOrder['runtimeCredentials']>;
  dropCredentials(runId: string): Promise<void>;
  /** Registers the execution for cancellation; returns the unregister function. */
  track(runId: string, controller: AbortController): () => void;
  onFinished?(run: StoredRun, status: string, durationMs: number): void;
}

export interface LaunchOutcome {
  /** false: another executor had it, or it was no longer running. */
  launched: boolean;
  run?: StoredRun;
  result?: EngineResult;
  /** Whether this launch wrote the terminal state (a cancel may have won). */
  recorded?: boolean;
}

/**
 * Executes an admitted ToolRun in the worker pool and records its outcome in the store: the
 * embedded counterpart of the runner Pod. Only one executor can claim a run.
 */
export class PoolLauncher {
  readonly #ctx: LaunchContext;

  constructor(ctx: LaunchContext) {
    this.#ctx = ctx;
  }

  async launch(toolRun: ToolRunResource, signal: AbortSignal): Promise<LaunchOutcome> {
    const { store, pool } = this.#ctx;
    const runId = toolRun.spec.runId;
    const run = await store.claimRunExecution(runId, this.#ctx.executor);
    if (!run) return { launched: false };
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const untrack = this.#ctx.track(runId, controller);
    let result: EngineResult;
    try {
      const systems = await this.#ctx.resolveSystems(run.systemIds, run.executionMode ?? 'prod');
      result = await pool.run(
        {
          runId,
          tool: toolRun.spec.tool,
          inputs: run.toolPayload ?? {},
          systems,
          runtimeCredentials: await this.#ctx.takeCredentials(runId),
          timeoutMs: (run.options as RunOptions | undefined)?.timeout,
          traceId: run.traceId ?? runId,
        },
        { signal: controller.signal },
      );
    } catch (error) {
      // E.g. a system deleted after the run was accepted: the run fails, the process carries on.
      result = { status: 'failed', data: null, stepResults: [], error: (error as Error).message, files: [] };
    } finally {
      untrack();
      signal.removeEventListener('abort', onAbort);
    }
    const finish = finishFromResult(run, result);
    const recorded = await store.batch.finishRun(runId, finish);
    await this.#ctx.dropCredentials(runId);
    if (recorded) this.#ctx.onFinished?.(run, finish.status, finish.durationMs);
    return { launched: true, run, result, recorded };
  }
}
