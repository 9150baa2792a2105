/**
 * `kubeglue api`: the /v1 API on Kubernetes. Tools and Systems are resources on the API server (read
 * through informers), System credentials live in Secrets the Systems own, runs live in Postgres, sync
 * runs execute in this process's worker pool, and runner Pods talk to the internal port.
 */
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { poolSettings } from '../config/config.ts';
import { createLogger } from '../contract/log.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { openClusterProcess } from '../kube/cluster-process.ts';
import { createClusterResources, SECRET_KIND } from '../kube/resources/index.ts';
import { ClusterSecretStore } from '../kube/secrets/cluster.ts';
import { installLastResortHandlers } from '../platform/last-resort.ts';
import { serveMetrics } from '../platform/metrics.ts';
import { JobSupervisor } from '../platform/supervisor.ts';
import { openTraceExport } from '../platform/traces.ts';
import { listenForCancels } from '../runs/cancel.ts';
import { masterKeySigner } from '../runs/file-urls.ts';
import { identityIssuer } from '../runs/identity/issuer.ts';
import { syncRunError } from '../runs/interrupted.ts';
import { RECOVERY_SWEEP_MS } from '../runs/recovery.ts';
import { StoreRuntimeCredentialVault } from '../runs/runtime-credentials.ts';
import { openStore } from '../store/index.ts';
import type { SystemService } from '../systems/service.ts';
import { ensureAdminKey, generateApiKey } from './api-keys.ts';
import { createApi } from './app.ts';
import { startGateways } from './gateway/index.ts';
import { runnerStreamCheck } from './gateway/runner-access.ts';
import { buildInternalServer } from './internal/server.ts';
import { loadTls } from './tls.ts';

const log = createLogger('api');
// Only sync runs execute in an API replica: their caller's connection went with it (runs/interrupted.ts).
const RECOVERY_MESSAGE = syncRunError('The API replica executing this run stopped before it finished');

export async function main(_args: string[]): Promise<void> {
  const { settings, databaseUrl, masterKey, keys, transport, resources } = await openClusterProcess('api', {
    newAdminKey: generateApiKey,
    log,
  });
  const namespace = settings.namespace;
  const core = createClusterResources(transport, { namespace, kinds: { secrets: SECRET_KIND } });
  const store = await openStore({ driver: 'pg', url: databaseUrl }, { onProgress: log });
  await ensureAdminKey(store, { presetKey: settings.adminKey ?? keys.adminKey, log });

  // Sync runs of this replica are failed by the next replica that finds this executor gone.
  const executor = `api/${settings.podName}/${process.pid}/${Date.now()}`;
  const liveness = await store.holdExecutorLock(executor);
  const recover = async () => {
    const recovered = await store.failRunsOfDeadExecutors({
      prefix: 'api/',
      error: RECOVERY_MESSAGE,
      completedAt: new Date().toISOString(),
    });
    if (recovered.length > 0)
      log(`recovery: failed ${recovered.length} run(s) of API replicas that are gone`);
  };
  await recover();
  // A replica that dies while the others keep running is noticed by the next sweep of any of them.
  const sweep = setInterval(() => {
    recover().catch((error: unknown) => log(`recovery sweep failed: ${(error as Error).message}`));
  }, RECOVERY_SWEEP_MS).unref();

  // Tunnels are held by one replica each and reached from every replica and from runner Pods. The
  // relay starts before the API, which knows the systems: until then a runner's stream is refused.
  let gatewaysOfSystems: SystemService['gatewaysForRun'] | undefined;
  const gateways = await startGateways({
    settings,
    log,
    runners: runnerStreamCheck({
      findRunnerAttemptByToken: (tokenHash) => store.findRunnerAttemptByToken(tokenHash),
      getRun: (runId) => store.getRun(runId),
      gatewaysForRun: async (ids, mode) => {
        if (!gatewaysOfSystems) throw new Error('the API is starting');
        return gatewaysOfSystems(ids, mode);
      },
    }),
    shared: {
      tunnels: store.gatewayTunnels,
      masterKey,
    },
  });
  const pool = new WorkerPool({ ...poolSettings(settings), gatewayRelay: gateways.relay.address, log });
  await pool.start();

  const tls = await loadTls(settings.tls);
  const publicUrl = settings.publicUrl ?? `${tls ? 'https' : 'http'}://${settings.host}:${settings.port}`;
  const signer = masterKeySigner(masterKey, publicUrl);
  const vault = new StoreRuntimeCredentialVault({ store, masterKey });
  const identity = identityIssuer({ store, masterKey, settings: settings.identity, publicUrl });
  // Documentation processing and its sweep: their failures are recorded, never fatal.
  const jobs = new JobSupervisor({ settings: settings.jobs, log });
  // The OpenTelemetry SDK is loaded only when an OTLP endpoint is set (docs/operations.md).
  const traces = await openTraceExport(settings.traces, log);
  const api = await createApi({
    jobs,
    store,
    resources,
    secrets: new ClusterSecretStore({ secrets: core.secrets, namespace }),
    vault,
    pool,
    signer,
    namespace,
    executor,
    maxSyncRuns: settings.maxSyncRuns,
    traces,
    budgetSlotPollMs: settings.budgetSlotPollMs,
    stateLimits: settings.toolState,
    mcpListPageBytes: settings.mcpListPageBytes,
    scheduleLimits: settings.schedules,
    bodyLimitBytes: settings.bodyLimitBytes,
    logLevel: settings.logLevel,
    requestLog: settings.requestLog,
    dashboardDir: settings.uiDir,
    log,
    documentation: { egress: settings.egress, limits: settings.documentation },
    oauth: { masterKey, publicUrl, egress: settings.egress },
    identity,
    gateways,
    tls,
    // Live run events reach a log stream on any replica.
    eventBus: { publish: (payload) => store.publishRunEvent(payload), subscribe: (l) => store.onRunEvent(l) },
  });
  gatewaysOfSystems = (ids, mode) => api.systems.gatewaysForRun(ids, mode);
  const stopCancels = await listenForCancels(store, api.runs);
  const internal = buildInternalServer({
    store,
    resolveSystems: (ids, mode) => api.systems.resolveForRun(ids, mode),
    takeRuntimeCredentials: (runId) => vault.get(runId),
    dropRuntimeCredentials: (runId) => vault.delete(runId),
    metrics: api.metrics,
    events: api.events,
    traces,
    ...(api.oauth ? { accessToken: api.oauth.accessToken.bind(api.oauth) } : {}),
    identityToken: (run, audience) => identity.forRun(run)(audience),
    budgets: api.budgets,
    bodyLimitBytes: settings.internalBodyLimitBytes,
    stateLimits: settings.toolState,
    logLevel: settings.logLevel,
    log,
  });

  await api.app.listen({ host: settings.host, port: settings.port });
  await internal.listen({ host: settings.internalHost ?? settings.host, port: settings.internalPort });
  // Not on the /v1 port: whoever may reach the API (an Ingress routes / there) must not reach these.
  const metricsServer = await serveMetrics(api.metrics.registry, {
    host: settings.metricsHost ?? settings.host,
    port: settings.metricsPort,
  });
  api.setReady(true);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: shutting down (in-flight runs get ${settings.shutdownGraceMs} ms to finish)`);
    api.setReady(false);
    clearInterval(sweep);
    // Still listening while the endpoints drain: a Pod being replaced is taken out of its Service's
    // endpoints only after the SIGTERM, and requests routed to it meanwhile must not be refused.
    if (settings.shutdownDelayMs > 0)
      await new Promise((resolve) => setTimeout(resolve, settings.shutdownDelayMs));
    // Sync runs still executing after the grace fail saying the server shut down (not "cancelled").
    const grace = setTimeout(() => api.runs.interruptAll(), settings.shutdownGraceMs);
    await Promise.all([
      api.app.close(),
      internal.close(),
      new Promise<void>((resolve) => metricsServer.close(() => resolve())),
    ]);
    clearTimeout(grace);
    await stopCancels();
    await api.close();
    await jobs.stop();
    await pool.close();
    // The spans of the runs that just ended go out before the process does.
    await traces?.shutdown();
    await liveness.release();
    await store.close();
    await transport.close();
    log('stopped');
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stop(signal).catch((error: unknown) => {
        log.error(`shutdown failed: ${(error as Error).message}`);
        process.exitCode = 1;
      });
    });
  }
  // What nothing caught: a rejection is logged, an exception shuts down (platform/last-resort.ts).
  installLastResortHandlers({
    log: log.error,
    shutdown: () => stop('uncaught exception'),
    hardExitMs: settings.shutdownGraceMs + 10_000,
  });
  // Only now: whoever waits for this line may signal at once, and must find the handlers installed.
  log(
    `ready on ${publicUrl} (namespace ${namespace}, internal runner port ${settings.internalPort}, metrics port ${portOf(metricsServer)}, ${hostname()})`,
  );
}

function portOf(server: Server): number {
  const address = server.address();
  return typeof address === 'object' && address ? address.port : 0;
}
