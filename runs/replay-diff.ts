/**
 * The differences a replay answers (contract/api/replay.ts): per step changed or not, and each value's
 * changes as JSON pointers with the values before and after, bounded in count and size.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ReplayChange, ReplayOutcome, ReplayStepDiff, ReplayValueDiff } from '../contract/api/replay.ts';
import type { JsonValue } from '../contract/json.ts';

/** Changes listed per value; more are counted as truncated. */
export const MAX_CHANGES = 50;
/** A changed value is shown up to this many characters of JSON; longer ones as a cut string. */
const MAX_VALUE_CHARS = 500;

function pointerSegment(key: string | number): string {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1');
}

function bounded(value: JsonValue): JsonValue {
  const text = JSON.stringify(value);
  return text.length > MAX_VALUE_CHARS
    ? `${text.slice(0, MAX_VALUE_CHARS)}… (${text.length} characters)`
    : value;
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The changes from `before` to `after`, deepest first where both are objects or arrays. */
export function valueDiff(before: JsonValue | undefined, after: JsonValue | undefined): ReplayValueDiff {
  const changes: ReplayChange[] = [];
  let more = false;
  const add = (path: string, from: JsonValue | undefined, to: JsonValue | undefined) => {
    if (changes.length >= MAX_CHANGES) {
      more = true;
      return;
    }
    changes.push({
      path,
      ...(from !== undefined ? { before: bounded(from) } : {}),
      ...(to !== undefined ? { after: bounded(to) } : {}),
    });
  };
  const walk = (path: string, from: JsonValue | undefined, to: JsonValue | undefined) => {
    if (more || isDeepStrictEqual(from, to)) return;
    if (Array.isArray(from) && Array.isArray(to)) {
      for (let i = 0; i < Math.max(from.length, to.length); i++) {
        walk(`${path}/${i}`, from[i], to[i]);
      }
      return;
    }
    if (isObject(from) && isObject(to)) {
      for (const key of new Set([...Object.keys(from), ...Object.keys(to)])) {
        walk(`${path}/${pointerSegment(key)}`, from[key], to[key]);
      }
      return;
    }
    add(path, from, to);
  };
  walk('', before, after);
  return { changed: changes.length > 0, changes, ...(more ? { truncated: true } : {}) };
}

/** Each step of either outcome, in the replay's order then the original's steps it no longer has. */
export function stepDiffs(original: ReplayOutcome, replay: ReplayOutcome): ReplayStepDiff[] {
  const before = new Map(original.stepResults.map((result) => [result.stepId, result]));
  const after = new Map(replay.stepResults.map((result) => [result.stepId, result]));
  const ids = [...after.keys(), ...[...before.keys()].filter((id) => !after.has(id))];
  return ids.map((stepId) => {
    const then = before.get(stepId);
    const now = after.get(stepId);
    const data = valueDiff(then?.data, now?.data);
    const status = !then
      ? 'added'
      : !now
        ? 'removed'
        : data.changed || then.success !== now.success
          ? 'changed'
          : 'unchanged';
    return {
      stepId,
      status,
      success: {
        ...(then ? { before: then.success } : {}),
        ...(now ? { after: now.success } : {}),
      },
      ...(now?.error !== undefined ? { error: now.error } : {}),
      ...(then && now ? { data } : {}),
    };
  });
}
