import type { ToolRunResource } from '../crds/resources.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import { isResourceError } from '../kube/resources/index.ts';
import { WorkQueue } from '../kube/work-queue.ts';
import type { PoolLauncher } from '../runs/launcher.ts';
import { RECORDED_FINALIZER } from '../runs/toolruns.ts';
import type { Store } from '../store/index.ts';

export interface ToolRunControllerOptions {
  resources: KubeglueResources;
  store: Store;
  launcher: PoolLauncher;
  /** Async runs executing at once; more wait, admitted in arrival order as slots free. */
  maxConcurrent: number;
  /** ToolRuns are deleted this long after they finished (the run record stays in the store). */
  retentionMs: number;
  log?: (line: string) => void;
}

const TERMINAL = new Set(['success', 'failed', 'aborted']);

function condition(type: string, status: 'True' | 'False', reason: string, message: string) {
  return { type, status, reason, message, lastTransitionTime: new Date().toISOString() };
}

/**
 * Admits ToolRuns (bounded concurrency), launches them, mirrors the outcome into their status,
 * releases the finalizer once the store holds the terminal state, and deletes them after retention.
 */
export class ToolRunController {
  readonly #opts: ToolRunControllerOptions;
  readonly #informer: Informer<ToolRunResource>;
  readonly #queue: WorkQueue;
  readonly #active = new Map<string, AbortController>();
  readonly #executions = new Set<Promise<void>>();
  readonly #waiting: string[] = [];
  #sweep: NodeJS.Timeout | undefined;

  constructor(opts: ToolRunControllerOptions) {
    this.#opts = opts;
    this.#informer = new Informer(opts.resources.toolRuns, { ...(opts.log ? { log: opts.log } : {}) });
    this.#queue = new WorkQueue(
      (name) => this.#reconcile(name),
      (name, error) => opts.log?.(`toolrun ${name}: reconcile failed: ${(error as Error).message}`),
    );
  }

  async start(): Promise<void> {
    this.#informer.onEvent((_type, object) => this.#queue.add(object.metadata.name));
    await this.#informer.start();
    for (const object of this.#informer.values()) this.#queue.add(object.metadata.name);
    this.#sweep = setInterval(() => this.#sweepRetention(), Math.min(60_000, this.#opts.retentionMs)).unref();
  }

  /** Aborts the runs executing here and waits until each has recorded its outcome. */
  async stop(): Promise<void> {
    clearInterval(this.#sweep);
    for (const controller of this.#active.values()) controller.abort();
    await Promise.allSettled([...this.#executions]);
    await this.#informer.stop();
  }

  /** Resolves when no reconcile is queued or running (tests). */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  async #reconcile(name: string): Promise<void> {
    const toolRun = this.#informer.get(name);
    if (!toolRun) return;
    const phase = toolRun.status?.status;
    if (toolRun.metadata.deletionTimestamp || toolRun.spec.cancel) this.#active.get(name)?.abort();
    if (this.#active.has(name)) return;
    if (phase && TERMINAL.has(phase)) return this.#release(toolRun);
    if (toolRun.metadata.deletionTimestamp) return this.#settleFromStore(toolRun);
    if (phase === 'running') return this.#settleFromStore(toolRun);
    if (this.#active.size >= this.#opts.maxConcurrent) {
      if (!this.#waiting.includes(name)) this.#waiting.push(name);
      return;
    }
    await this.#admit(toolRun);
  }

  async #admit(toolRun: ToolRunResource): Promise<void> {
    const name = toolRun.metadata.name;
    const admitted = await this.#opts.resources.toolRuns.patchStatus(name, {
      status: 'running',
      startedAt: new Date().toISOString(),
      conditions: [condition('Admitted', 'True', 'SlotAvailable', 'The run was admitted for execution')],
      observedGeneration: toolRun.metadata.generation ?? 1,
    });
    const controller = new AbortController();
    this.#active.set(name, controller);
    const execution = this.#execute(admitted, controller).finally(() => {
      this.#executions.delete(execution);
      this.#active.delete(name);
      const next = this.#waiting.shift();
      if (next) this.#queue.add(next);
      this.#queue.add(name);
    });
    this.#executions.add(execution);
  }

  async #execute(toolRun: ToolRunResource, controller: AbortController): Promise<void> {
    const outcome = await this.#opts.launcher.launch(toolRun, controller.signal);
    if (!outcome.launched) return;
    await this.#settleFromStore(toolRun);
  }

  /** Copies the store's state of the run into the ToolRun's status (never payload data). */
  async #settleFromStore(toolRun: ToolRunResource): Promise<void> {
    const run = await this.#opts.store.getRun(toolRun.spec.runId);
    if (!run || !TERMINAL.has(run.status)) return;
    const steps = await this.#opts.store.getStepResults(run.runId);
    const succeeded = run.status === 'success';
    const updated = await this.#opts.resources.toolRuns.patchStatus(toolRun.metadata.name, {
      status: run.status,
      ...(run.metadata.completedAt ? { completedAt: run.metadata.completedAt } : {}),
      ...(run.metadata.durationMs !== undefined ? { durationMs: run.metadata.durationMs } : {}),
      ...(run.error ? { error: run.error.slice(0, 1024) } : {}),
      steps: steps.map((s) => ({
        id: s.stepId,
        success: s.success,
        ...(s.error ? { error: s.error.slice(0, 1024) } : {}),
      })),
      conditions: [
        condition('Admitted', 'True', 'SlotAvailable', 'The run was admitted for execution'),
        condition(
          'Succeeded',
          succeeded ? 'True' : 'False',
          run.status,
          succeeded ? 'The run succeeded' : `The run ${run.status}`,
        ),
      ],
    });
    await this.#release(updated);
  }

  async #release(toolRun: ToolRunResource): Promise<void> {
    const finalizers = toolRun.metadata.finalizers ?? [];
    if (!finalizers.includes(RECORDED_FINALIZER)) return;
    try {
      await this.#opts.resources.toolRuns.update({
        ...toolRun,
        metadata: { ...toolRun.metadata, finalizers: finalizers.filter((f) => f !== RECORDED_FINALIZER) },
      });
    } catch (error) {
      // A newer version will be reconciled again.
      if (!(isResourceError(error) && (error.code === 409 || error.code === 404))) throw error;
    }
  }

  #sweepRetention(): void {
    const cutoff = Date.now() - this.#opts.retentionMs;
    for (const toolRun of this.#informer.values()) {
      const completedAt = toolRun.status?.completedAt;
      if (!completedAt || Date.parse(completedAt) > cutoff || toolRun.metadata.finalizers?.length) continue;
      this.#opts.resources.toolRuns.delete(toolRun.metadata.name).catch(() => {});
    }
  }
}
