import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import type { KubeApi } from './api.ts';
import {
  ContainerConfigError,
  type ImageSpec,
  PodLayout,
  type ResolvedContainer,
  resolveContainer,
  setUpVolumes,
  VolumeSetupError,
} from './config.ts';
import { NODE_IP } from './node.ts';
import { ContainerProcess, type ProcessExit } from './process.ts';
import { deletePodNow } from './scheduler.ts';
import {
  type ContainerRecord,
  composePhase,
  composeStatus,
  type Gate,
  type KillCause,
  type PodFailure,
  StatusWriter,
  terminatedState,
} from './status.ts';
import { type Container, kubeTime, type Pod, podKey } from './types.ts';

/** What a Pod worker needs from its kubelet. */
export interface WorkerContext {
  api: KubeApi;
  workDir: string;
  gate: Gate;
  log: (line: string) => void;
  image(reference: string): ImageSpec | undefined;
  neverStart(pod: Pod): boolean;
  exit137AsOOMKilled: boolean;
  baseEnv: Record<string, string>;
  restartBackoffMs: { initial: number; max: number };
  /** How often a waiting container (image, config, volumes) tries again. */
  retryMs: number;
}

interface LiveContainer {
  process: ContainerProcess;
  cause?: KillCause;
  /** Resolves once the exit is in the container's record (and a status write requested). */
  recorded: Promise<void>;
}

const DEADLINE_MESSAGE = 'Pod was active on the node longer than the specified deadline';

function imageID(reference: string, image: ImageSpec): string {
  const digest = createHash('sha256').update(JSON.stringify(image)).digest('hex');
  return `${reference}@sha256:${digest}`;
}

/**
 * Runs one Pod bound to the node, from volume setup through its containers' lives (restarts
 * included) to its final status, and carries out the Pod-level events: deadline, graceful deletion,
 * eviction, and the chaos kills.
 */
export class PodWorker {
  readonly layout: PodLayout;
  readonly #ctx: WorkerContext;
  readonly #writer: StatusWriter;
  readonly #init: ContainerRecord[];
  readonly #main: ContainerRecord[];
  readonly #live = new Map<string, LiveContainer>();
  readonly #logFiles = new Map<string, string>();
  /** Aborted once the Pod must stop: no more starts, restarts or retries. */
  readonly #stopping = new AbortController();
  /** Aborted when the kubelet lets go of the Pod (it vanished, or the kubelet stops): no API writes. */
  readonly #closed = new AbortController();
  #pod: Pod;
  #startTime: string;
  #failure: PodFailure | undefined;
  #deleting = false;
  #deleted = false;
  #killAt = Number.POSITIVE_INFINITY;
  #killTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #runFinished = false;
  readonly #wakers = new Set<() => void>();
  readonly done: Promise<void>;

  constructor(ctx: WorkerContext, pod: Pod) {
    this.#ctx = ctx;
    this.#pod = pod;
    this.layout = new PodLayout(ctx.workDir, pod);
    this.#startTime = pod.status?.startTime ?? kubeTime();
    const record = (container: Container, init: boolean): ContainerRecord => {
      const previous = (init ? pod.status?.initContainerStatuses : pod.status?.containerStatuses)?.find(
        (s) => s.name === container.name,
      );
      return {
        name: container.name,
        image: container.image ?? '',
        imageID: previous?.imageID ?? '',
        state: { waiting: { reason: init ? 'PodInitializing' : 'ContainerCreating' } },
        lastState: previous?.lastState ?? {},
        restartCount: previous?.restartCount ?? 0,
        ...(previous && this.#adopt(previous.state)),
      };
    };
    this.#init = (pod.spec.initContainers ?? []).map((c) => record(c, true));
    this.#main = pod.spec.containers.map((c) => record(c, false));
    this.#writer = new StatusWriter({
      api: ctx.api,
      pod,
      gate: ctx.gate,
      log: ctx.log,
      compose: (current) => composeStatus(this.#statusInput(current)),
    });
    this.done = this.#run();
  }

  /**
   * A Pod that already ran on this node under an earlier kubelet: what finished stays finished,
   * and a container reported running is gone with its process (reported as the current kubelet
   * does for a container it cannot find).
   */
  #adopt(state: ContainerRecord['state']): Partial<ContainerRecord> {
    if (state.terminated) return { state };
    if (!state.running) return {};
    return {
      state: {
        terminated: {
          exitCode: 137,
          reason: 'ContainerStatusUnknown',
          message: 'The container could not be located when the pod was terminated',
          startedAt: state.running.startedAt,
          finishedAt: kubeTime(),
        },
      },
    };
  }

  get pod(): Pod {
    return this.#pod;
  }

  get finished(): boolean {
    const phase = composePhase(this.#statusInput(this.#pod));
    return phase === 'Succeeded' || phase === 'Failed';
  }

  /** Process ids of the running containers, by container name. */
  pids(): Record<string, number> {
    return Object.fromEntries([...this.#live].map(([name, live]) => [name, live.process.pid]));
  }

  logFile(container?: string): string | undefined {
    return this.#logFiles.get(container ?? this.#pod.spec.containers[0]?.name ?? '');
  }

  #statusInput(current: Pod) {
    return {
      pod: current,
      startTime: this.#startTime,
      init: this.#init,
      main: this.#main,
      failure: this.#failure,
    };
  }

  #report(): void {
    this.#writer.request();
  }

  /** Wakes the waits (image pull, config retries, backoffs) so a changed chaos knob or image takes effect now. */
  wake(): void {
    for (const waker of this.#wakers) waker();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.#wakers.delete(finish);
        this.#stopping.signal.removeEventListener('abort', finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.#wakers.add(finish);
      this.#stopping.signal.addEventListener('abort', finish);
    });
  }

  /** A newer version of the Pod from the watch. */
  update(pod: Pod): void {
    this.#pod = pod;
    this.#armDeadline();
    if (pod.metadata.deletionTimestamp) {
      this.#deleting = true;
      this.terminate(pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30);
      if (this.#runFinished) void this.#deletePod();
    }
  }

  /** The Pod vanished from the API server (force deletion): kill everything, write nothing more. */
  gone(): void {
    this.#closed.abort();
    this.#writer.close();
    this.terminate(0);
  }

  /** The kubelet stops: kill the containers after a short grace, write nothing more. */
  async shutdown(graceSeconds: number): Promise<void> {
    this.#closed.abort();
    this.#writer.close();
    this.terminate(graceSeconds);
    await this.done;
  }

  /**
   * Stops the Pod's containers: SIGTERM now and SIGKILL after `graceSeconds` (at once for 0). A
   * second call can only shorten the grace, as a second `kubectl delete --grace-period` does.
   */
  terminate(graceSeconds: number): void {
    this.#stopping.abort();
    const killAt = Date.now() + graceSeconds * 1000;
    if (killAt >= this.#killAt) return;
    const first = this.#killAt === Number.POSITIVE_INFINITY;
    this.#killAt = killAt;
    clearTimeout(this.#killTimer);
    if (graceSeconds <= 0) {
      this.#killAll('SIGKILL');
      return;
    }
    if (first) this.#killAll('SIGTERM');
    this.#killTimer = setTimeout(() => this.#killAll('SIGKILL'), killAt - Date.now());
    this.#killTimer.unref();
  }

  #killAll(signal: NodeJS.Signals, cause: KillCause = 'kubelet'): void {
    for (const live of this.#live.values()) {
      live.cause ??= cause;
      live.process.kill(signal);
    }
  }

  /** Chaos: SIGKILL the running container(s) and report OOMKilled; resolves once that is written. */
  async oomKill(container?: string): Promise<void> {
    const targets = [...this.#live].filter(([name]) => container === undefined || name === container);
    if (targets.length === 0)
      throw new Error(`${podKey(this.#pod)} has no running container ${container ?? ''}`);
    for (const [, live] of targets) {
      live.cause = 'oom';
      live.process.kill('SIGKILL');
    }
    await Promise.all(targets.map(([, live]) => live.recorded));
    await this.#writer.flush();
  }

  /** Chaos / eviction: the kubelet fails the Pod with `failure` and kills its containers with grace 0. */
  async fail(failure: PodFailure): Promise<void> {
    if (this.finished) return;
    this.#failure = failure;
    this.#report();
    this.terminate(0);
    await this.done;
  }

  /** Node lost: every process dies at once; what happened is reported when the node comes back. */
  loseProcesses(): void {
    this.#killAll('SIGKILL', 'lost');
  }

  #armDeadline(): void {
    const seconds = this.#pod.spec.activeDeadlineSeconds;
    clearTimeout(this.#deadlineTimer);
    if (seconds === undefined || this.#runFinished) return;
    const remaining = Date.parse(this.#startTime) + seconds * 1000 - Date.now();
    this.#deadlineTimer = setTimeout(
      () => {
        if (this.finished || this.#stopping.signal.aborted) return;
        this.#ctx.log(`pod ${podKey(this.#pod)}: active deadline of ${seconds}s exceeded`);
        this.#failure = { reason: 'DeadlineExceeded', message: DEADLINE_MESSAGE };
        this.#report();
        this.terminate(this.#pod.spec.terminationGracePeriodSeconds ?? 30);
      },
      Math.max(0, remaining),
    );
    this.#deadlineTimer.unref();
  }

  async #run(): Promise<void> {
    this.#armDeadline();
    this.#report();
    try {
      if (!this.finished && (await this.#setUp())) {
        let initialized = true;
        for (const [index, container] of (this.#pod.spec.initContainers ?? []).entries()) {
          initialized = await this.#runContainer(container, this.#init[index] as ContainerRecord, true);
          if (!initialized) break;
        }
        if (initialized) {
          await Promise.all(
            this.#pod.spec.containers.map((c, i) =>
              this.#runContainer(c, this.#main[i] as ContainerRecord, false),
            ),
          );
        }
      }
    } catch (error) {
      this.#ctx.log(`pod ${podKey(this.#pod)}: worker failed: ${(error as Error).stack}`);
    }
    this.#runFinished = true;
    clearTimeout(this.#deadlineTimer);
    clearTimeout(this.#killTimer);
    this.#report();
    await this.#writer.flush();
    if (this.#deleting) await this.#deletePod();
  }

  /** Volumes and directories; retried while a Secret or ConfigMap is missing. False when stopped first. */
  async #setUp(): Promise<boolean> {
    while (!this.#stopping.signal.aborted) {
      try {
        await setUpVolumes(this.#ctx.api, this.#pod, this.layout, this.#ctx.log);
        return true;
      } catch (error) {
        const message = (error as Error).message;
        if (!(error instanceof VolumeSetupError)) this.#ctx.log(`pod ${podKey(this.#pod)}: ${message}`);
        for (const record of [...this.#init, ...this.#main]) {
          if (record.state.waiting) record.state = { waiting: { reason: 'ContainerCreating', message } };
        }
        this.#report();
        await this.#sleep(this.#ctx.retryMs);
      }
    }
    return false;
  }

  #setWaiting(record: ContainerRecord, reason: string, message?: string): void {
    if (record.state.terminated) record.lastState = { terminated: record.state.terminated };
    record.state = { waiting: message ? { reason, message } : { reason } };
    this.#report();
  }

  /**
   * One container's life: pull, configure, run, and restart per the restart policy (init
   * containers only after a failure). True when it ended successfully.
   */
  async #runContainer(container: Container, record: ContainerRecord, init: boolean): Promise<boolean> {
    const policy = this.#pod.spec.restartPolicy ?? 'Always';
    let backoff = this.#ctx.restartBackoffMs.initial;
    let exitCode = record.state.terminated?.exitCode;
    for (;;) {
      if (exitCode !== undefined) {
        const failed = exitCode !== 0;
        const restart = init
          ? failed && policy !== 'Never'
          : policy === 'Always' || (policy === 'OnFailure' && failed);
        if (!restart || this.#stopping.signal.aborted) return !failed;
        record.restartCount++;
        this.#setWaiting(
          record,
          'CrashLoopBackOff',
          `back-off ${Math.round(backoff / 1000)}s restarting failed container=${container.name} pod=${this.#pod.metadata.name}_${this.#pod.metadata.namespace}(${this.#pod.metadata.uid})`,
        );
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, this.#ctx.restartBackoffMs.max);
      }
      await this.#ctx.gate.wait(this.#stopping.signal);
      const image = await this.#pull(container, record);
      const resolved = image && (await this.#configure(container, record, image));
      if (!resolved || this.#stopping.signal.aborted) return false;
      const exit = await this.#execute(container, record, resolved);
      if (!exit) return false;
      exitCode = exit.exitCode;
    }
  }

  async #pull(container: Container, record: ContainerRecord): Promise<ImageSpec | undefined> {
    const reference = container.image ?? '';
    let attempts = 0;
    while (!this.#stopping.signal.aborted) {
      const blocked = this.#ctx.neverStart(this.#pod);
      const image = blocked ? undefined : this.#ctx.image(reference);
      if (image) {
        record.imageID = imageID(reference, image);
        return image;
      }
      if (blocked || attempts > 0)
        this.#setWaiting(record, 'ImagePullBackOff', `Back-off pulling image "${reference}"`);
      else
        this.#setWaiting(record, 'ErrImagePull', `image "${reference}" is not known to the process kubelet`);
      attempts++;
      await this.#sleep(this.#ctx.retryMs);
    }
    return undefined;
  }

  async #configure(container: Container, record: ContainerRecord, image: ImageSpec) {
    while (!this.#stopping.signal.aborted) {
      try {
        return await resolveContainer({
          api: this.#ctx.api,
          pod: this.#pod,
          container,
          image,
          layout: this.layout,
          podIP: NODE_IP,
          baseEnv: this.#ctx.baseEnv,
        });
      } catch (error) {
        if (!(error instanceof ContainerConfigError))
          this.#ctx.log(`${podKey(this.#pod)}: ${(error as Error).stack}`);
        this.#setWaiting(record, 'CreateContainerConfigError', (error as Error).message);
        await this.#sleep(this.#ctx.retryMs);
      }
    }
    return undefined;
  }

  async #execute(
    container: Container,
    record: ContainerRecord,
    resolved: ResolvedContainer,
  ): Promise<ProcessExit | undefined> {
    const logFile = this.layout.log(container.name, record.restartCount);
    const messageFile = this.layout.terminationLog(container.name);
    await writeFile(messageFile, '');
    this.#logFiles.set(container.name, logFile);
    // The node may have been "lost" while we pulled and configured: nothing starts until it is back.
    await this.#ctx.gate.wait(this.#stopping.signal);
    if (this.#stopping.signal.aborted) return undefined;
    const process = new ContainerProcess({ ...resolved, logFile });
    let markRecorded: () => void = () => {};
    const recorded = new Promise<void>((resolve) => {
      markRecorded = resolve;
    });
    const live: LiveContainer = { process, recorded };
    const startedAt = kubeTime();
    const containerID = `process://${randomBytes(32).toString('hex')}`;
    if (process.pid) {
      this.#live.set(container.name, live);
      record.containerID = containerID;
      if (record.state.terminated) record.lastState = { terminated: record.state.terminated };
      record.state = { running: { startedAt } };
      this.#report();
      // Stopped while spawning: it does not get to run.
      if (this.#stopping.signal.aborted) {
        live.cause = 'kubelet';
        live.process.kill(Date.now() >= this.#killAt ? 'SIGKILL' : 'SIGTERM');
      }
    }
    const exit = await process.exited;
    this.#live.delete(container.name);
    const terminated = await terminatedState({
      container,
      exit,
      cause: live.cause,
      exit137AsOOMKilled: this.#ctx.exit137AsOOMKilled,
      messageFile,
      logFile,
      startedAt,
      containerID,
    });
    record.state = { terminated };
    this.#report();
    markRecorded();
    return exit;
  }

  async #deletePod(): Promise<void> {
    if (this.#deleted || this.#closed.signal.aborted) return;
    this.#deleted = true;
    for (let attempt = 0; attempt < 10; attempt++) {
      await this.#ctx.gate.wait(this.#closed.signal);
      if (this.#closed.signal.aborted) return;
      try {
        await deletePodNow(this.#ctx.api, this.#pod);
        return;
      } catch (error) {
        this.#ctx.log(`deleting ${podKey(this.#pod)} failed: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
      }
    }
  }

  /** The container's log so far ('' before it started). */
  async logs(container?: string): Promise<string> {
    const file = this.logFile(container);
    return file ? readFile(file, 'utf8') : '';
  }
}
