/**
 * engine/: pure execution of a tool — templates, steps, pagination, loops, files, the protocols (protocols/:
 * HTTP, Postgres, MySQL, Redis, FTP/FTPS, SFTP, SMB, the egress guard; contract/step-protocols.ts lists them),
 * the sandbox (sandbox/: isolated-vm) and the worker pool that runs it in child processes (worker/). No storage, no Kubernetes, no HTTP server. This file runs a tool.
 *
 * May import: contract.
 */
import type { StepPagination } from '../contract/api/run.ts';
import type { ToolStep } from '../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { requestBudget } from './budget.ts';
import { type CredentialView, transformView, withheldFailure } from './credential-views.ts';
import { buildCredentialScope, type CredentialScope, RuntimeCredentialError } from './credentials.ts';
import { jsonBytes, RESULT_SETTING, STEP_DATA_SETTING, tooLargeMessage } from './data-size.ts';
import { extractFiles, redactFiles } from './files.ts';
import { isIdentitySource } from './identity-source.ts';
import { IdentityTokens } from './identity-tokens.ts';
import { validateOutput } from './json-schema.ts';
import { ManagedTokens } from './managed-tokens.ts';
import { isJsonObject } from './paths.ts';
import { RunState, STATE_KEY } from './persisted-state.ts';
import { RunRecorder, recordingProtocols } from './recording.ts';
import { replayProtocols } from './replay.ts';
import { runRequestStep } from './request-step.ts';
import { OpenSpan } from './spans.ts';
import {
  type Envelope,
  envelopeJson,
  loopReport,
  mapOrdered,
  StepFailure,
  type StepOutcome,
} from './step-outcome.ts';
import type { Evaluate as TemplateEvaluate } from './template.ts';
import {
  DEFAULT_LIMITS,
  type EngineDeps,
  type EngineEvent,
  type EngineLimits,
  type EngineRequest,
  type EngineResult,
  type EngineStepResult,
  type Evaluate,
  type IdentityTokenSource,
  type ProducedFile,
  type Protocols,
} from './types.ts';

/**
 * Notes one step result keeps (a loop's items and a pagination's pages each may add some: a GraphQL error
 * beside data is one); past them one note says more were left out.
 */
const MAX_NOTES = 20;
const NOTES_LEFT_OUT = `more notes were left out (a step keeps ${MAX_NOTES})`;

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** One run while runTool executes it: its steps so far, credential scope, deadline and sandbox (not the ToolRun resource). */
class RunInProgress {
  readonly #deps: EngineDeps;
  readonly #request: EngineRequest;
  readonly #limits: EngineLimits;
  readonly #scope: CredentialScope;
  readonly #signal: AbortSignal;
  readonly #deadline: number;
  readonly #timeoutMs: number;
  readonly #steps: JsonObject = {};
  /** Notes per step id (see EngineStepResult), without repeats across loop items and pages. */
  readonly #notes = new Map<string, Set<string>>();
  /** The run's evaluations (one sandbox context per run). */
  readonly #sandbox: Evaluate;
  /** Step results whose data is redacted already (request steps: see request-step.ts). */
  readonly #redactedData = new WeakSet<EngineStepResult>();
  readonly #tokens: ManagedTokens;
  readonly #identity: IdentityTokens;
  /** The tool's persistent state, when the order carries one (docs/state.md). */
  readonly #state: RunState | undefined;
  /** The run's exchanges, when its order asks to record them (recording.ts). */
  readonly #recorder: RunRecorder | undefined;
  /** The protocols the run's steps call: the engine's, recorded when the order asks. */
  readonly #protocols: Protocols;

  constructor(
    deps: EngineDeps,
    request: EngineRequest,
    signal: AbortSignal,
    deadline: number,
    timeoutMs: number,
    evaluate: Evaluate,
  ) {
    this.#deps = deps;
    this.#sandbox = evaluate;
    this.#request = request;
    this.#limits = { ...DEFAULT_LIMITS, ...deps.limits };
    // Throws RuntimeCredentialError for a refused runtime credential; runTool fails the run with it.
    this.#scope = buildCredentialScope(request.systems, request.runtimeCredentials, {
      inputs: request.inputs,
      stepIds: request.tool.steps.map((step) => step.id),
    });
    this.#tokens = new ManagedTokens(this.#scope, request.accessToken, () => this.#now());
    // A replay sends nothing: a stand-in token reads as the recorded placeholder once redacted.
    const identitySource: IdentityTokenSource | undefined = request.replay
      ? async () => ({
          token: `replayed-identity-token-${request.tool.id}`,
          expiresAt: Number.MAX_SAFE_INTEGER,
        })
      : request.identityToken;
    this.#identity = new IdentityTokens(this.#scope.redactor, identitySource, () => this.#now());
    this.#signal = signal;
    this.#deadline = deadline;
    this.#timeoutMs = timeoutMs;
    this.#state =
      request.persistedState !== undefined
        ? new RunState(request.persistedState, request.stateVersion)
        : undefined;
    this.#recorder = request.record
      ? new RunRecorder(
          this.#scope.redactor,
          this.#limits.maxRecordingBytes,
          request.tool.steps.map((step) => step.id),
        )
      : undefined;
    // A replay answers every call from its recording: nothing reaches the network.
    const protocols = request.replay ? replayProtocols(request.replay, this.#scope.redactor) : deps.protocols;
    this.#protocols = this.#recorder ? recordingProtocols(protocols, this.#recorder) : protocols;
  }

  /** What the run recorded so far (absent when its order did not ask). */
  recording(): { recording?: NonNullable<EngineResult['recording']> } {
    return this.#recorder ? { recording: this.#recorder.recording() } : {};
  }

  get redactor() {
    return this.#scope.redactor;
  }

  /** What the run did to its state (absent when the order carried none). */
  #stateChanges() {
    return this.#state?.changes(this.#scope.redactor);
  }

  #emit(event: EngineEvent): void {
    const onEvent = this.#request.onEvent;
    if (!onEvent) return;
    if (event.type === 'step_finished') {
      onEvent({ type: 'step_finished', result: this.redactStepResult(event.result) });
    } else {
      onEvent(event);
    }
  }

  redactStepResult(result: EngineStepResult): EngineStepResult {
    const redactor = this.#scope.redactor;
    const data = this.#redactedData.has(result) ? result.data : redactor.value(result.data);
    return {
      stepId: result.stepId,
      success: result.success,
      ...(data !== undefined ? { data } : {}),
      ...(result.error !== undefined ? { error: redactor.string(result.error) } : {}),
      ...(result.notes?.length ? { notes: result.notes.map((note) => redactor.string(note)) } : {}),
      ...(result.loop
        ? {
            loop: {
              ...result.loop,
              failedItems: result.loop.failedItems.map((item) => ({
                index: item.index,
                error: redactor.string(item.error),
              })),
            },
          }
        : {}),
      ...(result.pagination
        ? { pagination: { ...result.pagination, reason: redactor.string(result.pagination.reason) } }
        : {}),
      ...(result.reusedFrom !== undefined ? { reusedFrom: result.reusedFrom } : {}),
    };
  }

  #notesOf(stepId: string): { notes?: string[] } {
    const notes = this.#notes.get(stepId);
    return notes?.size ? { notes: [...notes] } : {};
  }

  #evaluator(label: string, view?: CredentialView): TemplateEvaluate {
    return (source, args) => this.#evaluate(source, args, label, view);
  }

  /**
   * A user function over JSON arguments; one that returns its input unchanged needs no sandbox. With a
   * view of the credentials, the first argument gets its guards; a function that can read credentials
   * withheld from code runs in a sandbox context of its own (nothing it leaves in globals reaches the
   * run's later code) and fails without its message (credential-views.ts).
   */
  #evaluate(
    source: string,
    args: JsonValue[],
    label: string,
    view?: CredentialView,
    capture?: string,
  ): Promise<JsonValue> {
    if (isIdentitySource(source)) {
      const first = args[0] ?? null;
      if (capture === undefined) return Promise.resolve(first);
      return Promise.resolve([first, isJsonObject(first) ? (first[capture] ?? null) : null]);
    }
    const options = {
      label,
      signal: this.#signal,
      timeoutMs: Math.max(1, this.#deadline - this.#now()),
      ...(view?.guarded.length ? { guarded: view.guarded } : {}),
      ...(capture !== undefined ? { capture } : {}),
    };
    if (!view?.exposes.length) return this.#sandbox(source, args, options);
    return this.#deps.evaluate(source, args, options).catch((error: unknown) => {
      throw withheldFailure(error, view, label);
    });
  }

  #now(): number {
    return (this.#deps.now ?? Date.now)();
  }

  /**
   * Payload at the root, then the envelopes of finished steps (a step id shadows an input), then the
   * persistent state when the tool has one.
   */
  #baseSourceData(): JsonObject {
    const base: JsonObject = { ...this.#request.inputs, ...this.#steps };
    if (this.#state) base[STATE_KEY] = this.#state.current;
    return base;
  }

  /**
   * A transform (a transform step's code, the output transform): with persistent state, it gets the state
   * as it is now (a loop's earlier items included) and what it leaves in `sourceData.persistedState` is
   * applied. `redacted`: the transform sees no credentials, so neither in the state.
   */
  async #transform(
    source: string,
    sourceData: JsonObject,
    label: string,
    view?: CredentialView,
    redacted = false,
  ): Promise<JsonValue> {
    const state = this.#state;
    if (!state) return this.#evaluate(source, [sourceData], label, view);
    const shown = redacted ? this.#scope.redactor.value(state.current) : state.current;
    const answer = await this.#evaluate(
      source,
      [{ ...sourceData, [STATE_KEY]: shown }],
      label,
      view,
      STATE_KEY,
    );
    if (!Array.isArray(answer) || answer.length !== 2) throw new Error(`${label}: the sandbox kept no state`);
    state.apply(shown, answer[1] ?? null, label);
    return answer[0] ?? null;
  }

  /**
   * What code that must see no credentials gets (dataSelector, outputTransform): the base sourceData with
   * every credential value replaced by its placeholder, so a response that echoed one cannot be passed on
   * disguised (encoded, split) past the redaction of the run's results.
   */
  #redactedSourceData(): JsonObject {
    return this.#scope.redactor.value(this.#baseSourceData());
  }

  /**
   * Transforms see the credentials of systems with codeAccess, and guards for the others
   * (credential-views.ts); request steps get them per request, by origin (request-step.ts), so here they
   * get none.
   */
  #sourceDataFor(step: ToolStep): { sourceData: JsonObject; view?: CredentialView } {
    const base = this.#baseSourceData();
    if (step.config.type === 'request') return { sourceData: base };
    const view = transformView(this.#scope);
    return { sourceData: { ...base, ...view.data }, view };
  }

  async #executeOnce(
    step: ToolStep,
    sourceData: JsonObject,
    view: CredentialView | undefined,
    onPagination: (summary: StepPagination) => void,
    item: number | undefined,
    /** The traced run's span the call is made in (its step's or loop item's); absent untraced. */
    spanId: string | undefined,
  ): Promise<JsonValue> {
    const config = step.config;
    if (config.type === 'transform') {
      return this.#transform(config.transformCode, sourceData, `step ${step.id} transformCode`, view);
    }
    const systemEntry = config.systemId ? this.#scope.bySystem.get(config.systemId) : undefined;
    if (config.systemId && !systemEntry) {
      throw new Error(`system '${config.systemId}' is not available in this run`);
    }
    const redactor = this.#scope.redactor;
    return runRequestStep({
      stepId: step.id,
      config,
      modify: step.modify,
      sourceData,
      system: systemEntry?.system,
      scope: this.#scope,
      candidates: config.systemId ? [config.systemId] : [...this.#scope.bySystem.keys()],
      evaluate: this.#evaluator(`step ${step.id} stopCondition`),
      evaluateWith: (view) => this.#evaluator(`step ${step.id} template`, view),
      protocols: this.#protocols,
      ctx: {
        exchange: { stepId: step.id, ...(item !== undefined ? { item } : {}) },
        signal: this.#signal,
        deadline: this.#deadline,
        traceId: this.#request.traceId,
        ...(spanId !== undefined ? { spanId } : {}),
        redact: (text) => redactor.string(text),
        maxDataBytes: this.#limits.maxStepDataBytes,
        // A replay sends nothing: no budget to take from.
        budget: requestBudget(
          this.#request.replay ? undefined : this.#request.budget,
          systemEntry?.system,
          (system, waitMs) => this.#emit({ type: 'budget_wait', stepId: step.id, system, waitMs }),
        ),
      },
      onEvent: (event) => this.#emit(event),
      onPagination,
      tokens: this.#tokens,
      identity: this.#identity,
      onNote: (note) => {
        const notes = this.#notes.get(step.id) ?? new Set<string>();
        if (notes.size < MAX_NOTES) notes.add(note);
        else if (notes.size === MAX_NOTES) notes.add(NOTES_LEFT_OUT);
        this.#notes.set(step.id, notes);
      },
    });
  }

  async #item(
    step: ToolStep,
    sourceData: JsonObject,
    view: CredentialView | undefined,
    currentItem: JsonValue,
    /** The loop item's index; absent outside a loop. */
    index: number | undefined,
    /** The traced run's step span; absent untraced. */
    stepSpan: OpenSpan | undefined,
  ): Promise<Envelope> {
    // A loop item of a traced run is a span of its own, in its step's.
    const itemSpan =
      stepSpan && index !== undefined ? new OpenSpan('item', stepSpan.spanId, step.id, index) : undefined;
    const envelope = await this.#itemEnvelope(
      step,
      sourceData,
      view,
      currentItem,
      index,
      (itemSpan ?? stepSpan)?.spanId,
    );
    if (itemSpan) this.#emit(itemSpan.end(!envelope.success));
    return envelope;
  }

  async #itemEnvelope(
    step: ToolStep,
    sourceData: JsonObject,
    view: CredentialView | undefined,
    currentItem: JsonValue,
    index: number | undefined,
    spanId: string | undefined,
  ): Promise<Envelope> {
    let pagination: StepPagination | undefined;
    try {
      this.#signal.throwIfAborted();
      const data = await this.#executeOnce(
        step,
        { ...sourceData, currentItem },
        view,
        (summary) => {
          pagination = summary;
        },
        index,
        spanId,
      );
      return { currentItem, data: data ?? null, success: true, ...(pagination ? { pagination } : {}) };
    } catch (error) {
      // A request step's error may quote what a server echoed: later code sees it redacted, like its data.
      const message = messageOf(error);
      return {
        currentItem,
        data: null,
        success: false,
        error: step.config.type === 'request' ? this.#scope.redactor.string(message) : message,
      };
    }
  }

  /** One execution's outcome, failed when its data is larger than the step data bound. */
  #single(envelope: Envelope): StepOutcome {
    if (!envelope.success) throw new StepFailure(envelope.error ?? 'failed', null);
    const bytes = jsonBytes(envelope.data);
    const limit = this.#limits.maxStepDataBytes;
    if (bytes > limit) {
      throw new StepFailure(tooLargeMessage("the step's data", bytes, limit, STEP_DATA_SETTING), null);
    }
    const report = envelope.pagination ? { pagination: envelope.pagination } : {};
    return { envelope: envelopeJson(envelope), data: envelope.data, bytes, report };
  }

  /** Runs one step (with its loop) and returns the value sourceData[step.id] takes. */
  async #step(step: ToolStep, span: OpenSpan | undefined): Promise<StepOutcome> {
    const { sourceData, view } = this.#sourceDataFor(step);
    if (!step.dataSelector) {
      return this.#single(await this.#item(step, sourceData, view, {}, undefined, span));
    }
    const selected = await this.#evaluate(
      step.dataSelector,
      [this.#redactedSourceData()],
      `step ${step.id} dataSelector`,
    );
    if (!Array.isArray(selected)) {
      return this.#single(await this.#item(step, sourceData, view, selected ?? null, undefined, span));
    }
    if (selected.length > this.#limits.maxLoopItems) {
      throw new StepFailure(
        `dataSelector returned ${selected.length} items; the limit is ${this.#limits.maxLoopItems}`,
        null,
      );
    }
    const stopOnFailure = step.failureBehavior === 'fail';
    let firstFailure: { index: number; error: string } | undefined;
    // The envelopes' size as a JSON array, counted as items finish: past the bound no more start.
    const limit = this.#limits.maxStepDataBytes;
    let bytes = 2;
    let finished = 0;
    const envelopes = await mapOrdered(selected, step.loopConcurrency ?? 1, async (item, index) => {
      if ((stopOnFailure && firstFailure) || bytes > limit) return undefined;
      const envelope = await this.#item(step, sourceData, view, item, index, span);
      if (!envelope.success && (!firstFailure || index < firstFailure.index)) {
        firstFailure = { index, error: envelope.error ?? 'failed' };
      }
      const json = envelopeJson(envelope);
      bytes += jsonBytes(json) + (finished++ > 0 ? 1 : 0);
      return json;
    });
    // Items skipped by a cancel or timeout are not failures of the step: the interruption wins.
    this.#signal.throwIfAborted();
    if (bytes > limit) {
      const what = `the step's data (${finished} of ${selected.length} items so far)`;
      throw new StepFailure(tooLargeMessage(what, bytes, limit, STEP_DATA_SETTING), null);
    }
    const done = envelopes.filter((e): e is JsonObject => e !== undefined);
    const loop = loopReport(selected.length, envelopes);
    if (stopOnFailure && firstFailure) {
      throw new StepFailure(`item ${firstFailure.index}: ${firstFailure.error}`, done, bytes, loop);
    }
    return { envelope: done, data: done, bytes, report: { loop } };
  }

  #abortError(): string | undefined {
    if (this.#request.signal.aborted) return 'Run was cancelled';
    // A step bounded by the deadline (an HTTP request's own timer) may fail a moment before the run's
    // timer fires: past the deadline the run has timed out, whichever timer was first.
    if (this.#signal.aborted || this.#now() >= this.#deadline)
      return `Run timed out after ${this.#timeoutMs} ms`;
    return undefined;
  }

  async execute(): Promise<EngineResult> {
    const stepResults: EngineStepResult[] = [];
    let withStepData = true;
    const finish: Finish = (status, data, error, files = [], dataRedacted = false) => {
      const redactor = this.#scope.redactor;
      const state = this.#stateChanges();
      return {
        status,
        data: dataRedacted ? data : redactor.value(data),
        stepResults: stepResults.map((r) => this.redactStepResult(withStepData ? r : withoutData(r))),
        ...(error !== undefined ? { error: redactor.string(error) } : {}),
        files: redactFiles(files, redactor),
        ...(state ? { state } : {}),
        ...this.recording(),
      };
    };
    const limit = this.#limits.maxResultBytes;
    /** What the run would store is larger than the result bound: it fails, and keeps no step data. */
    const tooLarge = (what: string, bytes: number): EngineResult => {
      withStepData = false;
      return finish('failed', null, tooLargeMessage(what, bytes, limit, RESULT_SETTING));
    };

    let lastData: JsonValue = null;
    /** lastData is a request step's, redacted already. */
    let lastRedacted = false;
    let lastBytes = jsonBytes(null);
    /** The size of the step data the run has so far (stored with its result). */
    let stepBytes = 0;
    const steps = this.#request.tool.steps;
    const reused = this.#request.reusedSteps ?? [];
    for (const [index, stored] of reused.entries()) {
      const step = steps[index];
      if (step?.id !== stored.stepId) {
        return finish(
          'failed',
          null,
          `The reused result of step ${stored.stepId} is not the tool's step ${index + 1}`,
        );
      }
      // Stored results are redacted already; their data is in sourceData as if the step had just run.
      const data = stored.data ?? null;
      this.#steps[step.id] = stored.loop ? data : { currentItem: {}, data, success: stored.success };
      const result: EngineStepResult = { ...stored, data };
      this.#redactedData.add(result);
      lastData = data;
      lastRedacted = true;
      lastBytes = jsonBytes(data);
      stepBytes += lastBytes;
      stepResults.push(result);
      this.#emit({ type: 'step_finished', result });
    }
    if (stepBytes > limit) return tooLarge("the data of the run's reused steps", stepBytes);
    const until = this.#request.untilStep;
    const reachedUntil = () => this.#until(until ?? '', lastData, lastRedacted, finish);
    if (until !== undefined && reused.some((result) => result.stepId === until)) return reachedUntil();
    for (const step of steps.slice(reused.length)) {
      const interrupted = this.#abortError();
      if (interrupted) return finish(this.#request.signal.aborted ? 'aborted' : 'failed', null, interrupted);
      this.#emit({ type: 'step_started', stepId: step.id });
      const runSpanId = this.#request.trace?.spanId;
      const span = runSpanId !== undefined ? new OpenSpan('step', runSpanId, step.id) : undefined;
      let result: EngineStepResult;
      try {
        const outcome = await this.#step(step, span);
        this.#steps[step.id] = outcome.envelope;
        lastData = outcome.data;
        lastRedacted = step.config.type === 'request';
        lastBytes = outcome.bytes;
        stepBytes += outcome.bytes;
        result = {
          stepId: step.id,
          success: true,
          data: outcome.data,
          ...this.#notesOf(step.id),
          ...outcome.report,
        };
        if (step.config.type === 'request') this.#redactedData.add(result);
      } catch (error) {
        const message = this.#abortError() ?? messageOf(error);
        const data = error instanceof StepFailure ? error.envelopeData : null;
        stepBytes += error instanceof StepFailure ? error.bytes : jsonBytes(null);
        const loop = error instanceof StepFailure ? error.loop : undefined;
        result = {
          stepId: step.id,
          success: false,
          data,
          error: message,
          ...this.#notesOf(step.id),
          ...(loop ? { loop } : {}),
        };
        if (step.config.type === 'request') this.#redactedData.add(result);
        stepResults.push(result);
        if (span) this.#emit(span.end(true));
        this.#emit({ type: 'step_finished', result });
        if (this.#abortError()) {
          return finish(this.#request.signal.aborted ? 'aborted' : 'failed', null, message);
        }
        if (stepBytes > limit) return tooLarge(`the data of the run's steps up to ${step.id}`, stepBytes);
        if (step.failureBehavior === 'fail')
          return finish('failed', null, `Step ${step.id} failed: ${message}`);
        this.#steps[step.id] = { currentItem: {}, data: null, success: false, error: message };
        lastData = null;
        lastRedacted = false;
        lastBytes = jsonBytes(null);
        if (step.id === until) return reachedUntil();
        continue;
      }
      stepResults.push(result);
      if (span) this.#emit(span.end(false));
      this.#emit({ type: 'step_finished', result });
      if (stepBytes > limit) return tooLarge(`the data of the run's steps up to ${step.id}`, stepBytes);
      if (step.id === until) return reachedUntil();
    }

    return this.#output(lastData, lastRedacted, stepBytes + lastBytes, stepBytes, finish, tooLarge);
  }

  /**
   * A try stops after its untilStep: no output transform or schema; its data is that step's, and it
   * answers the sourceData the next step would receive (redacted: as code that sees no credentials gets
   * it, without a transform's credential view or a loop item's currentItem).
   */
  #until(stepId: string, lastData: JsonValue, lastRedacted: boolean, finish: Finish): EngineResult {
    const interrupted = this.#abortError();
    if (interrupted) return finish(this.#request.signal.aborted ? 'aborted' : 'failed', null, interrupted);
    const steps = this.#request.tool.steps;
    const next = steps[steps.findIndex((step) => step.id === stepId) + 1];
    return {
      ...finish('success', lastData, undefined, [], lastRedacted),
      until: {
        stepId,
        ...(next ? { nextStepId: next.id } : {}),
        sourceData: this.#redactedSourceData(),
      },
    };
  }

  /**
   * The output transform and schema. `resultBytes`: the size of the result without an output
   * transform (every step's data, and the last one's again as the output).
   */
  async #output(
    lastData: JsonValue,
    lastRedacted: boolean,
    resultBytes: number,
    stepBytes: number,
    finish: Finish,
    tooLarge: (what: string, bytes: number) => EngineResult,
  ): Promise<EngineResult> {
    const tool = this.#request.tool;
    let data = lastData;
    let files: ProducedFile[] = [];
    let bytes = resultBytes;
    const interrupted = this.#abortError();
    if (interrupted) return finish(this.#request.signal.aborted ? 'aborted' : 'failed', null, interrupted);
    try {
      if (tool.outputTransform) {
        const transformed = await this.#transform(
          tool.outputTransform,
          this.#redactedSourceData(),
          'outputTransform',
          undefined,
          true,
        );
        bytes = stepBytes + jsonBytes(transformed ?? null);
        if (bytes <= this.#limits.maxResultBytes) ({ data, files } = extractFiles(transformed ?? null));
      }
      if (bytes > this.#limits.maxResultBytes) {
        return tooLarge("the run's result (its output data, files included, and every step's data)", bytes);
      }
      if (tool.outputSchema) {
        const problem = validateOutput(tool.outputSchema, data);
        if (problem) return finish('failed', null, problem);
      }
    } catch (error) {
      const interrupted = this.#abortError();
      if (interrupted) return finish(this.#request.signal.aborted ? 'aborted' : 'failed', null, interrupted);
      return finish('failed', null, `outputTransform failed: ${messageOf(error)}`);
    }
    return finish('success', data, undefined, files, lastRedacted && !tool.outputTransform);
  }
}

type Finish = (
  status: EngineResult['status'],
  data: JsonValue,
  error?: string,
  files?: ProducedFile[],
  /** The data is a request step's, redacted when it arrived. */
  dataRedacted?: boolean,
) => EngineResult;

function withoutData(result: EngineStepResult): EngineStepResult {
  const { data: _data, ...rest } = result;
  return rest;
}

/**
 * Executes a tool: every step in order, loops, pagination, output transform and schema, within the
 * run's deadline and until `signal` aborts. Performs no storage I/O; reports progress via onEvent.
 * Every credential value is replaced by its placeholder in what it returns and emits.
 */
export async function runTool(deps: EngineDeps, request: EngineRequest): Promise<EngineResult> {
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  const timeoutMs = request.timeoutMs ?? limits.defaultTimeoutMs;
  const now = (deps.now ?? Date.now)();
  const deadline = now + timeoutMs;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new Error(`Run timed out after ${timeoutMs} ms`)), timeoutMs);
  const scope = deps.openScope?.({ key: request.keyId ?? '', tool: request.tool.id });
  // A run that ends before it starts still says which state it read.
  const unchanged =
    request.persistedState !== undefined
      ? {
          state: {
            ...(request.stateVersion !== undefined ? { versionRead: request.stateVersion } : {}),
            writes: [],
            warnings: [],
          },
        }
      : {};
  try {
    const signal = AbortSignal.any([request.signal, timeout.signal]);
    let run: RunInProgress;
    try {
      run = new RunInProgress(deps, request, signal, deadline, timeoutMs, scope?.evaluate ?? deps.evaluate);
    } catch (error) {
      if (!(error instanceof RuntimeCredentialError)) throw error;
      // Names only: the message never holds a credential value.
      return { status: 'failed', data: null, stepResults: [], error: error.message, files: [], ...unchanged };
    }
    try {
      return await run.execute();
    } catch (error) {
      // A bug in the engine must still end the run cleanly and without leaking a credential.
      const message = run.redactor.string(`Internal error in the run engine: ${messageOf(error)}`);
      return {
        status: 'failed',
        data: null,
        stepResults: [],
        error: message,
        files: [],
        ...unchanged,
        ...run.recording(),
      };
    }
  } finally {
    clearTimeout(timer);
    scope?.close();
  }
}
