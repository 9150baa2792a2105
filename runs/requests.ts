/**
 * The three ways to ask for a run, each turned into one Launch for accept.ts under the sync slots: a saved
 * tool (`POST /v1/tools/{id}/run`, webhooks, chains), an unsaved definition (`POST /v1/tools/run`) and one
 * step (`POST /v1/tools/step/run`).
 */
import {
  KG_ERR_TOOL_ARCHIVED,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_UNSUPPORTED_FIELD,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import type {
  DraftRunRequest,
  ExecutionMode,
  RequestSource,
  Run,
  RunRequest,
  StepRunRequest,
} from '../contract/api/run.ts';
import { Tool, type ToolDefinition } from '../contract/api/tool.ts';
import { zodIssues } from '../contract/format-issues.ts';
import type { JsonObject } from '../contract/json.ts';
import { usesState } from '../tools/state.ts';
import { accept } from './accept.ts';
import { type Caller, canSee, type RunContext, type StartedRun } from './context.ts';

export interface StartRun {
  toolId: string;
  request: RunRequest;
  caller: Caller;
  traceId: string;
  /** The span id of the `traceparent` the request came with, when its trace is the run's (runs/execution/trace.ts). */
  parentSpanId?: string | undefined;
  /** Server-set sources (webhook, tool-chain) override what the client declared. */
  requestSource?: RequestSource;
  forceAsync?: boolean;
  mode?: ExecutionMode;
  parentRunId?: string;
  scheduleId?: string;
}

/** A tool definition run without saving it (`POST /v1/tools/run`). */
export interface StartDraftRun {
  definition: ToolDefinition;
  request: DraftRunRequest;
  /** Record the run (GET /v1/runs, files, cancel); without it nothing is stored. */
  createRun: boolean;
  caller: Caller;
  traceId: string;
  /** The span id of the `traceparent` the request came with, when its trace is the run's (runs/execution/trace.ts). */
  parentSpanId?: string | undefined;
  /** Aborts an unrecorded run (the client went away: nobody could see its outcome). */
  signal?: AbortSignal;
}

/** One step run with a payload and earlier results (`POST /v1/tools/step/run`). */
export interface StartStepRun {
  request: StepRunRequest;
  caller: Caller;
  traceId: string;
  /** The span id of the `traceparent` the request came with, when its trace is the run's (runs/execution/trace.ts). */
  parentSpanId?: string | undefined;
  signal?: AbortSignal;
}

export interface StepRunOutcome {
  stepId: string;
  success: boolean;
  data?: Run['data'];
  error?: string;
  notes?: string[];
  runId: string;
}

/**
 * Fields superglue's clients send for features kubeglue does not have: accepted when empty (their
 * clients send them that way), refused when they would change what the run does.
 */
export function refuseUnsupportedFields(request: {
  files?: Record<string, unknown> | undefined;
  options?:
    | {
        pinnedCredentials?: Record<string, string> | undefined;
        credentialsList?: Record<string, string> | undefined;
      }
    | undefined;
}): void {
  const given = (value: Record<string, unknown> | undefined) =>
    value !== undefined && Object.keys(value).length > 0;
  if (given(request.files)) {
    throw KG_ERR_UNSUPPORTED_FIELD(
      'files',
      'kubeglue has no file inputs; put the file content in the inputs',
    );
  }
  for (const field of ['pinnedCredentials', 'credentialsList'] as const) {
    if (given(request.options?.[field])) {
      throw KG_ERR_UNSUPPORTED_FIELD(
        `options.${field}`,
        "kubeglue has no credential sets: a run uses its systems' stored credentials for its mode " +
          '(options.mode), overridden by runtime credentials',
      );
    }
  }
}

/** A saved tool's run. */
export async function startRun(ctx: RunContext, input: StartRun): Promise<StartedRun> {
  refuseUnsupportedFields(input.request);
  const async = input.forceAsync === true || input.request.options?.async === true;
  return ctx.slots.admit(async, async () => {
    const { caller } = input;
    // Decided before the lookup: a tool the key may not use answers exactly like a missing one.
    if (!canSee(caller, input.toolId)) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
    const tool = await ctx.deps.tools.get(input.toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(input.toolId);
    if (tool.archived) throw KG_ERR_TOOL_ARCHIVED(tool.id);
    return accept(ctx, {
      tool,
      request: input.request,
      caller,
      traceId: input.traceId,
      parentSpanId: input.parentSpanId,
      async,
      record: true,
      requestSource: input.requestSource,
      mode: input.mode,
      parentRunId: input.parentRunId,
      scheduleId: input.scheduleId,
      stateFixture: input.request.stateFixture,
    });
  });
}

/**
 * Runs a definition that is not saved, with the same checks as saving it (schema, code, systems) and
 * the same limits, sandbox and egress rules as a saved tool. Unrecorded runs are synchronous and have
 * no completion effects (nothing would hold their outcome).
 */
export async function startDraftRun(ctx: RunContext, input: StartDraftRun): Promise<StartedRun> {
  const { request } = input;
  refuseUnsupportedFields(request);
  const async = request.options?.async === true;
  if (!input.createRun && (async || request.options?.webhookUrl !== undefined)) {
    throw KG_ERR_VALIDATION(
      'run request',
      `options.${async ? 'async' : 'webhookUrl'}: an unsaved run that is not recorded has nobody to ` +
        'report to; add ?createRun=true',
    );
  }
  if (request.untilStep !== undefined && (async || request.options?.webhookUrl !== undefined)) {
    throw KG_ERR_VALIDATION(
      'run request',
      `untilStep: a try answers with the data of its steps and has no completion; remove options.${async ? 'async' : 'webhookUrl'}`,
    );
  }
  const { systemIds: _systemIds, ...definition } = input.definition;
  const tool = parseDefinition(definition);
  const {
    payload,
    inputs,
    tool: _tool,
    executionKind: _k,
    parentToolId: _p,
    draftId: _d,
    untilStep,
    ...rest
  } = request;
  return ctx.slots.admit(async, () =>
    accept(ctx, {
      tool,
      request: { ...rest, inputs: payload ?? inputs ?? {} },
      caller: input.caller,
      traceId: input.traceId,
      parentSpanId: input.parentSpanId,
      async,
      record: input.createRun,
      validate: true,
      signal: input.signal,
      stateFixture: unsavedState(tool, request.stateFixture),
      untilStep,
    }),
  );
}

/**
 * What a definition that is not saved reads as its state: the fixture given, else {} when it uses state. It
 * has no stored state, and never saves one (its id may be a saved tool's).
 */
function unsavedState(tool: Tool, fixture: JsonObject | undefined): JsonObject | undefined {
  return fixture ?? (usesState(tool) ? {} : undefined);
}

/** Runs one step as a one-step tool; sourceData holds the payload and the earlier results by step id. */
export async function runStep(ctx: RunContext, input: StartStepRun): Promise<StepRunOutcome> {
  const { request } = input;
  refuseUnsupportedFields({ files: request.files });
  const tool = parseDefinition({ id: request.parentToolId ?? request.step.id, steps: [request.step] });
  const started = await ctx.slots.admit(false, () =>
    accept(ctx, {
      tool,
      request: {
        ...(request.runId ? { runId: request.runId } : {}),
        inputs: { ...request.payload, ...request.previousResults },
        ...(request.credentials ? { credentials: request.credentials } : {}),
        ...(request.options?.timeout !== undefined ? { options: { timeout: request.options.timeout } } : {}),
      },
      caller: input.caller,
      traceId: input.traceId,
      parentSpanId: input.parentSpanId,
      async: false,
      record: request.createRun === true,
      validate: true,
      signal: input.signal,
      stateFixture: unsavedState(tool, undefined),
    }),
  );
  const { run } = started;
  const result = run.stepResults?.find((step) => step.stepId === request.step.id);
  if (!result) {
    return {
      stepId: request.step.id,
      success: false,
      error: run.error ?? 'The step did not run',
      runId: run.runId,
    };
  }
  return {
    stepId: result.stepId,
    success: result.success,
    ...(result.data !== undefined ? { data: result.data } : {}),
    ...(result.error !== undefined ? { error: result.error } : {}),
    ...(result.notes?.length ? { notes: result.notes } : {}),
    runId: run.runId,
  };
}

/** A definition as the engine runs it (the tool schema; the save-time checks come at acceptance). */
function parseDefinition(input: unknown): Tool {
  const parsed = Tool.safeParse(input);
  if (!parsed.success) throw KG_ERR_VALIDATION('tool', zodIssues(parsed.error));
  return parsed.data;
}
