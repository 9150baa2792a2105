/**
 * What a run may take before it is accepted (accept.ts): a place within its key's quotas (runs per minute,
 * concurrent runs) and, for a tool with maxConcurrentRuns, one of the tool's slots. Both are counted in
 * the store (store/queries/run-slots.ts), so every API replica, the operator and the runner Pods count the
 * same runs. A sync run of a tool that queues waits here for its slot, up to its timeout; an async one
 * is accepted at once and waits for its slot in the operator's admission (operator/toolrun/). Over a key's
 * quota, or at a tool's capacity when the tool refuses: 429 with Retry-After (docs/operations.md).
 */
import { KG_ERR_KEY_QUOTA_EXCEEDED, KG_ERR_TOOL_AT_CAPACITY } from '../contract/api/errors.ts';
import { DEFAULT_RUN_TIMEOUT_MS, type RunWaiting } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import type {
  KeyQuotaRequest,
  RateState,
  SlotClaimRequest,
  Store,
  StoredRun,
  ToolSlotRequest,
} from '../store/index.ts';
import type { Caller } from './context.ts';

/** An API key's quotas as a caller carries them; null or absent: none. */
export interface CallerQuotas {
  runsPerMinute: number | null;
  concurrentRuns: number | null;
}

/** How often a sync run waiting in its tool's queue asks the store again. */
export const SYNC_QUEUE_POLL_MS = 250;
/** A slot of a run that has no row in runs yet counts this long past the run's timeout. */
const SLOT_MARGIN_MS = 60_000;

export interface CapacityRequest {
  runId: string;
  tool: Tool;
  caller: Caller;
  async: boolean;
  timeoutMs: number | undefined;
  signal?: AbortSignal | undefined;
}

/** A run counted against its key or tool: release() once it is answered (a no-op for an async run). */
export interface TakenCapacity {
  release(): Promise<void>;
  /** The key's runsPerMinute quota after this run, when it has one. */
  rate?: RateState | undefined;
}

const NOTHING: TakenCapacity = { release: async () => {} };

/** The tool's slot request for this run, if it takes one at accept. */
function toolRequest(tool: Tool, async: boolean): ToolSlotRequest | undefined {
  if (tool.maxConcurrentRuns === undefined) return undefined;
  const whenAtCapacity = tool.whenAtCapacity ?? 'queue';
  // An async run of a queueing tool is accepted at once and queued by the operator's admission.
  if (async && whenAtCapacity === 'queue') return undefined;
  return { toolId: tool.id, limit: tool.maxConcurrentRuns, whenAtCapacity };
}

function keyRequest(caller: Caller): KeyQuotaRequest | undefined {
  const quotas = caller.quotas;
  if (!quotas || (quotas.runsPerMinute === null && quotas.concurrentRuns === null)) return undefined;
  return {
    keyId: caller.id,
    ...(quotas.runsPerMinute !== null ? { runsPerMinute: quotas.runsPerMinute } : {}),
    ...(quotas.concurrentRuns !== null ? { concurrentRuns: quotas.concurrentRuns } : {}),
  };
}

/**
 * Counts the run against its key's quotas and its tool's limit, or throws the 429 that says which one
 * refused; a sync run of a queueing tool at capacity waits for its slot first, up to its timeout.
 */
export async function takeCapacity(store: Store, request: CapacityRequest): Promise<TakenCapacity> {
  const tool = toolRequest(request.tool, request.async);
  const key = keyRequest(request.caller);
  if (!tool && !key) return NOTHING;
  const timeoutMs = request.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  const started = Date.now();
  const claimOf = (now: Date, withKey: boolean): SlotClaimRequest => ({
    runId: request.runId,
    ...(tool ? { tool } : {}),
    ...(withKey && key ? { key } : {}),
    expiresAt: new Date(now.getTime() + timeoutMs + SLOT_MARGIN_MS).toISOString(),
    now,
  });
  const release = async () => {
    // An async run's slot is freed by its terminal write; only a sync one is released when answered.
    if (!request.async) await store.runSlots.release(request.runId);
  };
  let claim = await store.runSlots.claim(claimOf(new Date(), true));
  if (claim.key?.refused === 'runsPerMinute') {
    throw KG_ERR_KEY_QUOTA_EXCEEDED('runsPerMinute', claim.key.limit, claim.key.resetSeconds);
  }
  if (claim.key?.refused === 'concurrentRuns') {
    throw KG_ERR_KEY_QUOTA_EXCEEDED('concurrentRuns', claim.key.limit, 1);
  }
  while (tool && claim.tool?.state !== 'held') {
    if (claim.tool?.state === 'refused') {
      throw KG_ERR_TOOL_AT_CAPACITY(tool.toolId, tool.limit, 1, 0);
    }
    const waited = Date.now() - started;
    if (waited >= timeoutMs || request.signal?.aborted) {
      await store.runSlots.release(request.runId);
      throw KG_ERR_TOOL_AT_CAPACITY(tool.toolId, tool.limit, 1, waited);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(SYNC_QUEUE_POLL_MS, timeoutMs - waited)));
    claim = await store.runSlots.claim(claimOf(new Date(), false));
  }
  const rate = claim.key && claim.key.refused === undefined ? claim.key.runsPerMinute : undefined;
  return { release, ...(rate ? { rate } : {}) };
}

/** The message of a run waiting for one of its tool's slots (the Run's waiting, the ToolRun's condition). */
export function toolQueueMessage(toolId: string, position: number, inUse: number, limit: number): string {
  return `Waiting for a slot of tool ${toolId}: position ${position} in its queue; ${inUse} of ${limit} runs executing (maxConcurrentRuns)`;
}

/** The runs among these that wait in their tool's queue, by run id, as the Run view shows them. */
export async function waitingRuns(
  store: Store,
  runs: readonly StoredRun[],
  now = new Date(),
): Promise<Map<string, RunWaiting>> {
  const live = runs.filter((run) => run.status === 'running');
  const views = new Map<string, RunWaiting>();
  if (live.length === 0) return views;
  const limitOf = new Map(
    live.map((run) => [
      run.runId,
      (run.tool as { maxConcurrentRuns?: number } | undefined)?.maxConcurrentRuns,
    ]),
  );
  for (const slot of await store.runSlots.waiting(
    live.map((run) => run.runId),
    now,
  )) {
    const limit = limitOf.get(slot.runId) ?? slot.inUse;
    views.set(slot.runId, {
      reason: 'ToolConcurrencyLimit',
      message: toolQueueMessage(slot.toolId, slot.position, slot.inUse, limit),
      position: slot.position,
      inUse: slot.inUse,
      limit: Math.max(1, limit),
      since: slot.since,
    });
  }
  return views;
}
