/**
 * Accepting a run, whichever request asked for it (requests.ts): the checks every run passes before
 * anything is stored (systems the key may use, save-time checks of unsaved definitions, the webhook URL,
 * the input schema, systems that exist), the stored run, and idempotency on a client-chosen run id. An
 * async run is then stored with its outbox `start` (202); a sync one goes on to execute-sync.ts.
 */
import { KG_ERR_RUN_ID_CONFLICT, KG_ERR_VALIDATION } from '../contract/api/errors.ts';
import type { ExecutionMode, RequestSource, RunOptions, RunRequest } from '../contract/api/run.ts';
import { stepSystemIds, type Tool } from '../contract/api/tool.ts';
import type { JsonObject } from '../contract/json.ts';
import type { StoredRun } from '../store/index.ts';
import { assertSystemsGranted } from '../systems/grants.ts';
import { defaultStateLimits, limitProblem } from '../tools/state.ts';
import { takeCapacity } from './capacity.ts';
import { type Caller, canSee, type RunContext, refOf, type StartedRun } from './context.ts';
import { executeSync, stepResultsWithoutData } from './execute-sync.ts';
import { parentSpanOption } from './execution/index.ts';
import { inputHash } from './input-hash.ts';
import { assertInputsMatchSchema } from './input-schema.ts';
import { newRunId } from './run-id.ts';
import { runView, withResult } from './run-view.ts';
import { checkWebhookUrl } from './webhook-url.ts';

/** What one launch needs, whichever route started it. */
export interface Launch {
  tool: Tool;
  request: RunRequest;
  caller: Caller;
  traceId: string;
  /** The span id of the `traceparent` the request came with, when its trace is the run's (runs/execution/trace.ts). */
  parentSpanId?: string | undefined;
  async: boolean;
  /** false: the run is executed but not stored (no record, no files, no completion effects). */
  record: boolean;
  /** A definition that was not saved gets the save-time checks first. */
  validate?: boolean;
  requestSource?: RequestSource | undefined;
  mode?: ExecutionMode | undefined;
  parentRunId?: string | undefined;
  /** The schedule whose tick asked for the run. */
  scheduleId?: string | undefined;
  signal?: AbortSignal | undefined;
  /**
   * What the run reads as sourceData.persistedState instead of the tool's stored state; it then saves no
   * state changes. Absent: a saved tool's run reads and writes the stored state (tools/state.ts).
   */
  stateFixture?: JsonObject | undefined;
  /** A resumed run (resume.ts): the run it resumes, and how many first steps it reuses from there. */
  resume?: { from: string; reusedSteps: number } | undefined;
  /** A try of a definition (sync only): the step after which the run stops. */
  untilStep?: string | undefined;
}

export async function accept(ctx: RunContext, input: Launch): Promise<StartedRun> {
  const { deps } = ctx;
  const { store } = deps;
  const { caller, tool, async } = input;
  // First: a definition's unknown system must answer like a known one the key may not use.
  assertSystemsGranted(caller.systemIds, tool.steps);
  if (input.validate) await deps.validateTool?.(tool);
  const {
    pinnedCredentials: _pinned,
    credentialsList: _list,
    clientInfo: _client,
    ...given
  } = input.request.options ?? {};
  checkWebhookUrl(given.webhookUrl, (toolId) => canSee(caller, toolId));
  const mode: ExecutionMode = input.mode ?? given.mode ?? 'prod';
  const requestSource: RequestSource = input.requestSource ?? given.requestSource ?? 'api';
  const traceId = given.traceId ?? input.traceId;
  // The caller's traceparent is the run span's parent only when the run is in its trace (no other options.traceId).
  const parent = given.traceId === undefined ? parentSpanOption(input.parentSpanId) : {};
  const options: RunOptions = { ...given, async, mode, requestSource, traceId, ...parent };
  const inputs: JsonObject = input.request.inputs ?? {};
  assertInputsMatchSchema(tool, inputs);
  if (input.stateFixture !== undefined) {
    const problem = limitProblem(input.stateFixture, deps.stateLimits ?? defaultStateLimits());
    if (problem) throw KG_ERR_VALIDATION('run request', `stateFixture: ${problem}`);
  }
  const runId = input.request.runId ?? newRunId();
  const systemIds = stepSystemIds(tool.steps);
  // Resolved before anything is stored: an unknown system is the caller's error, not a failed run.
  const systems = await deps.systems.resolveForRun(systemIds, mode);
  // Last before anything is stored: a run refused for its key's quota or its tool's capacity uses neither.
  const capacity = await takeCapacity(store, {
    runId,
    tool,
    caller,
    async,
    timeoutMs: options.timeout,
    signal: input.signal,
  });

  const run: StoredRun = {
    runId,
    toolId: tool.id,
    status: 'running',
    requestSource,
    userId: caller.id,
    // Travels with the run: its chain is checked against it, and a chained run inherits it.
    ...(caller.toolIds !== null ? { allowedToolIds: [...caller.toolIds] } : {}),
    ...(caller.systemIds !== null ? { allowedSystemIds: [...caller.systemIds] } : {}),
    systemIds,
    executionMode: mode,
    traceId,
    ...(input.parentRunId ? { parentRunId: input.parentRunId } : {}),
    ...(input.scheduleId ? { scheduleId: input.scheduleId } : {}),
    ...(input.resume ? { resumedFrom: input.resume.from, reusedSteps: input.resume.reusedSteps } : {}),
    // The snapshot is what ran: a tool's tests (up to 512 KiB of recordings) are not, and every run would keep them.
    tool: withoutTests(tool) as unknown as JsonObject,
    toolPayload: inputs,
    options: options as JsonObject,
    ...(async ? {} : { executor: deps.executor }),
    ...(input.stateFixture !== undefined ? { state: { fixture: input.stateFixture } } : {}),
    metadata: { startedAt: new Date().toISOString() },
  };

  if (async) {
    const credentials = input.request.credentials;
    // Stored by the run's own insert, and only if that insert stores the run: a repeated or conflicting
    // request, or one losing a race for the same new run id, never writes credentials.
    const sealed =
      credentials && Object.keys(credentials).length > 0 ? deps.vault.seal(runId, credentials) : undefined;
    const inserted = await store.batch.insertRun(run, {
      inputHash: inputHash(tool.id, inputs),
      outbox: [{ kind: 'start', runId, payload: {} }],
      ...(sealed ? { sealedCredentials: sealed } : {}),
    });
    if (inserted.status === 'conflict') throw KG_ERR_RUN_ID_CONFLICT(runId);
    if (inserted.status === 'inserted') {
      deps.metrics?.runStarted(requestSource, mode);
      deps.events?.emit(refOf(run), { type: 'run_started' });
    }
    return { statusCode: 202, run: runView(inserted.run, { urlFor: deps.urlFor }), rate: capacity.rate };
  }

  const withData = input.request.includeStepResultData !== false;
  let startRecord: (() => Promise<void>) | undefined;
  if (input.record) {
    const insert = () => store.batch.insertRun(run, { inputHash: inputHash(tool.id, inputs) });
    if (input.request.runId !== undefined) {
      // A client-chosen id may repeat an earlier request or conflict with another run: decided first.
      const inserted = await insert();
      if (inserted.status === 'conflict') throw KG_ERR_RUN_ID_CONFLICT(runId);
      // The run of that id holds its own slot (the claim above was for it): kept.
      if (inserted.status === 'existing') return existing(ctx, inserted.run, withData);
    } else {
      // A new random id can do neither: the start record is written while the run executes (executeSync
      // starts it once the order is on its way), and the terminal write waits for it, so it is never
      // overtaken.
      startRecord = () =>
        insert().then((inserted) => {
          if (inserted.status !== 'inserted') throw KG_ERR_RUN_ID_CONFLICT(runId);
        });
    }
  }
  deps.metrics?.runStarted(requestSource, mode);
  deps.events?.emit(refOf(run), { type: 'run_started' });
  try {
    const started = await executeSync(ctx, run, tool, systems, input.request.credentials, {
      record: input.record,
      startRecord,
      withData,
      signal: input.signal,
      untilStep: input.untilStep,
    });
    return { ...started, rate: capacity.rate };
  } finally {
    await capacity.release();
  }
}

/** A repeated request with the same runId, tool and inputs: the run as it is now. */
async function existing(ctx: RunContext, stored: StoredRun, withData: boolean): Promise<StartedRun> {
  const { deps } = ctx;
  const view = runView(stored, { urlFor: deps.urlFor });
  if (stored.status === 'running') return { statusCode: 202, run: view };
  const result = await deps.store.getRunResult(stored.runId);
  if (!result) return { statusCode: 200, run: view };
  const steps = withData ? result.stepResults : stepResultsWithoutData(result.stepResults);
  return { statusCode: 200, run: withResult(view, result.data, steps) };
}

function withoutTests(tool: Tool): Omit<Tool, 'tests'> {
  const { tests: _tests, ...rest } = tool;
  return rest;
}
