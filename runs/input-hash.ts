import { createHash } from 'node:crypto';
import type { JsonObject } from '../contract/json.ts';

/** Same tool and same inputs make the same hash: a repeated runId with it is a retry, else a conflict. */
export function inputHash(toolId: string, inputs: JsonObject): string {
  return createHash('sha256')
    .update(JSON.stringify([toolId, canonical(inputs)]))
    .digest('hex');
}

/** The value with every object's keys in sorted order, so equal values serialize alike. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}
