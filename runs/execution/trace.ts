/**
 * A run's trace (docs/operations.md "Traces (OpenTelemetry)"), built where its report is consumed
 * (report.ts), whichever process executed it. The engine chose the ids of its step, loop item and page spans
 * and named them in the outbound `traceparent` (engine/spans.ts); here each becomes an exported span with
 * the engine's times. The run's own span has an id derived from the run id, so every replica that builds an
 * order (the steps' parent) or finishes the run (the run span) agrees on it without storing it. Its parent
 * is the `traceparent` the run was started with, kept in the run's stored options. Only ids, names, times,
 * statuses and the attributes below are exported: never inputs, data, errors or credentials.
 */
import { createHash } from 'node:crypto';
import { w3cTraceId } from '../../engine/protocols/traceparent.ts';
import type { EngineSpan } from '../../engine/spans.ts';
import type { SpanRecord, TraceExport } from '../../platform/traces.ts';
import type { StoredRun } from '../../store/index.ts';

/** What a run's trace is built from: its stored row (the parts a report keeps). */
export type TracedRun = Pick<StoredRun, 'runId' | 'toolId'> &
  Partial<Pick<StoredRun, 'traceId' | 'requestSource' | 'userId' | 'metadata' | 'options' | 'attempt'>>;

/** The stored option holding the span id of the `traceparent` a run was started with. */
const PARENT_OPTION = 'parentSpanId';
const SPAN_ID = /^[0-9a-f]{16}$/;

/** The id of a run's span: the same from every replica, never all zero. */
export function runSpanId(runId: string): string {
  const id = createHash('sha256').update(`kubeglue run ${runId}`).digest('hex').slice(0, 16);
  return /^0+$/.test(id) ? '0000000000000001' : id;
}

/** The option a run keeps the incoming `traceparent`'s span id in (accept.ts stores it). */
export function parentSpanOption(parentSpanId: string | undefined): Record<string, string> {
  return parentSpanId !== undefined && SPAN_ID.test(parentSpanId) ? { [PARENT_OPTION]: parentSpanId } : {};
}

/** The run's stored options without what only its trace reads (the run's view shows the client's). */
export function withoutTraceOptions<T extends object>(options: T): T {
  if (!(PARENT_OPTION in options)) return options;
  const { [PARENT_OPTION]: _parent, ...rest } = options as Record<string, unknown>;
  return rest as T;
}

function parentOf(run: TracedRun): string | undefined {
  const value = run.options?.[PARENT_OPTION];
  return typeof value === 'string' && SPAN_ID.test(value) ? value : undefined;
}

const SPAN_NAMES: Record<EngineSpan['kind'], (span: EngineSpan) => string> = {
  step: (span) => `step ${span.stepId}`,
  item: (span) => `step ${span.stepId} item ${span.index ?? 0}`,
  page: (span) => `step ${span.stepId} page ${span.index ?? 1}`,
};

/** The spans of one run, exported as they end. */
export class RunTrace {
  readonly #export: TraceExport;
  readonly #run: TracedRun;
  readonly #traceId: string;

  constructor(run: TracedRun, traces: TraceExport) {
    this.#export = traces;
    this.#run = run;
    this.#traceId = w3cTraceId(run.traceId ?? run.runId);
  }

  /** A step, loop item or page the engine ended. */
  engineSpan(span: EngineSpan): void {
    this.#export.span({
      traceId: this.#traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      name: SPAN_NAMES[span.kind](span),
      startMs: span.startMs,
      endMs: span.endMs,
      attributes: {
        'kubeglue.run.id': this.#run.runId,
        'kubeglue.step.id': span.stepId,
        ...(span.kind === 'item' ? { 'kubeglue.loop.item_index': span.index ?? 0 } : {}),
        ...(span.kind === 'page' ? { 'kubeglue.page.number': span.index ?? 1 } : {}),
      },
      failed: span.failed,
    });
  }

  /**
   * The run ended with `status`, now (its terminal write was just decided): its span runs from the run's
   * stored start (acceptance), after the spans of its steps, which reached this report before its result.
   */
  runEnded(status: 'success' | 'failed' | 'aborted'): void {
    const run = this.#run;
    const endMs = Date.now();
    const started = run.metadata?.startedAt !== undefined ? Date.parse(run.metadata.startedAt) : endMs;
    const parentSpanId = parentOf(run);
    const record: SpanRecord = {
      traceId: this.#traceId,
      spanId: runSpanId(run.runId),
      ...(parentSpanId !== undefined ? { parentSpanId, remoteParent: true } : {}),
      name: `run ${run.toolId}`,
      startMs: Math.min(started, endMs),
      endMs,
      attributes: {
        'kubeglue.run.id': run.runId,
        'kubeglue.tool.id': run.toolId,
        'kubeglue.run.status': status,
        ...(run.requestSource !== undefined ? { 'kubeglue.run.request_source': run.requestSource } : {}),
        ...(run.userId !== undefined ? { 'kubeglue.key.id': run.userId } : {}),
        'kubeglue.run.attempt': run.attempt ?? 1,
      },
      failed: status !== 'success',
    };
    this.#export.span(record);
  }
}
