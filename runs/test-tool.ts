/**
 * `POST /v1/tools/{toolId}/test`: the saved tool's tests (Tool.tests) run on the server by the runner
 * `kubeglue test -f` uses too (tool-tests.ts), each a replay in this process's worker pool taking a sync
 * slot, with the stored systems' base URLs and each credential its placeholder (replay.ts): no network, no
 * credential. Nothing is stored.
 */
import { KG_ERR_TOOL_ARCHIVED, KG_ERR_TOOL_NOT_FOUND } from '../contract/api/errors.ts';
import { stepSystemIds } from '../contract/api/tool.ts';
import type { ToolTestAnswer } from '../contract/api/tool-test-result.ts';
import { assertSystemsGranted } from '../systems/grants.ts';
import { type Caller, canSee, type RunContext } from './context.ts';
import { executeInPool, RunReport } from './execution/index.ts';
import { asPlaceholders } from './replay.ts';
import { runToolTests } from './tool-tests.ts';

export interface TestTool {
  toolId: string;
  caller: Caller;
}

export async function testTool(ctx: RunContext, input: TestTool): Promise<ToolTestAnswer> {
  const { caller } = input;
  const pool = ctx.deps.pool;
  if (!pool) throw new Error('this process executes no sync runs (no worker pool)');
  // A tool the key may not use answers exactly like a missing one.
  if (!canSee(caller, input.toolId)) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
  const tool = await ctx.deps.tools.get(input.toolId);
  if (!tool) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
  if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);
  assertSystemsGranted(caller.systemIds, tool.steps);
  const systems = (await ctx.deps.systems.resolveForRun(stepSystemIds(tool.steps), 'prod')).map(
    asPlaceholders,
  );
  return runToolTests(tool, {
    systems: async () => systems,
    // Each test takes a sync slot like a sync run: it executes in this process's worker pool. The order
    // carries its recording, so its calls are answered from it (engine/replay.ts).
    // No sinks: a test streams no events (nothing of it is stored or shown live).
    execute: (order) => {
      const report = new RunReport({ runId: order.runId, toolId: tool.id, traceId: order.traceId }, {});
      return ctx.slots.admit(false, () =>
        executeInPool(pool, order, report, { signal: new AbortController().signal, mode: 'prod' }),
      );
    },
  });
}
