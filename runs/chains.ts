/**
 * Chained runs (outbox `chain`, operator/outbox/chain.ts decides whether one may start): started as the
 * parent's key would start them, or recorded as failed when the chain was refused.
 */
import type { JsonObject } from '../contract/json.ts';
import type { Store, StoredRun } from '../store/index.ts';
import type { RunContext, StartedRun } from './context.ts';
import { recordRefusedRun } from './refused.ts';
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
  const { parent } = input;
  return recordRefusedRun(store, {
    runId: input.runId,
    toolId: input.toolId,
    reason: input.reason,
    requestSource: 'tool-chain',
    ...(parent.userId ? { userId: parent.userId } : {}),
    ...(parent.allowedToolIds ? { allowedToolIds: parent.allowedToolIds } : {}),
    ...(parent.allowedSystemIds ? { allowedSystemIds: parent.allowedSystemIds } : {}),
    executionMode: parent.executionMode ?? 'prod',
    ...(parent.traceId ? { traceId: parent.traceId } : {}),
    parentRunId: parent.runId,
  });
}
