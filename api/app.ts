/**
 * api/: the /v1 API on fastify — server, authentication and key scopes, routes (routes/: a handler per
 * operation of the route table in contract/api/routes.ts, registered from it by routes/register.ts), the
 * internal port for runner Pods (internal/), the gateway endpoint and relay (gateway/), the MCP endpoint
 * (mcp/), metrics, and the dashboard's built files at `/` (dashboard.ts). Never the operator.
 *
 * May import: contract, config, engine, kube, store, platform, runs, runs/execution, tools, systems,
 * schedules.
 */
import type { FastifyInstance } from 'fastify';
import { type DocumentationLimits, defaultSettings } from '../config/config.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { LogFields } from '../contract/log.ts';
import type { SystemResource, ToolResource, ToolScheduleResource } from '../contract/resources/kinds.ts';
import type { EgressPolicy } from '../engine/protocols/egress-policy.ts';
import type { WorkerPool } from '../engine/worker/pool.ts';
import { Informer } from '../kube/informer.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import type { SecretStore } from '../kube/secrets/interface.ts';
import { registerJobMetrics } from '../platform/job-metrics.ts';
import { JobSupervisor } from '../platform/supervisor.ts';
import type { TraceExport } from '../platform/traces.ts';
import { propagateCancel } from '../runs/cancel.ts';
import type { FileUrlSigner } from '../runs/file-urls.ts';
import type { IdentityIssuer } from '../runs/identity/issuer.ts';
import { keyNow } from '../runs/run-as.ts';
import { type RunEventBus, RunEventHub } from '../runs/run-events.ts';
import { RunService, type RuntimeCredentialVault } from '../runs/service.ts';
import { type ScheduleLimits, ScheduleService } from '../schedules/service.ts';
import type { Store } from '../store/index.ts';
import { presentBudgetUse, SystemBudgets } from '../systems/budgets.ts';
import { DocumentationService } from '../systems/documentation/service.ts';
import { SystemOAuth, type SystemOAuthOptions } from '../systems/oauth/service.ts';
import { SystemService } from '../systems/service.ts';
import { ToolService } from '../tools/service.ts';
import { defaultStateLimits, type StateLimits, ToolStateService } from '../tools/state.ts';
import { validateToolDefinition } from '../tools/validation.ts';
import { type Auth, installAuth } from './auth.ts';
import { defaultDashboardDir } from './dashboard.ts';
import { type Gateways, gatewayHandlers, installGateways } from './gateway/index.ts';
import { installJwks } from './identity.ts';
import { installMcp } from './mcp/index.ts';
import { installMetrics, type Metrics } from './metrics.ts';
import { apiKeyHandlers } from './routes/api-keys.ts';
import { connectionTestHandlers } from './routes/connection-test.ts';
import { documentationHandlers } from './routes/documentation.ts';
import { fileDownloadHandlers } from './routes/files.ts';
import { hookHandlers } from './routes/hooks.ts';
import { type LogStreamTimings, logHandlers } from './routes/logs.ts';
import { meHandlers } from './routes/me.ts';
import { oauthHandlers } from './routes/oauth.ts';
import { combineHandlers, notOffered, registerRoutes } from './routes/register.ts';
import { runStatsHandlers } from './routes/run-stats.ts';
import { runHandlers } from './routes/runs.ts';
import { scheduleHandlers } from './routes/schedules.ts';
import { systemHandlers } from './routes/systems.ts';
import { toolStateHandlers } from './routes/tool-state.ts';
import { toolTestHandlers } from './routes/tool-tests.ts';
import { toolHandlers } from './routes/tools.ts';
import { publicPrefixes } from './scopes.ts';
import { buildServer } from './server.ts';

export interface ApiDeps {
  store: Store;
  resources: KubeglueResources;
  /** Where System credentials live (Secrets in Kubernetes, sealed store rows embedded). */
  secrets: SecretStore;
  /** Seals the runtime credentials of async runs; they wait with the run row until it starts. */
  vault: Pick<RuntimeCredentialVault, 'seal'>;
  /** Sync runs executing at once in this process (KUBEGLUE_MAX_SYNC_RUNS); more answer 429. */
  maxSyncRuns: number;
  /** How long a request waits for a free maxConcurrent slot of a system before asking again (KUBEGLUE_BUDGET_SLOT_POLL_MS). */
  budgetSlotPollMs?: number;
  /** Executes sync runs. */
  pool: WorkerPool;
  signer: FileUrlSigner;
  namespace: string;
  /** Identifies this process in `runs.executor`. */
  executor: string;
  bodyLimitBytes: number;
  logLevel: string;
  /**
   * KUBEGLUE_REQUEST_LOG: a log line per request and per run end, unless logLevel is above info (a
   * benchmark's `warn` keeps them out of its measurement).
   */
  requestLog?: boolean;
  /** The /v1 port speaks HTTPS with this certificate chain and key. */
  tls?: { cert: Buffer; key: Buffer } | undefined;
  log: (line: string, fields?: LogFields) => void;
  /**
   * How live run events reach the other API replicas (the store's LISTEN/NOTIFY in the Kubernetes role);
   * without it a stream sees the runs of this process only (the embedded deployment is one process).
   */
  eventBus?: RunEventBus;
  /** Where traced runs' spans go (platform/traces.ts, docs/operations.md); absent: tracing is off. */
  traces?: TraceExport | undefined;
  /** Documentation processing (runs/documentation); off without it. */
  documentation?: { egress: EgressPolicy; limits: DocumentationLimits; sweepMs?: number };
  /** Runs the background jobs (documentation); one of its own with the defaults otherwise. */
  jobs?: JobSupervisor;
  /** Gateway agents' tunnels and the relay the workers dial (started before the pool). */
  gateways?: Gateways;
  /** The built dashboard served at `/` (KUBEGLUE_UI_DIR; default: dist/ui of the installation). */
  dashboardDir?: string | undefined;
  /** Timings of `GET /v1/logs/stream` (tests). */
  logStream?: Partial<LogStreamTimings>;
  /** OAuth token management and the authorization-code routes (without it OAuth systems send stored tokens only). */
  oauth?: Pick<SystemOAuthOptions, 'masterKey' | 'publicUrl' | 'egress' | 'tokens'>;
  /** Bounds of persistent tool state (KUBEGLUE_TOOL_STATE_*); the defaults without it. */
  stateLimits?: StateLimits;
  /** Signs the runs' outbound identity tokens and serves their JWKS (without it steps cannot send one). */
  identity?: IdentityIssuer;
  /** The largest MCP `tools/list` page (KUBEGLUE_MCP_LIST_PAGE_BYTES); the default without it. */
  mcpListPageBytes?: number;
  /** Bounds of schedules (KUBEGLUE_MAX_SCHEDULE*); the defaults without it. */
  scheduleLimits?: ScheduleLimits;
  /**
   * Serve `GET /metrics` on the API's own port (the embedded deployment). The api role leaves it out and
   * serves `metrics.registry` on its metrics port instead.
   */
  metricsRoute?: boolean;
}

/** The log levels (KUBEGLUE_LOG_LEVEL) that let info lines through. */
const INFO_OR_FINER = new Set(['info', 'debug', 'trace']);

/** The /v1 API of one process: routes, auth, metrics and the services behind them. */
export interface Api {
  app: FastifyInstance;
  runs: RunService;
  systems: SystemService;
  /** OAuth tokens of systems, when ApiDeps.oauth was given. */
  oauth: SystemOAuth | undefined;
  /** Systems' rate budgets: what the runs this process executes (or its runner Pods) take from. */
  budgets: SystemBudgets;
  tools: ToolService;
  metrics: Metrics;
  auth: Auth;
  /** Live run events: runs executing in this process report here (pool launcher, internal API). */
  events: RunEventHub;
  /** Where traced runs' spans go (ApiDeps.traces), for the pool launcher and the internal API. */
  traces: TraceExport | undefined;
  /** Every route registered after the server's own (probes, OpenAPI document): the table's, by method. */
  routes(): ReadonlyArray<{ method: string; url: string }>;
  /** Marks the server ready for traffic (readiness probe). */
  setReady(ready: boolean): void;
  /** Stops the caches the API reads from (after the HTTP server closed). */
  close(): Promise<void>;
}

/** Builds the API and fills its caches (systems, tools); listening is the caller's. */
export async function createApi(deps: ApiDeps): Promise<Api> {
  const { store, resources, namespace, log } = deps;
  const stateLimits = deps.stateLimits ?? defaultStateLimits();
  const jobs = deps.jobs ?? new JobSupervisor({ log });
  let documentation: DocumentationService | undefined;
  const oauth = deps.oauth ? new SystemOAuth({ ...deps.oauth, store, namespace, log }) : undefined;
  const systems = new SystemService({
    resources,
    secrets: deps.secrets,
    namespace,
    log,
    documentedPlacement: async (key) => documentation?.placementFor(key),
    present: async (resource, credentials) => ({
      ...(oauth ? await oauth.present(resource, credentials) : {}),
      ...(await presentBudgetUse(store, resource, Date.now())),
    }),
    ...(oauth ? { onDeleted: (resource: SystemResource) => oauth.forget(resource) } : {}),
  });
  oauth?.attach(systems);
  await systems.start();
  if (deps.documentation) {
    documentation = new DocumentationService({
      store: store.documentation,
      systems,
      log,
      jobs,
      ...deps.documentation,
    });
    documentation.start();
  }
  const toolInformer = new Informer<ToolResource>(resources.tools, { log });
  await toolInformer.start();
  const toolValidation = {
    systemExists: (id: string) => systems.exists(id),
    systemUrls: (id: string) => systems.urls(id),
  };
  const validateTool = async (tool: Tool) => {
    await validateToolDefinition(tool, toolValidation);
  };
  const tools = new ToolService({ resources, informer: toolInformer, namespace, validation: toolValidation });
  const scheduleInformer = new Informer<ToolScheduleResource>(resources.toolSchedules, { log });
  await scheduleInformer.start();
  const schedules = new ScheduleService({
    resources,
    informer: scheduleInformer,
    namespace,
    tool: (toolId) => tools.get(toolId),
    keyNow: (userId) => keyNow(store, userId),
    runningRuns: (list) => store.scheduleTicks.runningRunsOf(list),
    limits: deps.scheduleLimits ?? defaultSettings('api').schedules,
  });
  const activityLog = deps.requestLog === true && INFO_OR_FINER.has(deps.logLevel);
  const events = new RunEventHub({
    ...(deps.eventBus ? { bus: deps.eventBus } : {}),
    log,
    ...(activityLog
      ? {
          onRunFinished: (ref, end) => {
            const ms = end.durationMs;
            log(
              `run ${ref.runId} of tool ${ref.toolId}: ${end.status}${ms !== undefined ? ` in ${ms} ms` : ''}`,
              {
                runId: ref.runId,
                toolId: ref.toolId,
                status: end.status,
                ms,
                traceId: ref.traceId,
              },
            );
          },
        }
      : {}),
  });
  await events.start();

  let ready = false;
  const app = buildServer({
    bodyLimitBytes: deps.bodyLimitBytes,
    logLevel: deps.logLevel,
    requestLog: activityLog ? log : undefined,
    tls: deps.tls,
    ready: () => ready,
    dashboardDir: deps.dashboardDir ?? defaultDashboardDir(),
  });
  const routes: { method: string; url: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  const auth = installAuth(app, { store, publicPrefixes: publicPrefixes() });
  const metrics = installMetrics(app, {
    poolLoad: () => deps.pool.load(),
    outboxBacklog: () => store.outboxBacklog(),
    route: deps.metricsRoute ?? false,
  });
  registerJobMetrics(metrics.registry, () => jobs.status());
  const budgets = new SystemBudgets({
    store,
    budgetOf: (systemId, mode) => systems.budgetOf(systemId, mode),
    slotPollMs: deps.budgetSlotPollMs ?? defaultSettings('api').budgetSlotPollMs,
    metrics,
    log,
  });
  const signer = deps.signer;
  const runs = new RunService({
    store,
    tools,
    systems,
    pool: deps.pool,
    vault: deps.vault,
    urlFor: (runId, fileKey) => signer.sign(runId, fileKey).url,
    executor: deps.executor,
    maxSyncRuns: deps.maxSyncRuns,
    onCancelled: propagateCancel({ store, toolRuns: resources.toolRuns }),
    metrics,
    events,
    traces: deps.traces,
    validateTool,
    ...(oauth ? { accessToken: (id, mode, rejected) => oauth.accessToken(id, mode, rejected) } : {}),
    ...(deps.identity ? { identity: deps.identity } : {}),
    budgets: (mode) => budgets.forRun(mode),
    stateLimits,
    log,
  });
  const toolState = new ToolStateService({ store, tools, systems, limits: stateLimits });

  registerRoutes(
    app,
    combineHandlers(
      toolHandlers({ tools, toolState }),
      scheduleHandlers({ schedules, tools }),
      toolStateHandlers({ toolState }),
      runHandlers({ runs, store, signer }),
      toolTestHandlers({
        store,
        tools,
        // The system as GET /v1/systems/{id} answers it, whose URL kubeglue test record keeps too.
        systemUrl: (id) =>
          systems.get(id).then(
            (system) => system.url,
            () => undefined,
          ),
      }),
      runStatsHandlers({ store, toolRuns: resources.toolRuns }),
      hookHandlers({ runs, tools }),
      systemHandlers({ systems, tools, documentation }),
      connectionTestHandlers({ systems, runs }),
      documentation
        ? documentationHandlers({ systems, documentation })
        : notOffered('uploadSystemDocumentation', 'getSystemDocumentation', 'searchSystemDocumentation'),
      oauth ? oauthHandlers({ oauth }) : notOffered('authorizeSystemOAuth', 'oauthCallback'),
      apiKeyHandlers({ store, auth }),
      meHandlers,
      logHandlers(app, { events, runs, ...(deps.logStream ? { timings: deps.logStream } : {}) }),
      fileDownloadHandlers({ signer, store }),
      deps.gateways
        ? gatewayHandlers({
            registry: deps.gateways.registry,
            replica: deps.gateways.replica,
            directory: deps.gateways.directory,
            owners: store.gatewayTunnelOwners,
          })
        : notOffered('listGateways', 'getGateway', 'releaseGatewayOwner'),
    ),
  );
  if (deps.identity) installJwks(app, deps.identity);
  installMcp(app, {
    tools,
    runs,
    events,
    listPageBytes: deps.mcpListPageBytes ?? defaultSettings('api').mcpListPageBytes,
  });
  if (deps.gateways) {
    installGateways(app, {
      gateways: deps.gateways,
      findApiKeyByHash: (keyHash) => store.findApiKeyByHash(keyHash),
      owners: store.gatewayTunnelOwners,
      metrics: metrics.registry,
      log,
    });
  }

  return {
    app,
    runs,
    systems,
    oauth,
    budgets,
    tools,
    metrics,
    auth,
    events,
    traces: deps.traces,
    routes: () => [...routes],
    setReady: (value) => {
      ready = value;
    },
    close: async () => {
      await events.close();
      await toolInformer.stop();
      await scheduleInformer.stop();
      await documentation?.close();
      if (!deps.jobs) await jobs.stop();
      await systems.close();
      await oauth?.close();
      await auth.flush();
    },
  };
}
