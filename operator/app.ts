/**
 * operator/: the reconcilers (tool/, system/, toolrun/, schedule/) as a pure decide plus execute (which
 * applies its actions), the launchers of runs (launchers/: worker pool or runner Pods), outbox delivery
 * (outbox/: starts, chains, notifications) and retention. Never the API.
 *
 * May import: contract, config, engine, kube, store, platform, runs, runs/execution, tools, systems,
 * schedules.
 */
import { defaultOperatorSettings, type OperatorSettings } from '../config/config.ts';
import type { JsonObject } from '../contract/json.ts';
import type { KubeglueResources, ResourceClient } from '../kube/resources/index.ts';
import type { SecretStore } from '../kube/secrets/interface.ts';
import type { Pod, Secret } from '../kube/types.ts';
import { deriveKey } from '../platform/secret-box.ts';
import { JobSupervisor, type RunningJob } from '../platform/supervisor.ts';
import { runView, type UrlForFile } from '../runs/run-view.ts';
import type { ScheduleClock } from '../schedules/clock.ts';
import type { Store } from '../store/index.ts';
import { createEventRecorder, type EventSink } from './events.ts';
import type { ControllerHealth } from './health.ts';
import type { Launcher } from './launchers/launcher.ts';
import { PodLauncher, type RunnerAttemptReader, type RunTokenIssuer } from './launchers/pod.ts';
import type { OperatorMetrics, ToolRunStates } from './metrics.ts';
import { type ChainStarter, createChainDeadHandler, createChainHandler } from './outbox/chain.ts';
import { createNotifyHandler } from './outbox/notify.ts';
import { OutboxDelivery } from './outbox/outbox.ts';
import { createStartDeadHandler, createStartHandler } from './outbox/start.ts';
import { sweepRunRetention } from './retention.ts';
import { ScheduleController } from './schedule/controller.ts';
import type { ScheduledRunStarter } from './schedule/execute.ts';
import { SystemController } from './system/controller.ts';
import { ToolController } from './tool/controller.ts';
import { ToolRunController } from './toolrun/controller.ts';
import { buildRunnerPod } from './toolrun/pod.ts';

/** Result data included in a completion notification, at most (larger: `dataTruncated: true`). */
const NOTIFY_DATA_LIMIT_BYTES = 256 * 1024;

export interface OperatorDeps {
  store: Store;
  resources: KubeglueResources;
  namespace: string;
  launcher: Launcher;
  /** Starts chained runs (`options.webhookUrl: "tool:<id>"`). */
  chains: ChainStarter;
  /** Starts, records and cancels the runs of schedule ticks: with it, the ToolSchedule controller runs. */
  scheduledRuns?: ScheduledRunStarter;
  /** Who this process is when it claims a schedule's tick (distinct per process). */
  identity?: string;
  /** The schedules' clock (tests move it by hand). */
  scheduleClock?: ScheduleClock;
  urlFor: UrlForFile;
  masterKey: Buffer;
  notifySecret: string | undefined;
  notifyAllowPrivate: boolean;
  notifyRetryDelaysMs: readonly number[];
  maxAsyncRuns: number;
  toolRunRetentionMs: number;
  outboxRetentionMs: number;
  /**
   * Run retention (operator/retention.ts): ended runs, and earlier their results and files, are deleted
   * in small batches after these (0: kept). Without runRetentionMs nothing is swept.
   */
  runRetentionMs?: number;
  resultRetentionMs?: number;
  /** The other operator settings (config/); their defaults otherwise. */
  settings?: Partial<OperatorSettings>;
  /** Where Kubernetes Events go; the embedded deployment has none. */
  events?: EventSink;
  /** Credentials Secrets of Systems: with it, the System controller runs. */
  secrets?: SecretStore;
  /** Watch of the namespace's Secrets (Kubernetes): Systems are re-checked when theirs changes. */
  secretWatch?: Pick<ResourceClient<Secret>, 'list' | 'watch'>;
  /** Runs outbox delivery, retention and the prunes (platform/supervisor.ts); one of its own otherwise. */
  jobs?: JobSupervisor;
  /** Counts ToolRun ends for /metrics (Kubernetes). */
  metrics?: Pick<OperatorMetrics, 'toolRunFinished'>;
  log: (line: string) => void;
}

export interface Operator {
  /** Informers and queues of the controllers, for /metrics. */
  health(): ControllerHealth;
  /** ToolRuns by admission state (the async queue), for /metrics. */
  toolRunStates(): ToolRunStates;
  /** Interrupts the runs this process still executes, waits until each is recorded, stops the loops. */
  close(): Promise<void>;
}

/**
 * The Kubernetes launcher: runner Pods built from the settings, per-run tokens hashed in the store
 * (`store` is both the issuer and the heartbeat reader), plain in Secrets the ToolRuns own.
 */
export function createPodLauncher(deps: {
  pods: ResourceClient<Pod>;
  secrets: ResourceClient<Secret>;
  store: RunTokenIssuer & RunnerAttemptReader;
  settings: OperatorSettings;
  metrics?: Pick<OperatorMetrics, 'podCreated' | 'podStarted'>;
  log?: (line: string) => void;
}): PodLauncher {
  return new PodLauncher({
    pods: deps.pods,
    secrets: deps.secrets,
    tokens: deps.store,
    attempts: deps.store,
    buildPod: (toolRun, attempt, names) => buildRunnerPod(toolRun, attempt, names, deps.settings),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.log ? { log: deps.log } : {}),
  });
}

/** `whsec_<base64>` (Standard Webhooks) or any other text as its bytes; else derived from the master key. */
export function notificationSigningKey(secret: string | undefined, masterKey: Buffer): Buffer {
  if (!secret) return deriveKey(masterKey, 'kubeglue/notifications/v1');
  return secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

/** The Run a completion notification carries: no credentials, `data` for successful runs up to a cap. */
function notificationBody(store: Store, urlFor: UrlForFile) {
  return async (runId: string): Promise<JsonObject | undefined> => {
    const run = await store.getRun(runId);
    if (!run) return undefined;
    const view = runView(run, { urlFor }) as unknown as JsonObject;
    if (run.status !== 'success') return view;
    const result = await store.getRunResult(runId);
    const data = result?.data ?? null;
    return Buffer.byteLength(JSON.stringify(data)) <= NOTIFY_DATA_LIMIT_BYTES
      ? { ...view, data }
      : { ...view, dataTruncated: true };
  };
}

/**
 * The operator's loops: the ToolRun, Tool, ToolSchedule and System controllers and the outbox delivery
 * (starts, notifications, chains).
 */
export async function startOperator(deps: OperatorDeps): Promise<Operator> {
  const { store, resources, namespace, log } = deps;
  const settings: OperatorSettings = {
    ...defaultOperatorSettings(),
    maxAsyncRuns: deps.maxAsyncRuns,
    toolRunRetentionMs: deps.toolRunRetentionMs,
    ...deps.settings,
  };
  const events = createEventRecorder({ sink: deps.events, log });
  const jobs = deps.jobs ?? new JobSupervisor({ log });
  const controller = new ToolRunController({
    toolRuns: resources.toolRuns,
    store,
    launcher: deps.launcher,
    events,
    settings,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    log,
  });
  const resourceControllers: {
    start(): Promise<void>;
    stop(): Promise<void>;
    health(): ControllerHealth;
  }[] = [
    new ToolController({
      tools: resources.tools,
      systems: resources.systems,
      events,
      resyncMs: settings.resyncMs,
      log,
    }),
  ];
  if (deps.scheduledRuns) {
    resourceControllers.push(
      new ScheduleController({
        toolSchedules: resources.toolSchedules,
        tools: resources.tools,
        store,
        runs: deps.scheduledRuns,
        events,
        jobs,
        identity: deps.identity ?? `operator/${namespace}`,
        ...(deps.scheduleClock ? { clock: deps.scheduleClock } : {}),
        resyncMs: settings.resyncMs,
        log,
      }),
    );
  }
  if (deps.secrets) {
    resourceControllers.push(
      new SystemController({
        systems: resources.systems,
        secrets: deps.secrets,
        ...(deps.secretWatch ? { secretWatch: deps.secretWatch } : {}),
        events,
        resyncMs: settings.resyncMs,
        log,
      }),
    );
  }
  const notify = createNotifyHandler({
    renderRun: notificationBody(store, deps.urlFor),
    signingKey: notificationSigningKey(deps.notifySecret, deps.masterKey),
    allowPrivate: deps.notifyAllowPrivate,
    retryDelaysMs: deps.notifyRetryDelaysMs,
  });
  const outbox = new OutboxDelivery({
    store,
    log,
    jobs,
    handlers: {
      start: createStartHandler({ store, resources, namespace }),
      notify,
      chain: createChainHandler({ store, starter: deps.chains }),
    },
    onDead: {
      start: createStartDeadHandler({ store, resources }),
      chain: createChainDeadHandler({ store, starter: deps.chains }),
    },
  });
  await controller.start();
  for (const resourceController of resourceControllers) await resourceController.start();
  await outbox.start();
  const pruneEvery = Math.min(60 * 60 * 1000, deps.outboxRetentionMs);
  const periodic: RunningJob[] = [
    // Delivered and abandoned completion effects are kept a while for inspection, then dropped.
    jobs.every({
      job: 'outbox-prune',
      intervalMs: pruneEvery,
      runAtStart: false,
      run: async () => {
        await store.pruneOutbox(new Date(Date.now() - deps.outboxRetentionMs).toISOString());
      },
    }),
    // Runtime credentials whose run ended without the executor removing them (it crashed, say).
    jobs.every({
      job: 'run-credentials-prune',
      intervalMs: pruneEvery,
      runAtStart: false,
      run: async () => {
        await store.pruneRunCredentials();
      },
    }),
  ];
  const retention = startRetentionSweeps(deps, jobs);
  if (retention) periodic.push(retention);

  return {
    toolRunStates: () => controller.states(),
    health: () => {
      const parts = [controller.health(), ...resourceControllers.map((c) => c.health())];
      return {
        informers: parts.flatMap((part) => part.informers),
        queues: Object.assign({}, ...parts.map((part) => part.queues)),
      };
    },
    close: async () => {
      await Promise.all(periodic.map((job) => job.stop()));
      await controller.stop();
      for (const resourceController of resourceControllers) await resourceController.stop();
      await outbox.stop();
      await notify.close();
    },
  };
}

/** Run retention: a sweep at start, then every hour; one sweep at a time, stopped between batches on close. */
function startRetentionSweeps(deps: OperatorDeps, jobs: JobSupervisor): RunningJob | undefined {
  const runRetentionMs = deps.runRetentionMs;
  if (runRetentionMs === undefined) return undefined;
  return jobs.every({
    job: 'retention',
    intervalMs: 60 * 60 * 1000,
    run: async (signal) => {
      const { runs, outputs } = await sweepRunRetention({
        store: deps.store,
        runRetentionMs,
        resultRetentionMs: deps.resultRetentionMs ?? 0,
        signal,
      });
      if (runs + outputs > 0) deps.log(`retention: deleted ${runs} runs, ${outputs} results and files`);
    },
  });
}
