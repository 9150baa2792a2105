import type { JsonValue } from '../../contract/json.ts';
import type { Evaluate, GuardedProperty } from '../../engine/types.ts';

/** Guarded properties as the sandbox driver installs them (engine/sandbox/driver.ts): reading throws. */
function guard(first: JsonValue | undefined, guarded: readonly GuardedProperty[]): void {
  if (first === null || typeof first !== 'object' || Array.isArray(first)) return;
  for (const { path, message } of guarded) {
    let holder: Record<string, unknown> | undefined = first;
    for (const key of path.slice(0, -1)) {
      if (holder === undefined) break;
      if (!Object.hasOwn(holder, key)) holder[key] = {};
      const next: unknown = holder[key];
      holder =
        next !== null && typeof next === 'object' && !Array.isArray(next)
          ? (next as Record<string, unknown>)
          : undefined;
    }
    if (holder === undefined) continue;
    Object.defineProperty(holder, path[path.length - 1] as string, {
      get() {
        throw new Error(message);
      },
      enumerable: true,
      configurable: true,
    });
  }
}

/**
 * TEST-ONLY stand-in for the isolated-vm sandbox, for unit tests of pure engine logic.
 * It is not isolated at all: never use it outside tests.
 */
export const unsafeTestEvaluate: Evaluate = async (source, args, options) => {
  const fn = new Function(`return (${source});`)() as (...a: JsonValue[]) => unknown;
  const copied = args.map((a) => JSON.parse(JSON.stringify(a)) as JsonValue);
  guard(copied[0], options?.guarded ?? []);
  const result = await fn(...copied);
  const json = result === undefined ? null : (JSON.parse(JSON.stringify(result)) as JsonValue);
  const capture = options?.capture;
  if (capture === undefined) return json;
  const first = copied[0] as Record<string, JsonValue> | undefined;
  return [json, (JSON.parse(JSON.stringify(first?.[capture] ?? null)) as JsonValue) ?? null];
};
