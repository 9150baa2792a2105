/**
 * Launchers execute admitted ToolRuns. One interface, two implementations, so one ToolRun reconciler
 * drives both deployments: `PoolLauncher` (embedded: the run executes in this process's worker pool)
 * and `PodLauncher` (Kubernetes: a per-run token and a runner Pod; the outcome is observed from the
 * store and the Pod). A launcher never decides an outcome: it launches, reports what it sees, stops and
 * cleans up when told to.
 */

import { labelValueForId } from '../crds/convert.ts';
import type { ToolRunResource } from '../crds/resources.ts';
import type { RunOptions } from '../crds/run.ts';
import { Informer } from '../kube/informer.ts';
import { isResourceError, type ResourceClient } from '../kube/resources/index.ts';
import type { Pod, Secret } from '../kube/types.ts';
import type { EngineResult, ResolvedSystem } from '../runner/engine/types.ts';
import type { RunOrder } from '../runner/ipc.ts';
import type { WorkerPool } from '../runner/pool.ts';
import type { RunExecution, Store, StoredRun } from '../store/index.ts';
import { finishFromResult } from './completion.ts';
import { hashRunToken, newRunToken } from './run-token.ts';
import { decodeSummary, RUN_TOKEN_SECRET_KEY, type RunnerSummary } from './runner-protocol.ts';
import { RUN_ID_LABEL, TOOL_ID_LABEL } from './toolruns.ts';

// --- The interface ---

/** Where an execution stands, as the launcher sees it. */
export type ExecutionPhase = 'None' | 'Pending' | 'Running' | 'Finished';

/** How an execution ended, as far as Kubernetes tells (never payload data). */
export interface ExecutionExit {
  exitCode?: number;
  /** The container's or the Pod's reason: Completed, Error, OOMKilled, Evicted, DeadlineExceeded, … */
  reason?: string;
  /** The Pod's status message (eviction, deadline), or a termination message that is not a summary. */
  message?: string;
  /** The runner's summary from its termination message. */
  summary?: RunnerSummary;
}

export interface Execution {
  launcher: 'pool' | 'pod';
  phase: ExecutionPhase;
  /** When the phase began (ISO time): Pod creation, container start, container end. */
  since?: string;
  podName?: string;
  /** The Pod is being deleted. */
  terminating?: boolean;
  /** Why a Pending execution waits: ErrImagePull, ImagePullBackOff, Unschedulable, ContainerCreating, … */
  waiting?: { reason: string; message?: string };
  /** Last heartbeat of the runner (pod launcher, Running only; null: none yet). */
  heartbeatAt?: string | null;
  /** Set when Finished. */
  exit?: ExecutionExit;
  /** The runner's memory limit (for messages such as "OOMKilled (memory limit 256Mi)"). */
  memoryLimit?: string;
  /**
   * The execution learns of a cancel by itself (the runner's heartbeat answer says so): stop it only
   * after the grace period. False: nothing tells it but stop(), so stop at once.
   */
  cooperativeCancel: boolean;
}

export interface LaunchResult {
  /** false: the run was no longer running (cancelled, finished) or already executed elsewhere. */
  launched: boolean;
  podName?: string;
}

export interface Launcher {
  readonly kind: 'pool' | 'pod';
  /**
   * Starts what the launcher watches; `changed(toolRunName)` is called whenever an execution's state may
   * have changed (a Pod event, an in-process run that ended). Resolves once its caches are filled.
   */
  open(changed: (toolRunName: string) => void): Promise<void>;
  /** Stops watching; the pool launcher also aborts its executions and waits for their outcome. */
  close(): Promise<void>;
  /** Starts attempt `attempt` of the run; repeating it for the same attempt is harmless. */
  launch(toolRun: ToolRunResource, attempt: number): Promise<LaunchResult>;
  /** What the execution of that attempt looks like now (from caches; the pod launcher reads one store row). */
  observe(toolRun: ToolRunResource, attempt: number): Promise<Execution>;
  /** Ends the execution: aborts it in the pool, or deletes the Pod with `graceMs` to exit after SIGTERM. */
  stop(toolRun: ToolRunResource, attempt: number, opts: { graceMs: number }): Promise<void>;
  /** Removes what the launch left behind: the token (once the run ended), the Pod (once not needed). */
  cleanup(toolRun: ToolRunResource, attempt: number, opts: { token: boolean; pod: boolean }): Promise<void>;
}

// --- Names shared by the launcher, the Pod builder and tests ---

/** Label of runner Pods and token Secrets naming their ToolRun. */
export const TOOLRUN_LABEL = 'kubeglue.dev/toolrun';
export const ATTEMPT_LABEL = 'kubeglue.dev/attempt';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const RUNNER_COMPONENT = 'runner';
export const MANAGED_BY = 'kubeglue-operator';
/** The exact run id (labels may hold only a derived value). */
export const RUN_ID_ANNOTATION = 'kubeglue.dev/run-id';

/** What selects every runner Pod (and token Secret) of the operator. */
export const RUNNER_SELECTOR: Record<string, string> = {
  [COMPONENT_LABEL]: RUNNER_COMPONENT,
  [MANAGED_BY_LABEL]: MANAGED_BY,
};

/** Deterministic per attempt, so a second Pod for the same attempt cannot exist (AlreadyExists). */
export function runnerPodName(toolRunName: string, attempt: number): string {
  return `${toolRunName}-a${attempt}`;
}

export function runTokenSecretName(toolRunName: string): string {
  return `${toolRunName}-token`;
}

/** Labels of a run's Pod and token Secret. */
export function runnerLabels(toolRun: ToolRunResource, attempt: number): Record<string, string> {
  return {
    ...RUNNER_SELECTOR,
    [TOOLRUN_LABEL]: toolRun.metadata.name,
    [RUN_ID_LABEL]: labelValueForId(toolRun.spec.runId),
    [TOOL_ID_LABEL]: labelValueForId(toolRun.spec.tool.id),
    [ATTEMPT_LABEL]: String(attempt),
  };
}

/** ownerReference making the ToolRun the controller of a Pod or Secret (deleted with it). */
export function toolRunOwner(toolRun: ToolRunResource) {
  return {
    apiVersion: toolRun.apiVersion,
    kind: 'ToolRun',
    name: toolRun.metadata.name,
    uid: toolRun.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

// --- PoolLauncher ---

/** What the pool launcher needs besides the pool: the run's inputs and credentials, resolved at launch. */
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

interface PoolExecution {
  controller: AbortController;
  startedAt: string;
  done: Promise<void>;
}

/**
 * Executes admitted ToolRuns in the worker pool and records their outcome in the store: the embedded
 * counterpart of the runner Pod. Only one executor can claim a run.
 */
export class PoolLauncher implements Launcher {
  readonly kind = 'pool';
  readonly #ctx: LaunchContext;
  readonly #executions = new Map<string, PoolExecution>();
  #changed: (toolRunName: string) => void = () => {};

  constructor(ctx: LaunchContext) {
    this.#ctx = ctx;
  }

  async open(changed: (toolRunName: string) => void): Promise<void> {
    this.#changed = changed;
  }

  /** Aborts the runs executing here and waits until each has recorded its outcome. */
  async close(): Promise<void> {
    for (const execution of this.#executions.values()) execution.controller.abort();
    await Promise.allSettled([...this.#executions.values()].map((e) => e.done));
  }

  async launch(toolRun: ToolRunResource): Promise<LaunchResult> {
    const name = toolRun.metadata.name;
    if (this.#executions.has(name)) return { launched: true };
    const run = await this.#ctx.store.claimRunExecution(toolRun.spec.runId, this.#ctx.executor);
    if (!run) return { launched: false };
    const controller = new AbortController();
    const execution: PoolExecution = {
      controller,
      startedAt: new Date().toISOString(),
      done: Promise.resolve(),
    };
    this.#executions.set(name, execution);
    execution.done = this.#execute(toolRun, run, controller).finally(() => {
      // The outcome is in the store before the execution disappears (observe, then read the store).
      this.#executions.delete(name);
      this.#changed(name);
    });
    return { launched: true };
  }

  async observe(toolRun: ToolRunResource): Promise<Execution> {
    const execution = this.#executions.get(toolRun.metadata.name);
    return execution
      ? { launcher: 'pool', phase: 'Running', since: execution.startedAt, cooperativeCancel: false }
      : { launcher: 'pool', phase: 'None', cooperativeCancel: false };
  }

  async stop(toolRun: ToolRunResource): Promise<void> {
    this.#executions.get(toolRun.metadata.name)?.controller.abort();
  }

  async cleanup(): Promise<void> {
    // Nothing outlives an in-process execution.
  }

  async #execute(toolRun: ToolRunResource, run: StoredRun, controller: AbortController): Promise<void> {
    const { store, pool } = this.#ctx;
    const runId = run.runId;
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
    }
    const finish = finishFromResult(run, result);
    const recorded = await store.batch.finishRun(runId, finish);
    await this.#ctx.dropCredentials(runId).catch(() => {});
    if (recorded) this.#ctx.onFinished?.(run, finish.status, finish.durationMs);
  }
}

// --- PodLauncher ---

/** Records the hash of an attempt's token (store `run_executions`); false when the run is not running. */
export interface RunTokenIssuer {
  issueRunToken(runId: string, attempt: number, tokenHash: string): Promise<boolean>;
}

/** Reads an execution's heartbeat (store `run_executions`). */
export interface ExecutionReader {
  getExecution(runId: string): Promise<Pick<RunExecution, 'attempt' | 'heartbeatAt'> | undefined>;
}

export interface PodNames {
  podName: string;
  tokenSecretName: string;
}

export interface PodLauncherDeps {
  pods: ResourceClient<Pod>;
  secrets: Pick<ResourceClient<Secret>, 'get' | 'create' | 'delete'>;
  tokens: RunTokenIssuer;
  executions: ExecutionReader;
  /** The runner Pod of an attempt (operator/toolrun/pod.ts, with the operator's settings). */
  buildPod(toolRun: ToolRunResource, attempt: number, names: PodNames): Pod;
  log?: (line: string) => void;
}

/** The first container's status, the runner's. */
function runnerStatus(pod: Pod) {
  return pod.status?.containerStatuses?.[0];
}

/** A Pod's state in launcher terms: pure, exported for tests. */
export function executionFromPod(pod: Pod | undefined, heartbeatAt?: string | null): Execution {
  const base = { launcher: 'pod' as const, cooperativeCancel: true };
  if (!pod) return { ...base, phase: 'None' };
  const common = {
    ...base,
    podName: pod.metadata.name,
    ...(pod.metadata.deletionTimestamp ? { terminating: true } : {}),
    ...(pod.spec.containers[0]?.resources?.limits?.memory
      ? { memoryLimit: pod.spec.containers[0].resources.limits.memory }
      : {}),
  };
  const container = runnerStatus(pod);
  const terminated = container?.state?.terminated;
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed' || terminated) {
    const summary = decodeSummary(terminated?.message);
    const podReason = pod.status?.reason;
    const exit: ExecutionExit = {
      ...(terminated ? { exitCode: terminated.exitCode } : {}),
      // Evicted and DeadlineExceeded are the Pod's; OOMKilled, Error, Completed the container's.
      ...((podReason ?? terminated?.reason) ? { reason: podReason ?? terminated?.reason } : {}),
      ...(podReason && pod.status?.message
        ? { message: pod.status.message }
        : terminated?.message && !summary
          ? { message: terminated.message }
          : {}),
      ...(summary ? { summary } : {}),
    };
    return {
      ...common,
      phase: 'Finished',
      since:
        terminated?.finishedAt ?? pod.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime,
      exit,
    };
  }
  const running = container?.state?.running;
  if (phase === 'Running' || phase === 'Unknown' || running) {
    return {
      ...common,
      phase: 'Running',
      since: running?.startedAt ?? pod.status?.startTime ?? pod.metadata.creationTimestamp,
      heartbeatAt: heartbeatAt ?? null,
    };
  }
  const waiting = container?.state?.waiting;
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  const why =
    waiting?.reason !== undefined
      ? { reason: waiting.reason, ...(waiting.message ? { message: waiting.message } : {}) }
      : scheduled?.status === 'False'
        ? {
            reason: scheduled.reason ?? 'Unschedulable',
            ...(scheduled.message ? { message: scheduled.message } : {}),
          }
        : undefined;
  return {
    ...common,
    phase: 'Pending',
    ...(pod.metadata.creationTimestamp ? { since: pod.metadata.creationTimestamp } : {}),
    ...(why ? { waiting: why } : {}),
  };
}

/**
 * Launches each run as a runner Pod: a random per-run token (hashed in the store, plain in a Secret the
 * ToolRun owns and the Pod reads through secretKeyRef), then the Pod, named per attempt. Watches runner
 * Pods by label and reports them to the controller.
 */
export class PodLauncher implements Launcher {
  readonly kind = 'pod';
  readonly #deps: PodLauncherDeps;
  readonly #pods: Informer<Pod>;

  constructor(deps: PodLauncherDeps) {
    this.#deps = deps;
    this.#pods = new Informer(deps.pods, {
      kind: 'Pod',
      labelSelector: RUNNER_SELECTOR,
      ...(deps.log ? { log: deps.log } : {}),
    });
  }

  async open(changed: (toolRunName: string) => void): Promise<void> {
    this.#pods.onEvent((_type, pod) => {
      const owner = pod.metadata.labels?.[TOOLRUN_LABEL];
      if (owner) changed(owner);
    });
    await this.#pods.start();
  }

  async close(): Promise<void> {
    await this.#pods.stop();
  }

  async launch(toolRun: ToolRunResource, attempt: number): Promise<LaunchResult> {
    const podName = runnerPodName(toolRun.metadata.name, attempt);
    const tokenSecretName = runTokenSecretName(toolRun.metadata.name);
    if (this.#pods.get(podName)) return { launched: true, podName };
    const token = await this.#token(toolRun, attempt, tokenSecretName);
    // Before the Pod exists, so the runner's first call already authenticates.
    const issued = await this.#deps.tokens.issueRunToken(toolRun.spec.runId, attempt, hashRunToken(token));
    if (!issued) return { launched: false };
    try {
      const created = await this.#deps.pods.create(
        this.#deps.buildPod(toolRun, attempt, { podName, tokenSecretName }),
      );
      this.#pods.observe('ADDED', created);
    } catch (error) {
      // The Pod of this attempt exists already (an earlier launch, a restarted operator): adopt it.
      if (!isResourceError(error, 'AlreadyExists')) throw error;
    }
    return { launched: true, podName };
  }

  /** The token in the run's Secret, creating both when missing. */
  async #token(toolRun: ToolRunResource, attempt: number, secretName: string): Promise<string> {
    const existing = await this.#deps.secrets.get(secretName);
    const stored = existing?.data?.[RUN_TOKEN_SECRET_KEY];
    if (stored) return Buffer.from(stored, 'base64').toString('utf8');
    const token = newRunToken();
    const secret: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: secretName,
        ...(toolRun.metadata.namespace ? { namespace: toolRun.metadata.namespace } : {}),
        labels: runnerLabels(toolRun, attempt),
        annotations: { [RUN_ID_ANNOTATION]: toolRun.spec.runId },
        ownerReferences: [toolRunOwner(toolRun)],
      },
      type: 'Opaque',
      data: { [RUN_TOKEN_SECRET_KEY]: Buffer.from(token).toString('base64') },
    };
    try {
      await this.#deps.secrets.create(secret);
      return token;
    } catch (error) {
      if (!isResourceError(error, 'AlreadyExists')) throw error;
      const raced = await this.#deps.secrets.get(secretName);
      const value = raced?.data?.[RUN_TOKEN_SECRET_KEY];
      if (!value) throw new Error(`the token Secret ${secretName} has no key ${RUN_TOKEN_SECRET_KEY}`);
      return Buffer.from(value, 'base64').toString('utf8');
    }
  }

  async observe(toolRun: ToolRunResource, attempt: number): Promise<Execution> {
    const pod = this.#pods.get(runnerPodName(toolRun.metadata.name, attempt));
    const execution = executionFromPod(pod);
    if (execution.phase !== 'Running') return execution;
    const row = await this.#deps.executions.getExecution(toolRun.spec.runId);
    return { ...execution, heartbeatAt: row?.attempt === attempt ? row.heartbeatAt : null };
  }

  async stop(toolRun: ToolRunResource, attempt: number, opts: { graceMs: number }): Promise<void> {
    await this.#delete(this.#deps.pods, runnerPodName(toolRun.metadata.name, attempt), {
      gracePeriodSeconds: Math.ceil(opts.graceMs / 1000),
    });
  }

  async cleanup(
    toolRun: ToolRunResource,
    attempt: number,
    opts: { token: boolean; pod: boolean },
  ): Promise<void> {
    if (opts.token) await this.#delete(this.#deps.secrets, runTokenSecretName(toolRun.metadata.name));
    if (opts.pod) await this.#delete(this.#deps.pods, runnerPodName(toolRun.metadata.name, attempt));
  }

  async #delete(
    client: Pick<ResourceClient<Pod>, 'delete'> | Pick<ResourceClient<Secret>, 'delete'>,
    name: string,
    opts?: { gracePeriodSeconds: number },
  ): Promise<void> {
    try {
      await client.delete(name, opts);
    } catch (error) {
      if (!isResourceError(error, 'NotFound')) throw error;
    }
  }
}
