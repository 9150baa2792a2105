import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { JsonObject } from '../crds/json.ts';
import type { ToolResource } from '../crds/resources.ts';
import type { Tool } from '../crds/tool.ts';
import { createChainHandler } from '../operator/chain-handler.ts';
import { Informer } from '../operator/informer.ts';
import { PoolLauncher } from '../operator/launcher.ts';
import { createNotifyHandler } from '../operator/notify.ts';
import { OutboxDelivery } from '../operator/outbox.ts';
import { createEmbeddedKubeglueResources } from '../operator/resources/index.ts';
import { EmbeddedSecretStore } from '../operator/secrets/embedded.ts';
import { createStartHandler } from '../operator/start-handler.ts';
import { ToolRunController } from '../operator/toolrun-controller.ts';
import { WorkerPool } from '../runner/pool.ts';
import { openStore, type Store } from '../store/index.ts';
import { ensureAdminKey } from './api-keys.ts';
import { installAuth } from './auth.ts';
import type { Config } from './config.ts';
import { FileUrlSigner } from './files.ts';
import { installMetrics } from './metrics.ts';
import { registerApiKeyRoutes } from './routes/api-keys.ts';
import { registerFileDownloadRoute } from './routes/files.ts';
import { registerHookRoutes } from './routes/hooks.ts';
import { registerRunRoutes } from './routes/runs.ts';
import { registerSystemRoutes } from './routes/systems.ts';
import { registerToolRoutes } from './routes/tools.ts';
import { runView } from './run-view.ts';
import { RunService, runtimeCredentialName, unflattenCredentials } from './runs.ts';
import { credentialsBox, deriveKey, loadMasterKey } from './secret-box.ts';
import { buildServer } from './server.ts';
import { SystemService } from './systems.ts';
import { validateToolDefinition } from './tool-validation.ts';
import { ToolService } from './tools.ts';

/** Result data included in a completion notification, at most (larger: `dataTruncated: true`). */
const NOTIFY_DATA_LIMIT_BYTES = 256 * 1024;
const RECOVERY_MESSAGE = 'The process executing this run stopped before it finished (kubeglue restarted)';

export interface EmbeddedApp {
  app: FastifyInstance;
  /** The base URL the server listens on. */
  url: string;
  store: Store;
  /** Stops accepting requests, lets in-flight runs finish for the grace period, then aborts the rest. */
  close(): Promise<void>;
}

/** `whsec_<base64>` (Standard Webhooks) or any other text as its bytes; else derived from the master key. */
export function notificationSigningKey(secret: string | undefined, masterKey: Buffer): Buffer {
  if (!secret) return deriveKey(masterKey, 'kubeglue/notifications/v1');
  return secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
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
 * The embedded deployment in one process: store, operator loops (outbox, ToolRun controller),
 * worker pool and the /v1 API, wired exactly as the Kubernetes deployment splits them.
 */
export async function startEmbedded(config: Config, log: (line: string) => void): Promise<EmbeddedApp> {
  // Holds PGlite's files and, without KUBEGLUE_MASTER_KEY, the master key file (Postgres mode too).
  await mkdir(config.dataDir, { recursive: true });
  let store: Store;
  if (config.databaseUrl) {
    log('opening the Postgres store (KUBEGLUE_DATABASE_URL)');
    store = await openStore({ driver: 'pg', url: config.databaseUrl }, { onProgress: log });
  } else {
    log(`opening the embedded store in ${config.dataDir}`);
    store = await openStore({ driver: 'pglite', dataDir: config.dataDir }, { onProgress: log });
  }
  const executor = `embedded/${hostname()}/${process.pid}/${Date.now()}`;
  const recovered = await store.failStartedRuns({
    exceptExecutor: executor,
    error: RECOVERY_MESSAGE,
    completedAt: new Date().toISOString(),
  });
  if (recovered.length > 0)
    log(`recovery: failed ${recovered.length} run(s) left running by a previous process`);

  const masterKey = await loadMasterKey({ masterKey: config.masterKey, dataDir: config.dataDir, log });
  await ensureAdminKey(store, { presetKey: config.adminKey, log });

  const namespace = config.namespace;
  const resources = createEmbeddedKubeglueResources(store.resources, namespace);
  const secrets = new EmbeddedSecretStore({ store, namespace, box: credentialsBox(masterKey) });
  const systems = new SystemService({ resources, secrets, namespace, log });
  await systems.start();
  const toolInformer = new Informer<ToolResource>(resources.tools, { log });
  await toolInformer.start();
  const tools = new ToolService({
    resources,
    informer: toolInformer,
    namespace,
    validate: (tool: Tool) => validateToolDefinition(tool, { systemExists: (id) => systems.exists(id) }),
  });

  const pool = new WorkerPool({
    ...(config.workers ? { size: config.workers } : {}),
    sandboxMemoryMb: config.sandboxMemoryMb,
    sandboxTimeoutMs: config.sandboxTimeoutMs,
    log,
  });
  log(`starting ${pool.size} engine workers`);
  await pool.start();

  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const signer = new FileUrlSigner({
    key: deriveKey(masterKey, 'kubeglue/file-urls/v1'),
    baseUrl: config.publicUrl ?? url,
  });
  const urlFor = (runId: string, fileKey: string) => signer.sign(runId, fileKey).url;

  let ready = false;
  const app = buildServer({
    bodyLimitBytes: config.bodyLimitBytes,
    logLevel: config.logLevel,
    ready: () => ready,
  });
  const auth = installAuth(app, { store, publicPrefixes: ['/v1/openapi.json', '/v1/files/'] });
  const metrics = installMetrics(app, {
    poolLoad: () => pool.load(),
    outboxBacklog: () => store.outboxBacklog(),
  });
  const runs = new RunService({ store, tools, systems, pool, vault: secrets, urlFor, executor, metrics });

  registerToolRoutes(app, { tools });
  registerRunRoutes(app, { runs, store, signer });
  registerHookRoutes(app, { runs, tools });
  registerSystemRoutes(app, { systems });
  registerApiKeyRoutes(app, { store, auth });
  registerFileDownloadRoute(app, { signer, store });

  const launcher = new PoolLauncher({
    store,
    pool,
    executor,
    resolveSystems: (ids, mode) => systems.resolveForRun(ids, mode),
    takeCredentials: async (runId) => {
      const data = await secrets.get(runtimeCredentialName(runId));
      return data ? unflattenCredentials(data) : undefined;
    },
    dropCredentials: (runId) => secrets.delete(runtimeCredentialName(runId)),
    track: (runId, controller) => runs.track(runId, controller),
    onFinished: (run, status, durationMs) => metrics.runFinished(status, run.requestSource, durationMs),
  });
  const controller = new ToolRunController({
    resources,
    store,
    launcher,
    maxConcurrent: config.maxAsyncRuns,
    retentionMs: config.toolRunRetentionMs,
    log,
  });

  const renderRun = async (runId: string): Promise<JsonObject | undefined> => {
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
  const notify = createNotifyHandler({
    renderRun,
    signingKey: notificationSigningKey(config.notifySecret, masterKey),
    allowPrivate: config.notifyAllowPrivate,
    retryDelaysMs: config.notifyRetryDelaysMs,
  });
  const outbox = new OutboxDelivery({
    store,
    log,
    handlers: {
      start: createStartHandler({ store, resources, namespace }),
      notify,
      chain: createChainHandler({
        store,
        starter: {
          startChained: async ({ runId, toolId, inputs, parent }) => {
            await runs.start({
              toolId,
              request: { runId, inputs },
              caller: { id: parent.userId ?? 'tool-chain', toolIds: null },
              traceId: parent.traceId ?? parent.runId,
              requestSource: 'tool-chain',
              forceAsync: true,
              mode: parent.executionMode ?? 'prod',
              parentRunId: parent.runId,
            });
          },
          recordRefused: ({ runId, toolId, parent, reason }) =>
            runs.recordRefusedChain({ runId, toolId, parent, reason }),
        },
      }),
    },
  });
  await controller.start();
  await outbox.start();
  // Delivered and abandoned completion effects are kept a while for inspection, then dropped.
  const pruneOutbox = setInterval(
    () => {
      store
        .pruneOutbox(new Date(Date.now() - config.outboxRetentionMs).toISOString())
        .catch((error: unknown) => {
          log(`outbox: pruning finished rows failed: ${(error as Error).message}`);
        });
    },
    Math.min(60 * 60 * 1000, config.outboxRetentionMs),
  ).unref();

  await app.listen({ host: config.host, port });
  ready = true;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      ready = false;
      clearInterval(pruneOutbox);
      const grace = setTimeout(() => runs.abortAll(), config.shutdownGraceMs);
      await app.close();
      await controller.stop();
      clearTimeout(grace);
      await outbox.stop();
      await notify.close();
      await toolInformer.stop();
      await systems.close();
      await auth.flush();
      await pool.close();
      await store.close();
    })();
    return closing;
  };
  return { app, url, store, close };
}
