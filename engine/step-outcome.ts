/**
 * What a step leaves behind while a run executes it (run-tool.ts): its envelope in sourceData, its outcome
 * and what its step result reports, how it fails; and how a loop's items run and are counted.
 */
import { LOOP_FAILURES_LISTED, type StepLoop, type StepPagination } from '../contract/api/run.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';

/** A step's value in sourceData (semantics.md, "Step envelope"). */
export interface Envelope {
  currentItem: JsonValue;
  data: JsonValue;
  success: boolean;
  error?: string;
  /** How the execution's pagination ended (for the step result; not part of the envelope in sourceData). */
  pagination?: StepPagination;
}

export class StepFailure extends Error {
  readonly envelopeData: JsonValue;
  /** jsonBytes(envelopeData): it is stored with the step's result. */
  readonly bytes: number;
  readonly loop: StepLoop | undefined;
  constructor(message: string, envelopeData: JsonValue, bytes = 4, loop?: StepLoop) {
    super(message);
    this.envelopeData = envelopeData;
    this.bytes = bytes;
    this.loop = loop;
  }
}

/** A step's outcome: its value in sourceData, its data, and the size of that data as JSON. */
export interface StepOutcome {
  envelope: JsonValue;
  data: JsonValue;
  bytes: number;
  /** What the step result says besides: a loop's items, a pagination's end. */
  report: StepReport;
}

export type StepReport = { loop?: StepLoop; pagination?: StepPagination };

/** A loop item's error in the step result's list of failed items is cut to this many characters. */
const ITEM_ERROR_LIMIT = 1000;

/** A loop's items as its step result counts them: how many, how many failed, the first failures. */
export function loopReport(items: number, envelopes: ReadonlyArray<JsonObject | undefined>): StepLoop {
  const failedItems: StepLoop['failedItems'] = [];
  let failed = 0;
  envelopes.forEach((envelope, index) => {
    if (envelope === undefined || envelope.success !== false) return;
    failed += 1;
    if (failedItems.length >= LOOP_FAILURES_LISTED) return;
    const error = typeof envelope.error === 'string' ? envelope.error : 'failed';
    failedItems.push({
      index,
      error: error.length > ITEM_ERROR_LIMIT ? `${error.slice(0, ITEM_ERROR_LIMIT)}…` : error,
    });
  });
  return { items, failed, failedItems };
}

export function envelopeJson(envelope: Envelope): JsonObject {
  const out: JsonObject = {
    currentItem: envelope.currentItem,
    data: envelope.data,
    success: envelope.success,
  };
  if (envelope.error !== undefined) out.error = envelope.error;
  return out;
}

/** Runs `fn` over items with at most `concurrency` at once, results in item order. */
export async function mapOrdered<T, R>(
  items: T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
) {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}
