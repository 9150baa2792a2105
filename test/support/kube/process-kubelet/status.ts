import { open } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { isKubeApiError, type KubeApi } from './api.ts';
import { NODE_IP } from './node.ts';
import type { ProcessExit } from './process.ts';
import {
  type Container,
  type ContainerState,
  type ContainerStateTerminated,
  type ContainerStatus,
  kubeTime,
  type Pod,
  type PodCondition,
  type PodPhase,
  type PodStatus,
} from './types.ts';

/** What the kubelet knows about one container; becomes its ContainerStatus. */
export interface ContainerRecord {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  state: ContainerState;
  lastState: ContainerState;
  restartCount: number;
}

/** A Pod-level failure decided by the kubelet itself (deadline, eviction). */
export interface PodFailure {
  reason: string;
  message: string;
}

export interface StatusInput {
  pod: Pod;
  startTime: string;
  init: ContainerRecord[];
  main: ContainerRecord[];
  failure?: PodFailure;
}

const MAX_MESSAGE_BYTES = 4096;
const FALLBACK_LOG_LINES = 80;
const FALLBACK_LOG_BYTES = 2048;

/** The last `maxBytes` of a file ('' when it does not exist), like the kubelet's tail.ReadAtMost. */
async function readTail(path: string, maxBytes: number): Promise<Buffer> {
  let file: Awaited<ReturnType<typeof open>> | undefined;
  try {
    file = await open(path, 'r');
    const { size } = await file.stat();
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    await file.read(buffer, 0, length, size - length);
    return buffer;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw error;
  } finally {
    await file?.close();
  }
}

/**
 * The termination message as the kubelet builds it: the (last 4096 bytes of the) termination
 * message file; with FallbackToLogsOnError, an empty file and a non-zero exit, the last 80 lines of
 * the container's log, cut to their last 2048 bytes.
 */
export async function terminationMessage(
  container: Container,
  messageFile: string,
  logFile: string,
  exitCode: number,
): Promise<string> {
  const message = (await readTail(messageFile, MAX_MESSAGE_BYTES)).toString('utf8');
  if (message || container.terminationMessagePolicy !== 'FallbackToLogsOnError' || exitCode === 0)
    return message;
  // Read enough to find 80 lines in the common case; the circular 2048-byte cut comes last anyway.
  const tail = (await readTail(logFile, 64 * 1024)).toString('utf8');
  const lines = tail.split(/(?<=\n)/);
  const lastLines = Buffer.from(lines.slice(-FALLBACK_LOG_LINES).join(''), 'utf8');
  return lastLines.subarray(Math.max(0, lastLines.length - FALLBACK_LOG_BYTES)).toString('utf8');
}

/** Why the kubelet killed a container; decides how its termination is reported. */
export type KillCause = 'oom' | 'lost' | 'kubelet';

export interface ExitReport {
  container: Container;
  exit: ProcessExit;
  cause: KillCause | undefined;
  exit137AsOOMKilled: boolean;
  messageFile: string;
  logFile: string;
  startedAt: string;
  containerID: string;
}

/**
 * A finished container's `state.terminated`: the reason the runtime would give (Completed, Error,
 * StartError, OOMKilled, or ContainerStatusUnknown for a process lost with its node) and the
 * termination message.
 */
export async function terminatedState(report: ExitReport): Promise<ContainerStateTerminated> {
  const { exit, cause } = report;
  let reason = exit.exitCode === 0 ? 'Completed' : 'Error';
  let message: string;
  if (exit.startError) {
    reason = 'StartError';
    message = `failed to start container "${report.container.name}": ${exit.startError.message}`;
  } else if (cause === 'lost') {
    reason = 'ContainerStatusUnknown';
    message = 'The container could not be located when the pod was terminated';
  } else {
    message = await terminationMessage(report.container, report.messageFile, report.logFile, exit.exitCode);
    // A kill by the kubelet itself (deletion, deadline, eviction) is never an OOM kill.
    if (cause === 'oom' || (exit.exitCode === 137 && !cause && report.exit137AsOOMKilled))
      reason = 'OOMKilled';
  }
  return {
    exitCode: exit.exitCode,
    reason,
    ...(message ? { message } : {}),
    startedAt: report.startedAt,
    finishedAt: kubeTime(),
    containerID: report.containerID,
  };
}

/** The kubelet's getPhase (v1.20): from the container states and the restart policy. */
export function podPhase(pod: Pod, init: ContainerRecord[], main: ContainerRecord[]): PodPhase {
  const policy = pod.spec.restartPolicy ?? 'Always';
  let pendingInitialization = 0;
  let failedInitialization = 0;
  for (const record of init) {
    const { state, lastState } = record;
    if (state.terminated) {
      if (state.terminated.exitCode !== 0) failedInitialization++;
    } else if (state.waiting && lastState.terminated) {
      if (lastState.terminated.exitCode !== 0) failedInitialization++;
    } else {
      pendingInitialization++;
    }
  }
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const { state, lastState } of main) {
    if (state.running) running++;
    else if (state.terminated) {
      stopped++;
      if (state.terminated.exitCode === 0) succeeded++;
    } else if (lastState.terminated) stopped++;
    else waiting++;
  }
  if (failedInitialization > 0 && policy === 'Never') return 'Failed';
  if (pendingInitialization > 0 || waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    return policy === 'Never' ? 'Failed' : 'Running';
  }
  return 'Pending';
}

function toContainerStatus(record: ContainerRecord): ContainerStatus {
  const running = record.state.running !== undefined;
  const status: ContainerStatus = {
    name: record.name,
    state: record.state,
    lastState: record.lastState,
    // No probes here: a running container is ready and started.
    ready: running,
    started: running,
    restartCount: record.restartCount,
    image: record.image,
    imageID: record.imageID,
  };
  if (record.containerID) status.containerID = record.containerID;
  return status;
}

function condition(type: string, ok: boolean, reason?: string, message?: string): PodCondition {
  const result: PodCondition = { type, status: ok ? 'True' : 'False', lastProbeTime: null };
  if (reason) result.reason = reason;
  if (message) result.message = message;
  return result;
}

function podConditions(phase: PodPhase, init: ContainerRecord[], main: ContainerRecord[]): PodCondition[] {
  const incomplete = init.filter((r) => r.state.terminated?.exitCode !== 0).map((r) => r.name);
  const unready = main.filter((r) => !r.state.running).map((r) => r.name);
  const initialized =
    incomplete.length === 0
      ? condition('Initialized', true, phase === 'Succeeded' ? 'PodCompleted' : undefined)
      : condition(
          'Initialized',
          false,
          'ContainersNotInitialized',
          `containers with incomplete status: [${incomplete.join(' ')}]`,
        );
  const ready = (type: string) =>
    phase === 'Succeeded'
      ? condition(type, false, 'PodCompleted')
      : unready.length === 0
        ? condition(type, true)
        : condition(
            type,
            false,
            'ContainersNotReady',
            `containers with unready status: [${unready.join(' ')}]`,
          );
  return [initialized, ready('Ready'), ready('ContainersReady'), condition('PodScheduled', true)];
}

/** Keeps a condition's lastTransitionTime when its status did not change, and other writers' conditions. */
function mergeConditions(
  current: PodCondition[] | undefined,
  ours: PodCondition[],
  now: string,
): PodCondition[] {
  const merged = (current ?? []).filter((c) => !ours.some((o) => o.type === c.type));
  for (const next of ours) {
    const previous = current?.find((c) => c.type === next.type);
    merged.push({
      ...next,
      lastTransitionTime:
        previous?.status === next.status && previous.lastTransitionTime ? previous.lastTransitionTime : now,
    });
  }
  return merged;
}

/** A phase that never goes back once the Pod has finished. */
export function composePhase(input: StatusInput): PodPhase {
  const current = input.pod.status?.phase;
  if (current === 'Succeeded' || current === 'Failed') return current;
  if (input.failure) return 'Failed';
  return podPhase(input.pod, input.init, input.main);
}

/** The full status to PUT, built on the current one so fields written by others (qosClass, …) survive. */
export function composeStatus(input: StatusInput): PodStatus {
  const { pod, init, main } = input;
  const phase = composePhase(input);
  const status: PodStatus = {
    ...pod.status,
    phase,
    conditions: mergeConditions(pod.status?.conditions, podConditions(phase, init, main), kubeTime()),
    hostIP: NODE_IP,
    podIP: NODE_IP,
    podIPs: [{ ip: NODE_IP }],
    startTime: pod.status?.startTime ?? input.startTime,
    containerStatuses: main.map(toContainerStatus).sort((a, b) => a.name.localeCompare(b.name)),
  };
  if (init.length > 0) status.initContainerStatuses = init.map(toContainerStatus);
  delete status.reason;
  delete status.message;
  const failure =
    input.failure ??
    (pod.status?.reason ? { reason: pod.status.reason, message: pod.status.message } : undefined);
  if (failure) {
    status.reason = failure.reason;
    if (failure.message) status.message = failure.message;
  }
  // Drop undefined members so the comparison with what the server returned is exact.
  return JSON.parse(JSON.stringify(status)) as PodStatus;
}

export interface Gate {
  /** Whether the node is up: a write composed while it was lost must not leave. */
  readonly isOpen: boolean;
  /** Resolves when the node is up (immediately unless it is "lost") or when `signal` aborts. */
  wait(signal?: AbortSignal): Promise<void>;
}

/**
 * Writes one Pod's status through the pods/status subresource: one write at a time, always the
 * newest state, each from a fresh read of the Pod (a 409 Conflict reads again and retries).
 * Skips writes that would change nothing.
 */
export class StatusWriter {
  readonly #api: KubeApi;
  readonly #path: string;
  readonly #uid: string;
  readonly #compose: (current: Pod) => PodStatus;
  readonly #gate: Gate;
  readonly #log: (line: string) => void;
  readonly #closed = new AbortController();
  #dirty = false;
  #loop: Promise<void> | undefined;

  constructor(options: {
    api: KubeApi;
    pod: Pod;
    compose: (current: Pod) => PodStatus;
    gate: Gate;
    log: (line: string) => void;
  }) {
    const { namespace = 'default', name, uid = '' } = options.pod.metadata;
    this.#api = options.api;
    this.#path = `/api/v1/namespaces/${namespace}/pods/${name}`;
    this.#uid = uid;
    this.#compose = options.compose;
    this.#gate = options.gate;
    this.#log = options.log;
  }

  /** Asks for the current state to be written (soon; coalesced with other requests). */
  request(): void {
    this.#dirty = true;
    this.#loop ??= this.#run().finally(() => {
      this.#loop = undefined;
      if (this.#dirty && !this.#closed.signal.aborted) this.request();
    });
  }

  /** Resolves once everything requested so far has been written (or given up on). */
  async flush(): Promise<void> {
    while (this.#loop) await this.#loop;
  }

  /** No more writes: the Pod is gone or the kubelet stopped. */
  close(): void {
    this.#closed.abort();
  }

  async #run(): Promise<void> {
    while (this.#dirty && !this.#closed.signal.aborted) {
      // Every write waits: the node can be lost while a loop of writes is under way.
      await this.#gate.wait(this.#closed.signal);
      this.#dirty = false;
      await this.#write();
    }
  }

  async #write(): Promise<void> {
    for (let attempt = 0; attempt < 10 && !this.#closed.signal.aborted; attempt++) {
      try {
        const current = await this.#api.get<Pod>(this.#path);
        if (current.metadata.uid !== this.#uid) return; // Replaced by a Pod of the same name.
        const status = this.#compose(current);
        if (isDeepStrictEqual(status, current.status)) return;
        if (!this.#gate.isOpen) {
          // Lost while reading: what happened is written once the node is back.
          this.#dirty = true;
          return;
        }
        await this.#api.request('PUT', `${this.#path}/status`, { body: { ...current, status } });
        return;
      } catch (error) {
        if (isKubeApiError(error, 404)) return;
        if (isKubeApiError(error, 409)) continue;
        this.#log(`status write of ${this.#path} failed: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }
}
