/**
 * The internal runner API on a real store, for tests: runs are inserted as an async run would be and get a
 * per-run token; systems and runtime credentials come from maps the test fills.
 *
 *   const api = await startInternalApi(store);
 *   const token = await api.startRun('run-1', { steps: [...] });
 *   ... fetch(api.url + INTERNAL_PATHS.order('run-1'), { headers: { authorization: `Bearer ${token}` } }) ...
 */
import type { FastifyInstance } from 'fastify';
import { buildInternalServer, type InternalServerDeps } from '../../api/internal/server.ts';
import { KG_ERR_RUN_SYSTEM_MISSING } from '../../contract/api/errors.ts';
import type { RuntimeCredentials } from '../../contract/api/run.ts';
import type { JsonObject } from '../../contract/json.ts';
import type { ResolvedSystem } from '../../contract/wire/run-order.ts';
import { hashRunToken, newRunToken } from '../../runs/run-token.ts';
import type { DriverName, ExecutionMode, Store, StoredRunState } from '../../store/index.ts';
import { standIn, useStarted } from './fixture.ts';
import { openTestStore, runningRun } from './store.ts';

export interface InternalApiHarness {
  app: FastifyInstance;
  store: Store;
  /** `http://127.0.0.1:<port>` once listening. */
  url: string;
  /** Systems by `<id>/<mode>`; an id without an entry is unknown (the error the real resolver raises). */
  systems: Map<string, ResolvedSystem>;
  credentials: Map<string, RuntimeCredentials>;
  /** Run ids whose runtime credentials were dropped, in order. */
  dropped: string[];
  /** Inserts a running run with a tool snapshot and issues its token; answers the token. */
  startRun(runId: string, tool: JsonObject, opts?: StartRunOptions): Promise<string>;
  /** Issues a new token for another attempt of the run. */
  newAttempt(runId: string, attempt: number): Promise<string>;
  listen(port?: number): Promise<string>;
  close(): Promise<void>;
}

export interface StartRunOptions {
  inputs?: JsonObject;
  options?: JsonObject;
  systemIds?: string[];
  mode?: ExecutionMode;
  startedAt?: string;
  credentials?: RuntimeCredentials;
  /** The run's record of its tool state, e.g. the stateFixture it was started with. */
  state?: StoredRunState;
  /** A resumed run (runs/resume.ts): the run it resumes and how many first steps it reuses. */
  resume?: { from: string; reusedSteps: number };
}

export function createInternalApi(
  store: Store,
  overrides: Partial<InternalServerDeps> = {},
): InternalApiHarness {
  const systems = new Map<string, ResolvedSystem>();
  const credentials = new Map<string, RuntimeCredentials>();
  const dropped: string[] = [];
  const app = buildInternalServer({
    store,
    logLevel: 'silent',
    resolveSystems: async (ids, mode) =>
      ids.map((id) => {
        const system = systems.get(`${id}/${mode}`);
        if (!system) throw KG_ERR_RUN_SYSTEM_MISSING(id);
        return system;
      }),
    takeRuntimeCredentials: async (runId) => credentials.get(runId),
    dropRuntimeCredentials: async (runId) => {
      dropped.push(runId);
      credentials.delete(runId);
    },
    ...overrides,
  });
  const harness: InternalApiHarness = {
    app,
    store,
    url: '',
    systems,
    credentials,
    dropped,
    async startRun(runId, tool, opts = {}) {
      await store.insertRun(
        runningRun(runId, {
          toolId: String(tool.id),
          tool,
          toolPayload: opts.inputs ?? {},
          systemIds: opts.systemIds ?? [],
          executionMode: opts.mode ?? 'prod',
          traceId: `trace-${runId}`,
          options: { async: true, ...opts.options },
          metadata: { startedAt: opts.startedAt ?? new Date().toISOString() },
          ...(opts.state ? { state: opts.state } : {}),
          ...(opts.resume ? { resumedFrom: opts.resume.from, reusedSteps: opts.resume.reusedSteps } : {}),
        }),
      );
      if (opts.credentials) credentials.set(runId, opts.credentials);
      return harness.newAttempt(runId, 1);
    },
    async newAttempt(runId, attempt) {
      const token = newRunToken();
      if (!(await store.issueRunToken(runId, attempt, hashRunToken(token)))) {
        throw new Error(`could not issue a token for ${runId} attempt ${attempt}`);
      }
      return token;
    },
    async listen(port = 0) {
      harness.url = await app.listen({ host: '127.0.0.1', port });
      return harness.url;
    },
    close: () => app.close(),
  };
  return harness;
}

/**
 * The internal API on a fresh test store of the driver, listening, for the tests of the enclosing block:
 * opened before them, closed after them (see useStarted).
 */
export function useInternalApi(driver: DriverName): { store: Store; api: InternalApiHarness } {
  const started = useStarted(
    async () => {
      const opened = await openTestStore(driver);
      const api = createInternalApi(opened.store);
      await api.listen();
      return { opened, api };
    },
    async ({ opened, api }) => {
      await api.close();
      await opened.close();
    },
  );
  return { store: standIn(() => started.opened.store), api: standIn(() => started.api) };
}
