import type { JsonValue } from '../../crds/json.ts';
import type { Evaluate } from '../../runner/engine/types.ts';

/**
 * TEST-ONLY stand-in for the isolated-vm sandbox, for unit tests of pure engine logic.
 * It is not isolated at all: never use it outside tests.
 */
export const unsafeTestEvaluate: Evaluate = async (source, args) => {
  const fn = new Function(`return (${source});`)() as (...a: JsonValue[]) => unknown;
  const copied = args.map((a) => JSON.parse(JSON.stringify(a)) as JsonValue);
  const result = await fn(...copied);
  return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as JsonValue);
};
