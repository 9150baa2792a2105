/**
 * The Kubernetes launcher: a per-run token (hashed in the store, plain in a Secret the ToolRun owns) and a
 * runner Pod; the outcome is observed from the store and the Pod, never decided here.
 */
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import { RUN_ID_KEY, TOOLRUN_LABEL } from '../../contract/resources/labels.ts';
import { decodeSummary, RUN_TOKEN_SECRET_KEY } from '../../contract/wire/runner.ts';
import { Informer } from '../../kube/informer.ts';
import { isResourceError, type ResourceClient } from '../../kube/resources/index.ts';
import type { Pod, Secret } from '../../kube/types.ts';
import { hashRunToken, newRunToken } from '../../runs/run-token.ts';
import type { RunnerAttempt } from '../../store/index.ts';
import type { OperatorMetrics } from '../metrics.ts';
import {
  type Execution,
  type ExecutionExit,
  type Launcher,
  type LaunchResult,
  RUNNER_SELECTOR,
  runnerLabels,
  runnerPodName,
  runTokenSecretName,
  toolRunOwner,
} from './launcher.ts';

/** Records the hash of an attempt's token (store `run_executions`); false when the run is not running. */
export interface RunTokenIssuer {
  issueRunToken(runId: string, attempt: number, tokenHash: string): Promise<boolean>;
}

/** Reads the heartbeat of a runner attempt (store `run_executions`). */
export interface RunnerAttemptReader {
  getRunnerAttempt(runId: string): Promise<Pick<RunnerAttempt, 'attempt' | 'heartbeatAt'> | undefined>;
}

export interface PodNames {
  podName: string;
  tokenSecretName: string;
}

export interface PodLauncherDeps {
  pods: ResourceClient<Pod>;
  secrets: Pick<ResourceClient<Secret>, 'get' | 'create' | 'delete'>;
  tokens: RunTokenIssuer;
  attempts: RunnerAttemptReader;
  /** The runner Pod of an attempt (operator/toolrun/pod.ts, with the operator's settings). */
  buildPod(toolRun: ToolRunResource, attempt: number, names: PodNames): Pod;
  /** Counts Pods created and how long they took to start. */
  metrics?: Pick<OperatorMetrics, 'podCreated' | 'podStarted'>;
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
  /** Pods seen before their container started: their start is timed once it has. */
  readonly #starting = new Set<string>();

  constructor(deps: PodLauncherDeps) {
    this.#deps = deps;
    this.#pods = new Informer(deps.pods, {
      kind: 'Pod',
      labelSelector: RUNNER_SELECTOR,
      ...(deps.log ? { log: deps.log } : {}),
    });
  }

  async open(changed: (toolRunName: string) => void): Promise<void> {
    this.#pods.onEvent((type, pod) => {
      this.#timeStart(type, pod);
      const owner = pod.metadata.labels?.[TOOLRUN_LABEL];
      if (owner) changed(owner);
    });
    await this.#pods.start();
  }

  async close(): Promise<void> {
    await this.#pods.stop();
  }

  /** Observes creation → container start of Pods seen waiting (not of those found running at start-up). */
  #timeStart(type: string, pod: Pod): void {
    const name = pod.metadata.name;
    const state = runnerStatus(pod)?.state;
    const startedAt = state?.running?.startedAt ?? state?.terminated?.startedAt;
    if (type === 'DELETED') this.#starting.delete(name);
    else if (!startedAt) this.#starting.add(name);
    else if (this.#starting.delete(name) && pod.metadata.creationTimestamp) {
      const seconds = (Date.parse(startedAt) - Date.parse(pod.metadata.creationTimestamp)) / 1000;
      if (Number.isFinite(seconds)) this.#deps.metrics?.podStarted(seconds);
    }
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
      this.#deps.metrics?.podCreated();
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
        annotations: { [RUN_ID_KEY]: toolRun.spec.runId },
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
    const row = await this.#deps.attempts.getRunnerAttempt(toolRun.spec.runId);
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
