import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { createSecureContext } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { ensureAdminKey } from '../api/api-keys.ts';
import { type Api, createApi } from '../api/app.ts';
import type { Auth } from '../api/auth.ts';
import { startGateways } from '../api/gateway/index.ts';
import { loadTls } from '../api/tls.ts';
import { type EmbeddedSettings, poolSettings, SETTINGS } from '../config/config.ts';
import type { LogFields } from '../contract/log.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { createEmbeddedKubeglueResources } from '../kube/resources/index.ts';
import { EmbeddedSecretStore } from '../kube/secrets/embedded.ts';
import { startOperator } from '../operator/app.ts';
import { PoolLauncher } from '../operator/launchers/pool.ts';
import { scheduledRunsOf } from '../operator/schedule/starter.ts';
import { credentialsBox, loadMasterKey } from '../platform/secret-box.ts';
import { JobSupervisor } from '../platform/supervisor.ts';
import { openTraceExport } from '../platform/traces.ts';
import { masterKeySigner } from '../runs/file-urls.ts';
import { identityIssuer } from '../runs/identity/issuer.ts';
import { RECOVERY_SWEEP_MS, recoverStartedRuns } from '../runs/recovery.ts';
import { StoreRuntimeCredentialVault } from '../runs/runtime-credentials.ts';
import type { ScheduleClock } from '../schedules/clock.ts';
import {
  embeddedStorePath,
  hasPgliteData,
  openStore,
  pgliteNotConvertedMessage,
  type Store,
} from '../store/index.ts';

export interface EmbeddedApp {
  app: FastifyInstance;
  /** The API key check (its guarded routes, for tests that walk them). */
  auth: Pick<Auth, 'guardedRoutes'>;
  /** The routes the API registered (for the test that holds them to the route table). */
  routes: Api['routes'];
  /** The base URL the server listens on. */
  url: string;
  store: Store;
  /**
   * Stops accepting requests and starting async runs, lets in-flight runs (sync and async) finish for the
   * grace period, then interrupts the rest: read-only async runs are handed back to run again after the
   * restart, the others fail saying the server shut down (runs/interrupted.ts).
   */
  close(): Promise<void>;
}

/**
 * Refuses a start whose port another process holds, naming the port and the setting that moves it. Run
 * before anything is written (the first start's admin key is printed once: a start that minted it and then
 * died on EADDRINUSE would lose it). Port 0 is always free; the listen itself still decides.
 */
async function checkPortFree(host: string, port: number, setting: string): Promise<void> {
  if (port === 0) return;
  const refusal = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
  if (!refusal) return;
  const where = `port ${port} on ${host}`;
  const choose = `choose another with ${setting}=<port> (0: any free port)`;
  if (refusal.code === 'EADDRINUSE') {
    throw new Error(
      `${where} is taken by another process (a kubeglue already running?): stop it, or ${choose}; nothing was started`,
    );
  }
  if (refusal.code === 'EACCES') {
    throw new Error(`${where} may not be listened on by this user (a privileged port?): ${choose}`);
  }
  throw new Error(`cannot listen on ${where} (${refusal.code ?? refusal.message}): ${choose}`);
}

async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The embedded deployment in one process (`kubeglue embedded`, what `npm start` runs): the store, the
 * /v1 API and the operator loops, wired as the Kubernetes deployment splits them, with async runs
 * launched into the worker pool instead of runner Pods.
 */
export async function startEmbedded(
  config: EmbeddedSettings,
  log: (line: string, fields?: LogFields) => void,
  /** Tests: the schedules' clock, moved by hand. */
  options: { scheduleClock?: ScheduleClock } = {},
): Promise<EmbeddedApp> {
  // What can refuse the start comes before anything is written, the admin key above all.
  await checkPortFree(config.host, config.port, SETTINGS.tree.port.name);
  await checkPortFree(config.relay.host, config.relay.port, SETTINGS.tree.relay.port.name);
  const tls = await loadTls(config.tls);
  // A certificate and key that do not belong together are refused here, not by the server built later.
  if (tls) {
    try {
      createSecureContext(tls);
    } catch (error) {
      const { certFile, keyFile } = SETTINGS.tree.tls;
      throw new Error(
        `${certFile.name} and ${keyFile.name} are not a usable pair: ${(error as Error).message}`,
      );
    }
  }
  // Holds the embedded store's file and, without KUBEGLUE_MASTER_KEY, the master key file (Postgres mode too).
  await mkdir(config.dataDir, { recursive: true });
  let store: Store;
  if (config.databaseUrl) {
    log(`opening the Postgres store (${SETTINGS.tree.databaseUrl.name})`);
    store = await openStore({ driver: 'pg', url: config.databaseUrl }, { onProgress: log });
  } else {
    if (await hasPgliteData(config.dataDir)) log(pgliteNotConvertedMessage(config.dataDir));
    const path = embeddedStorePath(config.dataDir);
    log(`opening the embedded store ${path}`);
    store = await openStore({ driver: 'sqlite', path }, { onProgress: log });
  }
  const executor = `embedded/${hostname()}/${process.pid}/${Date.now()}`;
  // Held while this process lives: another embedded process on the same Postgres (a replica, or the next
  // one after a crash) leaves this one's runs alone until it is gone (runs/recovery.ts, the pool launcher).
  const liveness = await store.holdExecutorLock(executor);
  const recover = async () => {
    const recovered = await recoverStartedRuns(store, {
      exceptExecutor: executor,
      maxAttempts: config.maxRunAttempts,
    });
    if (recovered.retried.length > 0) {
      log(
        `recovery: ${recovered.retried.length} read-only run(s) left running by a process that is gone will run again`,
      );
    }
    if (recovered.failed.length > 0)
      log(`recovery: failed ${recovered.failed.length} run(s) left running by a process that is gone`);
  };
  await recover();

  const masterKey = await loadMasterKey({ masterKey: config.masterKey, dataDir: config.dataDir, log });
  await ensureAdminKey(store, { presetKey: config.adminKey, log });

  const namespace = config.namespace;
  // A test's schedule clock stamps creations too, so a schedule is created at the time its ticks count from.
  const clock = options.scheduleClock;
  const resources = createEmbeddedKubeglueResources(store.resources, namespace, clock && (() => clock.now()));
  const secrets = new EmbeddedSecretStore({ store, namespace, box: credentialsBox(masterKey) });
  const vault = new StoreRuntimeCredentialVault({ store, masterKey });
  // Runtime credentials of runs that ended while no process could remove them (a crash, a recovery).
  await store.pruneRunCredentials();

  // On a shared Postgres store several processes may serve one API: tunnels are reachable from each.
  const gateways = await startGateways({
    settings: config,
    log,
    ...(config.databaseUrl
      ? {
          shared: {
            tunnels: store.gatewayTunnels,
            masterKey,
          },
        }
      : {}),
  });
  const pool = new WorkerPool({ ...poolSettings(config), gatewayRelay: gateways.relay.address, log });
  log(`starting 1 engine worker (up to ${pool.size} under load)`);
  // The worker boots (its own process, another core) while the API and the operator loops are built; a run
  // that comes before it is ready waits for it. Awaited before listening: a worker that cannot start
  // stops the start.
  const poolStarted = pool.start();
  poolStarted.catch(() => {});

  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const url = `${tls ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const signer = masterKeySigner(masterKey, config.publicUrl ?? url);
  const urlFor = (runId: string, fileKey: string) => signer.sign(runId, fileKey).url;
  // Documentation, outbox delivery, retention and the sweeps: their failures are recorded, never fatal.
  const jobs = new JobSupervisor({ settings: config.jobs, log });
  // Embedded processes sharing one Postgres: one that dies while another lives is recovered by the next
  // sweep of the living one, as at a start (one process on SQLite has no one to sweep for).
  if (config.databaseUrl) {
    jobs.every({ job: 'recovery-sweep', intervalMs: RECOVERY_SWEEP_MS, runAtStart: false, run: recover });
  }
  const identity = identityIssuer({
    store,
    masterKey,
    settings: config.identity,
    publicUrl: config.publicUrl ?? url,
  });
  // The OpenTelemetry SDK is loaded only when an OTLP endpoint is set (docs/operations.md).
  const traces = await openTraceExport(config.traces, log);

  const api = await createApi({
    jobs,
    store,
    resources,
    secrets,
    vault,
    maxSyncRuns: config.maxSyncRuns,
    traces,
    budgetSlotPollMs: config.budgetSlotPollMs,
    stateLimits: config.toolState,
    mcpListPageBytes: config.mcpListPageBytes,
    scheduleLimits: config.schedules,
    pool,
    signer,
    namespace,
    executor,
    bodyLimitBytes: config.bodyLimitBytes,
    logLevel: config.logLevel,
    requestLog: config.requestLog,
    dashboardDir: config.uiDir,
    log,
    documentation: { egress: config.egress, limits: config.documentation },
    oauth: { masterKey, publicUrl: config.publicUrl ?? url, egress: config.egress },
    identity,
    tls,
    gateways,
    // One process on one port, listening on loopback by default: /metrics is there (docs/embedded.md).
    metricsRoute: true,
  });
  const { runs, systems, metrics, oauth, budgets } = api;

  const launcher = new PoolLauncher({
    store,
    pool,
    executor,
    resolveSystems: (ids, mode) => systems.resolveForRun(ids, mode),
    takeCredentials: (runId) => vault.get(runId),
    dropCredentials: (runId) => vault.delete(runId),
    track: (runId, controller) => runs.track(runId, controller),
    metrics,
    events: api.events,
    traces,
    ...(oauth ? { accessToken: (id, mode, rejected) => oauth.accessToken(id, mode, rejected) } : {}),
    identityToken: (run) => identity.forRun(run),
    budgets: (mode) => budgets.forRun(mode),
    maxRunAttempts: config.maxRunAttempts,
    stateLimits: config.toolState,
    log,
  });
  const operator = await startOperator({
    jobs,
    store,
    resources,
    namespace,
    launcher,
    chains: {
      startChained: async (chain) => {
        await runs.startChained(chain);
      },
      recordRefused: ({ runId, toolId, parent, reason }) =>
        runs.recordRefusedChain({ runId, toolId, parent, reason }),
    },
    scheduledRuns: scheduledRunsOf(runs),
    identity: executor,
    ...(options.scheduleClock ? { scheduleClock: options.scheduleClock } : {}),
    urlFor,
    masterKey,
    notifySecret: config.notifySecret,
    notifyAllowPrivate: config.notifyAllowPrivate,
    notifyRetryDelaysMs: config.notifyRetryDelaysMs,
    maxAsyncRuns: config.maxAsyncRuns,
    settings: { maxRunAttempts: config.maxRunAttempts },
    toolRunRetentionMs: config.toolRunRetentionMs,
    outboxRetentionMs: config.outboxRetentionMs,
    runRetentionMs: config.runRetentionMs,
    resultRetentionMs: config.resultRetentionMs,
    log,
  });

  await poolStarted;
  await api.app.listen({ host: config.host, port });
  api.setReady(true);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      api.setReady(false);
      // Sync runs hold their requests open, so closing the server waits for them; async runs are the
      // launcher's. Both get the grace period, then what still runs is interrupted (not cancelled).
      const grace = setTimeout(() => runs.interruptAll(), config.shutdownGraceMs);
      await Promise.all([api.app.close(), launcher.drain(config.shutdownGraceMs)]);
      clearTimeout(grace);
      await operator.close();
      await api.close();
      await jobs.stop();
      await pool.close();
      // The spans of the runs that just ended go out before the process does.
      await traces?.shutdown();
      await liveness.release();
      await store.close();
    })();
    return closing;
  };
  return { app: api.app, auth: api.auth, routes: api.routes, url, store, close };
}
