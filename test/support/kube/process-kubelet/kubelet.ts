import { mkdtempSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type ApiConnection, KubeApi } from './api.ts';
import { type ImageEntry, type ImageSpec, parseQuantity, toImageSpec } from './config.ts';
import { NodeGate } from './gate.ts';
import { NodeAgent } from './node.ts';
import { PodSource } from './pods.ts';
import { bindPod, deletePodNow, markUnschedulable } from './scheduler.ts';
import { type Pod, type PodPhase, podKey } from './types.ts';
import { PodWorker, type WorkerContext } from './worker.ts';

/*
 * The process kubelet: node, scheduler and kubelet for a test control plane that has none, running
 * each Pod's containers as local child processes.
 *
 * How a "container" maps onto a process:
 * - argv: the image's entrypoint (from `images`) + `args`, or `command` + `args`; `$(VAR)` expanded.
 * - env: PATH, KUBERNETES_SERVICE_HOST/PORT (the real API server), HOSTNAME, HOME and TMPDIR (in the
 *   Pod dir), the `env` option, the image's env, then envFrom and env as Kubernetes resolves them.
 *   Nothing else leaks in from the test process.
 * - files: every Pod gets <workDir>/pods/<ns>_<name>_<uid>/ with volumes/<volume>/ (Secret,
 *   ConfigMap, emptyDir; the ServiceAccount token Secret too), tmp/, home/ and
 *   containers/<container>/ (<restartCount>.log, termination-log). Processes share our filesystem,
 *   so in-container absolute paths (mountPaths, /tmp, terminationMessagePath) are rewritten to those
 *   dirs wherever they start a path in env values, command, args and workingDir. A host path under
 *   /tmp passed in args is therefore mapped too: pass such paths outside /tmp, or use the Pod dir.
 * - one process group per container, SIGTERM/SIGKILL to the group; children never outlive the test
 *   process (exit handler plus a watchdog process for hard deaths).
 *
 * Modules: -api (REST + watch), -pods (list/watch), -node (Node + Lease heartbeat), -scheduler
 * (binding, unschedulable, final delete), -worker (one Pod's life), -config (env, volumes, argv),
 * -paths (path mapping, $(VAR)), -process (child processes), -status (status composition and
 * writes), -gate (node lost), -types.
 */

export type { ImageEntry, ImageSpec } from './config.ts';
export type { ContainerStatus, Pod, PodCondition, PodPhase, PodStatus } from './types.ts';

export interface ProcessKubeletOptions extends ApiConnection {
  /**
   * Name of the Node to register (default `process-kubelet`). Kubelets sharing a control plane need
   * distinct names: each runs every Pod bound to its name.
   */
  nodeName?: string;
  /**
   * Only schedule Pods of these namespaces (default: every namespace). Lets test files that share
   * one control plane each run their own kubelet without stealing each other's Pods.
   */
  namespaces?: string[];
  /**
   * Image reference → local entrypoint argv (or a Docker-like ImageSpec with default args, working
   * dir and env). `command` replaces the entrypoint, `args` replace the default args.
   */
  images: Record<string, ImageEntry>;
  /** Where Pod dirs (volumes, /tmp, logs) go; default a fresh temp dir, removed by stop(). */
  workDir?: string;
  log?: (line: string) => void;
  /** Report any container that died of SIGKILL (exit 137) as OOMKilled, as a cgroup OOM kill looks. */
  exit137AsOOMKilled?: boolean;
  /** Variables every container starts with (after PATH and KUBERNETES_SERVICE_*; the Pod's own win). */
  env?: Record<string, string>;
  /** Node status + Lease heartbeat period (default 5000 ms). */
  heartbeatMs?: number;
  /** Restart backoff of Always/OnFailure containers (default 500 ms doubling to 5000 ms). */
  restartBackoffMs?: { initial: number; max: number };
  /** How often waiting containers retry images, config and volumes (default 1000 ms). */
  retryMs?: number;
  /** stop(): SIGTERM, then SIGKILL after this many seconds (default 2). */
  stopGraceSeconds?: number;
}

export type PodPredicate = (pod: Pod) => boolean;

/** A Pod this kubelet runs (or ran), for tests. */
export interface ProcessPodInfo {
  namespace: string;
  name: string;
  uid: string;
  phase: PodPhase | undefined;
  /** The Pod's directory: volumes/, tmp/, home/, containers/<name>/{<restart>.log,termination-log}. */
  dir: string;
  /** Process ids of the running containers, by container name. */
  pids: Record<string, number>;
  /** resources.limits.memory in bytes, by container name: information only, nothing enforces it. */
  memoryLimits: Record<string, number>;
}

export interface ProcessKubelet {
  readonly nodeName: string;
  readonly workDir: string;
  /** Pods bound to this node that it knows (running or finished, not yet deleted). */
  pods(): ProcessPodInfo[];
  /** The newest version of a Pod seen on the watch (any node), or undefined. */
  pod(namespace: string, name: string): Pod | undefined;
  /** Resolves with the Pod (undefined once deleted) as soon as `predicate` holds; rejects after `timeoutMs`. */
  waitFor(
    namespace: string,
    name: string,
    predicate: (pod: Pod | undefined) => boolean,
    timeoutMs?: number,
  ): Promise<Pod | undefined>;
  /** stdout+stderr of the container's latest run (default: the first container). */
  logs(namespace: string, name: string, container?: string): Promise<string>;
  /** Adds or replaces an image; Pods waiting in ImagePullBackOff for it start. */
  setImage(reference: string, entry: ImageEntry): void;
  /** SIGKILL the running container(s) and report OOMKilled / 137. Resolves once the status is written. */
  oomKill(namespace: string, name: string, container?: string): Promise<void>;
  /** Kill the Pod's processes and fail it with reason Evicted. Resolves once the status is written. */
  evict(namespace: string, name: string): Promise<void>;
  /** Matching Pods are bound but never start (waiting ImagePullBackOff); null clears. */
  neverStart(predicate: PodPredicate | null): void;
  /** Matching Pods are not bound (PodScheduled=False, Unschedulable); null clears. */
  unschedulable(predicate: PodPredicate | null): void;
  /** Kill every process silently and stop heartbeats and API writes until nodeRestored(). */
  nodeLost(): void;
  nodeRestored(): Promise<void>;
  /** Kill every process, stop watching and heartbeating; leaves the API objects as they are. */
  stop(): Promise<void>;
}

function isTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** docker.io/library/x:latest, docker.io/x:latest, x:latest and x name the same image. */
function imageCandidates(reference: string): string[] {
  const candidates = new Set([reference]);
  const short = reference.replace(/^docker\.io\/(library\/)?/, '');
  candidates.add(short);
  const hasTag = /:[^/]+$/.test(short) || short.includes('@');
  if (hasTag && short.endsWith(':latest')) candidates.add(short.slice(0, -':latest'.length));
  if (!hasTag) candidates.add(`${short}:latest`);
  return [...candidates];
}

class Kubelet implements ProcessKubelet {
  readonly nodeName: string;
  readonly workDir: string;
  readonly #ownsWorkDir: boolean;
  readonly #options: ProcessKubeletOptions;
  readonly #api: KubeApi;
  readonly #node: NodeAgent;
  readonly #source: PodSource;
  readonly #gate = new NodeGate();
  readonly #images = new Map<string, ImageSpec>();
  readonly #log: (line: string) => void;
  /** Active workers by Pod UID. */
  readonly #workers = new Map<string, PodWorker>();
  /** The newest worker by namespace/name, kept after deletion so tests can read logs. */
  readonly #history = new Map<string, PodWorker>();
  readonly #byName = new Map<string, Pod>();
  readonly #watchers = new Map<string, Set<() => void>>();
  readonly #binding = new Set<string>();
  readonly #markedUnschedulable = new Set<string>();
  readonly #context: WorkerContext;
  #neverStart: PodPredicate | null = null;
  #unschedulable: PodPredicate | null = null;
  #lost = false;
  #stopped = false;

  constructor(options: ProcessKubeletOptions) {
    this.#options = options;
    this.nodeName = options.nodeName ?? 'process-kubelet';
    this.#ownsWorkDir = options.workDir === undefined;
    this.workDir = resolve(options.workDir ?? mkdtempSync(join(tmpdir(), 'process-kubelet-')));
    this.#log = options.log ?? (() => {});
    for (const [reference, entry] of Object.entries(options.images))
      this.#images.set(reference, toImageSpec(entry));
    this.#api = new KubeApi(options);
    this.#node = new NodeAgent(this.#api, this.nodeName, options.heartbeatMs ?? 5_000, this.#log);
    this.#source = new PodSource(this.#api, (type, pod) => this.#onPod(type, pod), this.#log);
    const server = new URL(options.url);
    this.#context = {
      api: this.#api,
      workDir: this.workDir,
      gate: this.#gate,
      log: this.#log,
      image: (reference) => {
        for (const candidate of imageCandidates(reference)) {
          const image = this.#images.get(candidate);
          if (image) return image;
        }
        return undefined;
      },
      neverStart: (pod) => this.#neverStart?.(pod) ?? false,
      exit137AsOOMKilled: options.exit137AsOOMKilled ?? false,
      baseEnv: {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        // The API server really is here; the in-cluster "kubernetes" Service address routes nowhere.
        KUBERNETES_SERVICE_HOST: server.hostname,
        KUBERNETES_SERVICE_PORT: server.port || '443',
        KUBERNETES_SERVICE_PORT_HTTPS: server.port || '443',
        ...options.env,
      },
      restartBackoffMs: options.restartBackoffMs ?? { initial: 500, max: 5_000 },
      retryMs: options.retryMs ?? 1_000,
    };
  }

  async start(): Promise<void> {
    await mkdir(this.workDir, { recursive: true });
    await this.#node.start();
    await this.#source.start();
  }

  #onPod(type: 'UPSERT' | 'DELETED', pod: Pod): void {
    const key = podKey(pod);
    const uid = pod.metadata.uid ?? '';
    if (type === 'DELETED') {
      if (this.#byName.get(key)?.metadata.uid === uid) this.#byName.delete(key);
      this.#workers.get(uid)?.gone();
      this.#workers.delete(uid);
      this.#markedUnschedulable.delete(uid);
    } else {
      this.#byName.set(key, pod);
    }
    for (const watcher of this.#watchers.get(key) ?? []) watcher();
    if (type === 'UPSERT') this.#sync(pod);
  }

  /** Decides what a Pod needs from us: binding, running, or nothing. */
  #sync(pod: Pod): void {
    if (this.#stopped || this.#lost) return;
    if (!pod.spec.nodeName) {
      const { namespaces } = this.#options;
      if (!namespaces || namespaces.includes(pod.metadata.namespace ?? 'default')) this.#schedule(pod);
    } else if (pod.spec.nodeName === this.nodeName) this.#run(pod);
  }

  #schedule(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    if (pod.metadata.deletionTimestamp || isTerminal(pod) || this.#binding.has(uid)) return;
    if (this.#unschedulable?.(pod)) {
      if (this.#markedUnschedulable.has(uid)) return;
      this.#markedUnschedulable.add(uid);
      markUnschedulable(this.#api, pod).catch((error: Error) => {
        this.#markedUnschedulable.delete(uid);
        this.#log(`marking ${podKey(pod)} unschedulable failed: ${error.message}`);
      });
      return;
    }
    this.#binding.add(uid);
    const retry = () => setTimeout(() => this.#resync(), 1_000).unref();
    bindPod(this.#api, pod, this.nodeName)
      .then((outcome) => {
        if (outcome === 'retry') retry();
      })
      .catch((error: Error) => {
        this.#log(`binding ${podKey(pod)} failed: ${error.message}; retrying`);
        retry();
      })
      .finally(() => this.#binding.delete(uid));
  }

  #run(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    let worker = this.#workers.get(uid);
    if (!worker) {
      // Finished before this kubelet saw it: nothing to run, only the deletion to complete.
      if (isTerminal(pod)) {
        if (pod.metadata.deletionTimestamp) {
          deletePodNow(this.#api, pod).catch((error: Error) =>
            this.#log(`deleting ${podKey(pod)}: ${error.message}`),
          );
        }
        return;
      }
      worker = new PodWorker(this.#context, pod);
      this.#workers.set(uid, worker);
      this.#history.set(podKey(pod), worker);
    }
    worker.update(pod);
  }

  #resync(): void {
    for (const pod of this.#source.values()) this.#sync(pod);
  }

  #worker(namespace: string, name: string): PodWorker {
    const worker = this.#history.get(`${namespace}/${name}`);
    if (!worker) throw new Error(`process kubelet ${this.nodeName} has not run pod ${namespace}/${name}`);
    return worker;
  }

  pods(): ProcessPodInfo[] {
    return [...this.#workers.values()].map((worker) => ({
      namespace: worker.pod.metadata.namespace ?? 'default',
      name: worker.pod.metadata.name,
      uid: worker.pod.metadata.uid ?? '',
      phase: worker.pod.status?.phase,
      dir: worker.layout.root,
      pids: worker.pids(),
      memoryLimits: Object.fromEntries(
        worker.pod.spec.containers.flatMap((c) => {
          const limit = c.resources?.limits?.memory;
          return limit ? [[c.name, parseQuantity(limit)]] : [];
        }),
      ),
    }));
  }

  pod(namespace: string, name: string): Pod | undefined {
    return this.#byName.get(`${namespace}/${name}`);
  }

  waitFor(
    namespace: string,
    name: string,
    predicate: (pod: Pod | undefined) => boolean,
    timeoutMs = 20_000,
  ): Promise<Pod | undefined> {
    const key = `${namespace}/${name}`;
    return new Promise((resolvePod, reject) => {
      const watchers = this.#watchers.get(key) ?? new Set();
      this.#watchers.set(key, watchers);
      const done = () => {
        clearTimeout(timer);
        watchers.delete(check);
        if (watchers.size === 0) this.#watchers.delete(key);
      };
      const check = () => {
        const pod = this.#byName.get(key);
        let ok: boolean;
        try {
          ok = predicate(pod);
        } catch (error) {
          done();
          reject(error);
          return;
        }
        if (ok) {
          done();
          resolvePod(pod);
        }
      };
      const timer = setTimeout(() => {
        done();
        const pod = this.#byName.get(key);
        reject(
          new Error(`timed out waiting for pod ${key}; last seen: ${JSON.stringify(pod?.status ?? null)}`),
        );
      }, timeoutMs);
      watchers.add(check);
      check();
    });
  }

  logs(namespace: string, name: string, container?: string): Promise<string> {
    return this.#worker(namespace, name).logs(container);
  }

  setImage(reference: string, entry: ImageEntry): void {
    this.#images.set(reference, toImageSpec(entry));
    for (const worker of this.#workers.values()) worker.wake();
  }

  oomKill(namespace: string, name: string, container?: string): Promise<void> {
    return this.#worker(namespace, name).oomKill(container);
  }

  evict(namespace: string, name: string): Promise<void> {
    return this.#worker(namespace, name).fail({
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
  }

  neverStart(predicate: PodPredicate | null): void {
    this.#neverStart = predicate;
    for (const worker of this.#workers.values()) worker.wake();
  }

  unschedulable(predicate: PodPredicate | null): void {
    this.#unschedulable = predicate;
    this.#markedUnschedulable.clear();
    this.#resync();
  }

  nodeLost(): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#gate.close();
    this.#node.pause();
    for (const worker of this.#workers.values()) worker.loseProcesses();
  }

  async nodeRestored(): Promise<void> {
    if (!this.#lost) return;
    this.#lost = false;
    this.#gate.open();
    await this.#node.resume();
    this.#resync();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#source.stop();
    await this.#node.stop();
    const grace = this.#options.stopGraceSeconds ?? 2;
    await Promise.all([...this.#workers.values()].map((worker) => worker.shutdown(grace)));
    await this.#api.close();
    if (this.#ownsWorkDir) await rm(this.workDir, { recursive: true, force: true });
  }
}

/**
 * Starts a process kubelet: a Node, a scheduler and a kubelet in one, running each Pod's
 * containers as local child processes. Resolves once the Node is registered and the first Pod list
 * has been handled.
 */
export async function startProcessKubelet(options: ProcessKubeletOptions): Promise<ProcessKubelet> {
  const kubelet = new Kubelet(options);
  try {
    await kubelet.start();
  } catch (error) {
    await kubelet.stop();
    throw error;
  }
  return kubelet;
}
