/**
 * `POST /v1/runs/{runId}/resume`: a new run of the tool's current definition that starts at the step where
 * the original stopped (the first that failed, or the first not run), reusing the stored results of the
 * steps before it that are defined as they were when they ran (stepHash). From the first changed step on,
 * every step runs again. The new run is accepted like any run of the tool (accept.ts: the key's systems,
 * the input schema, idempotency on a client-chosen runId); execution/order.ts hands the reused results to
 * the engine, whichever process executes it.
 */

import { SETTINGS } from '../config/config.ts';
import {
  KG_ERR_RESUME_TOOL_GONE,
  KG_ERR_RUN_NOT_RESUMABLE,
  KG_ERR_RUN_RESULTS_NOT_STORED,
  KG_ERR_TOOL_ARCHIVED,
} from '../contract/api/errors.ts';
import type { ResumeRunRequest, StepResult } from '../contract/api/run.ts';
import { Tool } from '../contract/api/tool.ts';
import type { StoredRun } from '../store/index.ts';
import { accept } from './accept.ts';
import { type Caller, type RunContext, type StartedRun, visibleRun } from './context.ts';
import { storedStepResults } from './execution/index.ts';
import { refuseUnsupportedFields } from './requests.ts';
import { stepHash } from './step-hash.ts';

const RESULT_RETENTION = SETTINGS.tree.resultRetentionMs.name;
const MAX_RESULT_BYTES = SETTINGS.tree.maxResultBytes.name;

export interface ResumeRun {
  runId: string;
  request: ResumeRunRequest;
  caller: Caller;
  traceId: string;
}

export async function resumeRun(ctx: RunContext, input: ResumeRun): Promise<StartedRun> {
  const { caller, request } = input;
  const { store } = ctx.deps;
  // A key limited to other tools learns nothing about the run (404), as with every run endpoint.
  const original = await visibleRun(store, input.runId, caller);
  if (original.status === 'success' || original.status === 'running') {
    throw KG_ERR_RUN_NOT_RESUMABLE(original.runId, original.status);
  }
  refuseUnsupportedFields(request);
  const async = request.options?.async === true;
  return ctx.slots.admit(async, async () => {
    const tool = await ctx.deps.tools.get(original.toolId);
    if (!tool) throw KG_ERR_RESUME_TOOL_GONE(original.runId, original.toolId);
    if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);
    const stored = await storedStepResults(store, original.runId);
    if (!stored) {
      throw KG_ERR_RUN_RESULTS_NOT_STORED(
        original.runId,
        `no step results of it are stored (results are deleted after ${RESULT_RETENTION}; a run cancelled before it started has none, and one cancelled a moment ago may still be storing them: retry)`,
      );
    }
    const reusedSteps = reusableSteps(original, tool, stored);
    const { payload, inputs, ...rest } = request;
    const mode = request.options?.mode ?? original.executionMode;
    return accept(ctx, {
      tool,
      request: { ...rest, inputs: payload ?? inputs ?? original.toolPayload ?? {} },
      caller,
      traceId: input.traceId,
      async,
      record: true,
      mode,
      resume: { from: original.runId, reusedSteps },
    });
  });
}

/**
 * How many of the tool's first steps the resumed run reuses: those before the step where the original
 * stopped, up to the first whose definition differs from the one that ran (the run's snapshot). A step to
 * reuse whose data was not stored (the run's result exceeded its bound) refuses the resume.
 */
export function reusableSteps(original: StoredRun, tool: Tool, stored: readonly StepResult[]): number {
  const snapshot = Tool.safeParse(original.tool);
  if (!snapshot.success) return 0;
  const ran = snapshot.data.steps;
  const stoppedAt = stored.findIndex((result, index) => !result.success || result.stepId !== ran[index]?.id);
  const before = stoppedAt === -1 ? stored.length : stoppedAt;
  let count = 0;
  while (count < before && count < tool.steps.length) {
    const now = tool.steps[count];
    const then = ran[count];
    if (!now || !then || stepHash(now) !== stepHash(then)) break;
    count++;
  }
  const cut = stored.slice(0, count).find((result) => result.data === undefined);
  if (cut) {
    throw KG_ERR_RUN_RESULTS_NOT_STORED(
      original.runId,
      `the result of its step ${cut.stepId} was stored without its data (the run's result exceeded ${MAX_RESULT_BYTES})`,
    );
  }
  return count;
}
