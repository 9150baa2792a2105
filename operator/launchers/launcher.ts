/**
 * Launchers execute admitted ToolRuns. One interface, two implementations, so one ToolRun reconciler
 * drives both deployments: `PoolLauncher` (embedded: the run executes in this process's worker pool)
 * and `PodLauncher` (Kubernetes: a per-run token and a runner Pod; the outcome is observed from the
 * store and the Pod). A launcher never decides an outcome: it launches, reports what it sees, stops and
 * cleans up when told to.
 */

import { labelValueForId } from '../../contract/resources/convert.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import {
  ATTEMPT_LABEL,
  COMPONENT_LABEL,
  MANAGED_BY_LABEL,
  RUN_ID_KEY,
  TOOL_ID_LABEL,
  TOOLRUN_LABEL,
} from '../../contract/resources/labels.ts';
import type { RunnerSummary } from '../../contract/wire/runner.ts';

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
  /**
   * Stops watching; the pool launcher also interrupts its executions (a shutdown, not a cancel) and waits
   * until each is handed back or failed (runs/interrupted.ts).
   */
  close(): Promise<void>;
  /** Starts attempt `attempt` of the run; repeating it for the same attempt is harmless. */
  launch(toolRun: ToolRunResource, attempt: number): Promise<LaunchResult>;
  /**
   * What the execution of that attempt looks like now (from caches; the pod launcher reads one store row,
   * the pool launcher on a shared Postgres one for a run it does not execute).
   */
  observe(toolRun: ToolRunResource, attempt: number): Promise<Execution>;
  /** Ends the execution: aborts it in the pool, or deletes the Pod with `graceMs` to exit after SIGTERM. */
  stop(toolRun: ToolRunResource, attempt: number, opts: { graceMs: number }): Promise<void>;
  /** Removes what the launch left behind: the token (once the run ended), the Pod (once not needed). */
  cleanup(toolRun: ToolRunResource, attempt: number, opts: { token: boolean; pod: boolean }): Promise<void>;
}

// --- Names shared by the launcher, the Pod builder and tests ---

export const RUNNER_COMPONENT = 'runner';
export const MANAGED_BY = 'kubeglue-operator';

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
    [RUN_ID_KEY]: labelValueForId(toolRun.spec.runId),
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
