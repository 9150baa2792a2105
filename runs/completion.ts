import { createHash } from 'node:crypto';
import type { JsonObject } from '../contract/json.ts';
import type { EngineResult } from '../engine/types.ts';
import type { FinishRun, OutboxInput, StoredRun } from '../store/index.ts';
import { chainTarget } from './webhook-url.ts';

export const CANCELLED_MESSAGE = 'Run was cancelled';

/** Completion effects of a terminal run (DESIGN.md "Completion effects"): chains on success, notifications always. */
export function completionEffects(
  run: Pick<StoredRun, 'runId' | 'options'>,
  status: FinishRun['status'],
): OutboxInput[] {
  const webhookUrl = (run.options as { webhookUrl?: unknown } | undefined)?.webhookUrl;
  if (typeof webhookUrl !== 'string') return [];
  const toolId = chainTarget(webhookUrl);
  if (toolId !== undefined) {
    return status === 'success' ? [{ kind: 'chain', runId: run.runId, payload: { toolId } }] : [];
  }
  return [{ kind: 'notify', runId: run.runId, payload: { url: webhookUrl } }];
}

/** The terminal write of a run from the engine's result, effects included. */
export function finishFromResult(run: StoredRun, result: EngineResult, now = new Date()): FinishRun {
  const durationMs = Math.max(0, now.getTime() - Date.parse(run.metadata.startedAt));
  return {
    status: result.status,
    ...(result.error !== undefined ? { error: result.error } : {}),
    completedAt: now.toISOString(),
    durationMs,
    stepResults: result.stepResults,
    result: {
      success: result.status === 'success',
      data: result.data,
      ...(result.error !== undefined ? { error: result.error } : {}),
    },
    files: result.files.map((f) => ({
      fileKey: f.fileKey,
      filename: f.filename,
      contentType: f.contentType,
      content: Buffer.from(f.contentBase64, 'base64'),
    })),
    outbox: completionEffects(run, result.status),
  };
}

/** Same tool and same inputs make the same hash: a repeated runId with it is a retry, else a conflict. */
export function inputHash(toolId: string, inputs: JsonObject): string {
  return createHash('sha256')
    .update(JSON.stringify([toolId, canonical(inputs)]))
    .digest('hex');
}

function canonical(value: unknown): unknown {
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
