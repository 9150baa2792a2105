/**
 * `POST /v1/runs/{runId}/replay`: the run's tool (its current definition, the run's snapshot, or one given)
 * executed in the worker pool against the run's recording only (engine/replay.ts): no network, and no
 * credential: each system's credentials are their placeholders (`<<systemId_key>>`), so a request is
 * templated and redacted to the form the recording keeps. The answer is the replay beside the original
 * with their differences (replay-diff.ts). Nothing of a replay is stored: no run, no results, no state.
 */
import {
  KG_ERR_RUN_NOT_REPLAYABLE,
  KG_ERR_TOOL_ARCHIVED,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import type { ReplayAnswer, ReplayOutcome, ReplayRunRequest } from '../contract/api/replay.ts';
import type { RunOptions } from '../contract/api/run.ts';
import { stepSystemIds, Tool } from '../contract/api/tool.ts';
import { zodIssues } from '../contract/format-issues.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { StoredRun } from '../store/index.ts';
import { assertSystemsGranted } from '../systems/grants.ts';
import { type Caller, type RunContext, visibleRun } from './context.ts';
import { buildOrder, executeInPool, RunReport } from './execution/index.ts';
import { assertInputsMatchSchema } from './input-schema.ts';
import { stepDiffs, valueDiff } from './replay-diff.ts';

export interface ReplayRun {
  runId: string;
  request: ReplayRunRequest;
  caller: Caller;
}

export async function replayRun(ctx: RunContext, input: ReplayRun): Promise<ReplayAnswer> {
  const { caller, request } = input;
  const { store } = ctx.deps;
  const pool = ctx.deps.pool;
  if (!pool) throw new Error('this process executes no sync runs (no worker pool)');
  // A key limited to other tools learns nothing about the run (404), as with every run endpoint.
  const original = await visibleRun(store, input.runId, caller);
  if (original.status === 'running') throw KG_ERR_RUN_NOT_REPLAYABLE(original.runId, 'running');
  const recording = await store.getRunRecording(original.runId);
  if (!recording) {
    throw KG_ERR_RUN_NOT_REPLAYABLE(original.runId, original.recording ? 'removed' : 'not-recorded');
  }
  const { tool, definition } = await replayedTool(ctx, original, request);
  assertSystemsGranted(caller.systemIds, tool.steps);
  const inputs = request.inputs ?? original.toolPayload ?? {};
  assertInputsMatchSchema(tool, inputs);
  const mode = original.executionMode ?? 'prod';
  const systems = (await ctx.deps.systems.resolveForRun(stepSystemIds(tool.steps), mode)).map(asPlaceholders);
  const given = (original.options ?? {}) as RunOptions;
  // The replay is not stored: the order is built from the original run as it would be replayed.
  const replayed: StoredRun = {
    ...original,
    toolPayload: inputs,
    options: { ...(given.timeout !== undefined ? { timeout: given.timeout } : {}), record: false },
    tool: tool as unknown as StoredRun['tool'],
  };
  const order = await buildOrder(
    replayed,
    {
      tool,
      systems: async () => systems,
      runtimeCredentials: async () => undefined,
      store,
      timeoutFrom: 'order',
    },
    Date.now(),
  );
  // A replay takes a sync slot like a sync run: it executes in this process's worker pool.
  const engine = await ctx.slots.admit(false, () =>
    executeInPool(pool, { ...order, replay: recording }, new RunReport(replayed, {}), {
      signal: new AbortController().signal,
      mode,
    }),
  );
  const stored = await store.getRunResult(original.runId);
  const before: ReplayOutcome = {
    success: original.status === 'success',
    ...(stored ? { data: stored.data } : {}),
    ...(original.error !== undefined ? { error: original.error } : {}),
    stepResults: stored?.stepResults ?? [],
  };
  const after: ReplayOutcome = {
    success: engine.status === 'success',
    data: engine.data,
    ...(engine.error !== undefined && engine.error !== null ? { error: String(engine.error) } : {}),
    stepResults: engine.stepResults,
  };
  const output = valueDiff(before.data, after.data);
  const steps = stepDiffs(before, after);
  return {
    runId: original.runId,
    definition,
    original: before,
    replay: after,
    diff: {
      changed:
        output.changed || before.success !== after.success || steps.some((s) => s.status !== 'unchanged'),
      output,
      steps,
    },
  };
}

/** The definition the replay runs: the body's, the run's snapshot, or the tool's current one (default). */
async function replayedTool(
  ctx: RunContext,
  original: StoredRun,
  request: ReplayRunRequest,
): Promise<{ tool: Tool; definition: ReplayAnswer['definition'] }> {
  if (request.tool) {
    const { systemIds: _systemIds, ...definition } = request.tool;
    const parsed = Tool.safeParse(definition);
    if (!parsed.success) throw KG_ERR_VALIDATION('tool', zodIssues(parsed.error));
    await ctx.deps.validateTool?.(parsed.data);
    return { tool: parsed.data, definition: 'body' };
  }
  if (request.definition === 'snapshot') {
    const parsed = Tool.safeParse(original.tool);
    if (!parsed.success) throw KG_ERR_VALIDATION('tool', zodIssues(parsed.error));
    return { tool: parsed.data, definition: 'snapshot' };
  }
  const tool = await ctx.deps.tools.get(original.toolId);
  if (!tool) throw KG_ERR_RUN_NOT_REPLAYABLE(original.runId, 'tool-gone');
  if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);
  return { tool, definition: 'current' };
}

/**
 * A system whose every credential is its own placeholder: templated into a request it renders as the
 * recording redacted it, and no credential leaves the store. An OAuth system's token is not asked for.
 */
export function asPlaceholders(system: ResolvedSystem): ResolvedSystem {
  const { tokenManaged: _managed, ...rest } = system;
  const keys = new Set([...Object.keys(system.credentials), ...(system.tokenManaged ? ['accessToken'] : [])]);
  return {
    ...rest,
    credentials: Object.fromEntries([...keys].map((key) => [key, `<<${system.id}_${key}>>`])),
  };
}
