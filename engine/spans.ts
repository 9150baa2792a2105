/**
 * The spans of a traced run (docs/operations.md "Traces"): only when its order carries `trace`, the engine
 * opens one span per executed step, loop item and page, with an id chosen here, and reports each as an
 * `EngineEvent` of type `span` when it ends. The span a request is sent in is the parent its `traceparent`
 * names, so the id a target sees is the id that is exported. The engine exports nothing itself:
 * runs/execution/report.ts turns these events into OpenTelemetry spans, whichever process executed the run.
 * Untraced, none of this runs (no ids drawn, no events).
 */
import { newSpanId } from './protocols/traceparent.ts';

/** What a span is of. */
export type EngineSpanKind = 'step' | 'item' | 'page';

/** A span the engine ended: ids and times only, never data. */
export interface EngineSpan {
  kind: EngineSpanKind;
  spanId: string;
  parentSpanId: string;
  stepId: string;
  /** The loop item's index (kind item), the page's number from 1 (kind page). */
  index?: number | undefined;
  /** Epoch ms: the wall clock of the process that ran the engine (as every engine event's time). */
  startMs: number;
  endMs: number;
  failed: boolean;
}

/**
 * Epoch ms from the wall clock, as every engine event is timed: a span's parent may be built in another
 * process (the run's, in the api), whose monotonic clock's origin drifts from this one's.
 */
function spanNow(): number {
  return Date.now();
}

/** A span opened and not yet ended. */
export class OpenSpan {
  readonly spanId = newSpanId();
  readonly #startMs = spanNow();
  readonly #parentSpanId: string;
  readonly #kind: EngineSpanKind;
  readonly #stepId: string;
  readonly #index: number | undefined;

  constructor(kind: EngineSpanKind, parentSpanId: string, stepId: string, index?: number) {
    this.#kind = kind;
    this.#parentSpanId = parentSpanId;
    this.#stepId = stepId;
    this.#index = index;
  }

  /** The span, ended now. */
  end(failed: boolean): { type: 'span'; span: EngineSpan } {
    return {
      type: 'span',
      span: {
        kind: this.#kind,
        spanId: this.spanId,
        parentSpanId: this.#parentSpanId,
        stepId: this.#stepId,
        ...(this.#index !== undefined ? { index: this.#index } : {}),
        startMs: this.#startMs,
        endMs: spanNow(),
        failed,
      },
    };
  }
}
