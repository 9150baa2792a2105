/**
 * How much data a run may carry. A step's data and the run's result cross to the API process over
 * IPC (or to the internal API from a runner Pod), are stored and answered: a 60 MB transform result
 * once grew the API process to 631 MB. The engine measures each step's data and the run's result as
 * they are produced and fails what is larger than its bound, before anything leaves the worker.
 */
import type { JsonValue } from '../contract/json.ts';

/** The settings that raise the bounds (named in the failures; pool workers and runner Pods read them). */
export const STEP_DATA_SETTING = 'KUBEGLUE_MAX_STEP_DATA_BYTES';
export const RESULT_SETTING = 'KUBEGLUE_MAX_RESULT_BYTES';

/** The size of a value as UTF-8 JSON text: what it weighs in IPC, in the store and in answers. */
export function jsonBytes(value: JsonValue): number {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') {
    return String(value).length;
  }
  // V8's JSON.stringify is native and fast (~3 MB in ~10 ms); a walker in JS is not faster.
  return Buffer.byteLength(JSON.stringify(value) ?? 'null');
}

/** `62914562 bytes (60.0 MiB)`; below a MiB just `2002 bytes`. */
export function describeBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return mib >= 1 ? `${bytes} bytes (${mib.toFixed(1)} MiB)` : `${bytes} bytes`;
}

/** `<what> is <size> of JSON, more than the limit of <limit> (<setting>)`: names all three. */
export function tooLargeMessage(what: string, bytes: number, limit: number, setting: string): string {
  return `${what} is ${describeBytes(bytes)} of JSON, more than the limit of ${describeBytes(limit)} (${setting}); return less data, or raise ${setting}`;
}
