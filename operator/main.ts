/**
 * `kubeglue operator`: the reconcilers (Tool, System, ToolSchedule, ToolRun), runner Pods, outbox delivery and
 * retention against a Kubernetes API server and the Postgres store. Replicas elect one leader through
 * a Lease; only the leader acts, and a leader that loses its Lease exits so it restarts clean.
 */
import { randomBytes } from 'node:crypto';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { operatorSettings } from '../config/config.ts';
import { createLogger } from '../contract/log.ts';
import { openClusterProcess } from '../kube/cluster-process.ts';
import { registerInformerMetrics, registerWorkQueueMetrics } from '../kube/controller-metrics.ts';
import { LeaderElector } from '../kube/lease.ts';
import {
  createClusterResources,
  EVENT_KIND,
  LEASE_KIND,
  POD_KIND,
  SECRET_KIND,
} from '../kube/resources/index.ts';
import { ClusterSecretStore } from '../kube/secrets/cluster.ts';
import { registerJobMetrics } from '../platform/job-metrics.ts';
import { installLastResortHandlers } from '../platform/last-resort.ts';
import { serveMetrics } from '../platform/metrics.ts';
import { JobSupervisor } from '../platform/supervisor.ts';
import { masterKeySigner } from '../runs/file-urls.ts';
import { openStore } from '../store/index.ts';
import { createPodLauncher, type Operator, startOperator } from './app.ts';
import { createClusterRunStarters } from './cluster-runs.ts';
import { registerOperatorMetrics, registerToolRunStates } from './metrics.ts';

const log = createLogger('operator');

export async function main(_args: string[]): Promise<void> {
  const opened = await openClusterProcess('operator', { log });
  const { databaseUrl, masterKey, keys, transport, resources } = opened;
  const settings = operatorSettings(opened.settings);
  const namespace = settings.namespace;
  const core = createClusterResources(transport, {
    namespace,
    kinds: { secrets: SECRET_KIND, pods: POD_KIND, leases: LEASE_KIND, events: EVENT_KIND },
  });
  const store = await openStore({ driver: 'pg', url: databaseUrl }, { onProgress: log });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kubeglue_operator_' });
  const operatorMetrics = registerOperatorMetrics(registry);
  const leading = new Gauge({
    name: 'kubeglue_operator_leader',
    help: '1 while this replica holds the leader Lease',
    registers: [registry],
  });
  let operator: Operator | undefined;
  let chains: Awaited<ReturnType<typeof createClusterRunStarters>> | undefined;
  // /healthz there too: the operator has no other port.
  const metricsServer = await serveMetrics(registry, {
    host: settings.metricsHost ?? settings.host,
    port: settings.metricsPort,
    health: true,
  });
  const identity = `${settings.podName}_${randomBytes(4).toString('hex')}`;
  // Outbox delivery, retention and the prunes: their failures are recorded, never fatal.
  const jobs = new JobSupervisor({ settings: settings.jobs, log });
  registerJobMetrics(registry, () => jobs.status());

  /** Leadership comes at most once per process (a lost Lease exits), so this runs once. */
  const lead = async (): Promise<Operator> => {
    const signer = masterKeySigner(
      masterKey,
      settings.publicUrl ?? `http://${settings.host}:${settings.port}`,
    );
    const urlFor = (runId: string, fileKey: string) => signer.sign(runId, fileKey).url;
    const secrets = new ClusterSecretStore({ secrets: core.secrets, namespace });
    chains = await createClusterRunStarters({
      store,
      resources,
      secrets,
      masterKey,
      urlFor,
      executor: `operator/${identity}`,
    });
    const started = await startOperator({
      jobs,
      store,
      resources,
      namespace,
      launcher: createPodLauncher({
        pods: core.pods,
        secrets: core.secrets,
        store,
        settings,
        metrics: operatorMetrics,
        log,
      }),
      metrics: operatorMetrics,
      chains,
      scheduledRuns: chains.scheduled,
      identity: `operator/${identity}`,
      urlFor,
      masterKey,
      notifySecret: settings.notifySecret ?? keys.notifySecret,
      notifyAllowPrivate: settings.notifyAllowPrivate,
      notifyRetryDelaysMs: settings.notifyRetryDelaysMs,
      maxAsyncRuns: settings.maxAsyncRuns,
      toolRunRetentionMs: settings.toolRunRetentionMs,
      outboxRetentionMs: settings.outboxRetentionMs,
      runRetentionMs: settings.runRetentionMs,
      resultRetentionMs: settings.resultRetentionMs,
      settings,
      events: core.events,
      secrets,
      secretWatch: core.secrets,
      log,
    });
    const health = started.health();
    registerInformerMetrics(registry, health.informers);
    registerWorkQueueMetrics(registry, health.queues);
    registerToolRunStates(registry, () => started.toolRunStates());
    return started;
  };

  let stopping = false;
  const shutdown = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    await operator?.close().catch((error: unknown) => {
      log(`stopping the controllers failed: ${(error as Error).message}`);
    });
    await chains?.close();
    await jobs.stop();
    await elector.stop();
    await store.close();
    await transport.close();
    await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    process.exit(exitCode);
  };

  const elector = new LeaderElector({
    leases: core.leases,
    name: settings.lease.name,
    identity,
    leaseDurationMs: settings.lease.durationMs,
    renewDeadlineMs: settings.lease.renewDeadlineMs,
    retryPeriodMs: settings.lease.retryMs,
    log,
    onNewLeader: (holder) =>
      log(holder === identity ? 'this replica leads' : `the leader is ${holder || 'nobody'}`),
    onStartedLeading: () => {
      leading.set(1);
      lead().then(
        (started) => {
          operator = started;
          log(`reconciling Tools, Systems, ToolSchedules and ToolRuns in namespace ${namespace}`);
          if (stopping) void started.close();
        },
        (error: unknown) => {
          log(`failed to start the controllers: ${(error as Error).message}`);
          void shutdown(1);
        },
      );
    },
    onStoppedLeading: (reason) => {
      leading.set(0);
      if (reason === 'lost') {
        // Another replica may already act: stop at once and start over, never act on stale state.
        log('lost the leader Lease; exiting so that this replica restarts as a candidate');
        void shutdown(1);
      }
    },
  });
  elector.start();
  log(`waiting for the leader Lease ${settings.lease.name} as ${identity}`);

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log(`${signal}: releasing the Lease and stopping`);
      void shutdown(0);
    });
  }
  // What nothing caught: a rejection is logged, an exception releases the Lease and exits 1.
  installLastResortHandlers({ log, shutdown: () => shutdown(1), hardExitMs: 30_000 });
}
