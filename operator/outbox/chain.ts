import { createHash } from 'node:crypto';
import { isApiError } from '../../contract/api/errors.ts';
import type { JsonObject } from '../../contract/json.ts';
import { type KeyNow, keyNow, keyProblem, narrowedCaller } from '../../runs/run-as.ts';
import type { Store, StoredRun } from '../../store/index.ts';

export const MAX_CHAIN_DEPTH = 10;

export interface ChainStarter {
  /**
   * Starts `toolId` asynchronously as a chained run, with the parent's restrictions (allowedToolIds,
   * allowedSystemIds) and user; resolves once it is durably queued. A refusal the request itself causes
   * (unknown or archived tool, missing system, a system the parent's key may not use) is thrown as the
   * API error it would answer with, and recorded as a refused chain.
   */
  startChained(input: {
    runId: string;
    toolId: string;
    inputs: JsonObject;
    parent: StoredRun;
  }): Promise<void>;
  /** Records a refused chain as a failed run, so `GET /runs?requestSources=tool-chain` shows why. */
  recordRefused(input: { runId: string; toolId: string; parent: StoredRun; reason: string }): Promise<void>;
}

/** The chained run's id is derived from its parent, so a redelivered chain row cannot start it twice. */
export function chainedRunId(parentRunId: string, toolId: string): string {
  const hex = createHash('sha256').update(`${parentRunId}\0${toolId}`).digest('hex');
  return `chain-${hex.slice(0, 32)}`;
}

/** Tool ids from the parent up the chain (nearest first). */
async function lineage(store: Store, parent: StoredRun): Promise<string[]> {
  const tools = [parent.toolId];
  let current = parent;
  while (current.parentRunId && tools.length <= MAX_CHAIN_DEPTH) {
    const next = await store.getRun(current.parentRunId);
    if (!next) break;
    tools.push(next.toolId);
    current = next;
  }
  return tools;
}

/** Why the chain from parent to toolId may not start, or undefined when it may. */
function refusal(toolId: string, parent: StoredRun, ancestors: readonly string[]): string | undefined {
  // Checked at acceptance too; again here, so a run stored by any path cannot chain past its key's tools.
  if (parent.allowedToolIds && !parent.allowedToolIds.includes(toolId))
    return `the API key that started run '${parent.runId}' may not use tool '${toolId}'`;
  if (toolId === parent.toolId) return `tool '${toolId}' cannot chain to itself`;
  if (ancestors.includes(toolId))
    return `chaining to '${toolId}' would form a cycle (${[...ancestors].reverse().join(' -> ')} -> ${toolId})`;
  if (ancestors.length >= MAX_CHAIN_DEPTH) return `the chain is deeper than ${MAX_CHAIN_DEPTH} tools`;
  return undefined;
}

/** The parent as the chain starts from it: its restrictions narrowed to what its key may do now. */
function narrowedParent(parent: StoredRun, key: KeyNow): StoredRun {
  const caller = narrowedCaller(
    {
      id: parent.userId ?? 'tool-chain',
      toolIds: parent.allowedToolIds ?? null,
      systemIds: parent.allowedSystemIds ?? null,
    },
    key,
  );
  const { allowedToolIds: _t, allowedSystemIds: _s, ...rest } = parent;
  return {
    ...rest,
    ...(caller.toolIds ? { allowedToolIds: caller.toolIds } : {}),
    ...(caller.systemIds ? { allowedSystemIds: caller.systemIds } : {}),
  };
}

/**
 * Outbox `chain` (semantics.md "Chaining"): the parent's data (a non-object wrapped as `{data}`)
 * starts the named tool. A chain to a tool the parent's key may not use, to itself, a cycle, a chain
 * deeper than 10, one whose key was revoked since the parent started (or may no longer run it: no
 * runs:execute, not its tool), or one the start refuses (unknown or archived tool, a system the key may
 * not use) is refused and recorded.
 */
export function createChainHandler(deps: { store: Store; starter: ChainStarter }) {
  return async (row: { runId: string | null; payload: JsonObject }) => {
    const toolId = row.payload.toolId;
    if (!row.runId || typeof toolId !== 'string')
      return { abandon: 'chain row without a run id or tool id' } as const;
    const parent = await deps.store.getRun(row.runId);
    if (parent?.status !== 'success') return { done: true } as const;
    const runId = chainedRunId(parent.runId, toolId);
    // The key that started the parent, as it is now: a key revoked since starts no chain.
    const key = await keyNow(deps.store, parent.userId);
    const keyRefusal = keyProblem(key, toolId);
    const reason =
      refusal(toolId, parent, await lineage(deps.store, parent)) ??
      (keyRefusal && `the API key that started run '${parent.runId}' ${keyRefusal.what}`);
    if (reason) {
      await deps.starter.recordRefused({ runId, toolId, parent, reason: `Chain refused: ${reason}` });
      return { done: true } as const;
    }
    const result = await deps.store.getRunResult(parent.runId);
    const data = result?.data ?? null;
    const inputs: JsonObject = data && typeof data === 'object' && !Array.isArray(data) ? data : { data };
    try {
      await deps.starter.startChained({ runId, toolId, inputs, parent: narrowedParent(parent, key) });
    } catch (error) {
      // A client error will not go away by retrying the row: record it like the other refusals.
      if (!isApiError(error) || error.statusCode >= 500 || error.statusCode === 429) throw error;
      await deps.starter.recordRefused({ runId, toolId, parent, reason: `Chain refused: ${error.message}` });
    }
    return { done: true } as const;
  };
}

/**
 * A dead `chain` row (its handler failed KUBEGLUE_JOB_MAX_FAILURES times in a row): the chained run is
 * recorded as failed with the reason, as a refused chain is, so `GET /runs?requestSources=tool-chain` shows
 * it. A chained run that started after all is left alone.
 */
export function createChainDeadHandler(deps: { store: Store; starter: ChainStarter }) {
  return async (row: { runId: string | null; payload: JsonObject }, reason: string): Promise<void> => {
    const toolId = row.payload.toolId;
    if (!row.runId || typeof toolId !== 'string') return;
    const parent = await deps.store.getRun(row.runId);
    if (!parent) return;
    const runId = chainedRunId(parent.runId, toolId);
    if (await deps.store.getRun(runId)) return;
    await deps.starter.recordRefused({ runId, toolId, parent, reason: `Chain failed to start: ${reason}` });
  };
}
