/**
 * Chained runs (outbox `chain`, operator/outbox/chain.ts decides whether one may start): started as the
 * parent's key would start them, or recorded as failed when the chain was refused.
 */
import type { JsonObject } from '../contract/json.ts';
import type { Store, StoredRun } from '../store/index.ts';
import type { RunContext, StartedRun } from './context.ts';
import { inputHash } from './input-hash.ts';
import { startRun } from './requests.ts';

/**
 * Starts a chained run as the parent's key would: same user, same tool and system restrictions, so a
 * chain never runs with more rights than the request that started it (a chained tool using a system the
 * key may not use is refused here, before any step runs).
 */
export function startChained(
  ctx: RunContext,
  input: { runId: string; toolId: string; inputs: JsonObject; parent: StoredRun },
): Promise<StartedRun> {
  const { parent } = input;
  return startRun(ctx, {
    toolId: input.toolId,
    request: { runId: input.runId, inputs: input.inputs },
    caller: {
      id: parent.userId ?? 'tool-chain',
      toolIds: parent.allowedToolIds ?? null,
      systemIds: parent.allowedSystemIds ?? null,
    },
    traceId: parent.traceId ?? parent.runId,
    requestSource: 'tool-chain',
    forceAsync: true,
    mode: parent.executionMode ?? 'prod',
    parentRunId: parent.runId,
  });
}

/** A chain the guard refused, kept as a failed tool-chain run so users can see why it did not start. */
export async function recordRefusedChain(
  store: Pick<Store, 'insertRun'>,
  input: { runId: string; toolId: string; parent: StoredRun; reason: string },
): Promise<void> {
  const now = new Date().toISOString();
  await store.insertRun(
    {
      runId: input.runId,
      toolId: input.toolId,
      status: 'failed',
      error: input.reason,
      requestSource: 'tool-chain',
      ...(input.parent.userId ? { userId: input.parent.userId } : {}),
      ...(input.parent.allowedToolIds ? { allowedToolIds: input.parent.allowedToolIds } : {}),
      ...(input.parent.allowedSystemIds ? { allowedSystemIds: input.parent.allowedSystemIds } : {}),
      systemIds: [],
      executionMode: input.parent.executionMode ?? 'prod',
      ...(input.parent.traceId ? { traceId: input.parent.traceId } : {}),
      parentRunId: input.parent.runId,
      metadata: { startedAt: now, completedAt: now, durationMs: 0 },
    },
    { inputHash: inputHash(input.toolId, {}) },
  );
}
