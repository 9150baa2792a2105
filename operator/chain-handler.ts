import { createHash } from 'node:crypto';
import type { JsonObject } from '../crds/json.ts';
import type { Store, StoredRun } from '../store/index.ts';

export const MAX_CHAIN_DEPTH = 10;

export interface ChainStarter {
  /** Starts `toolId` asynchronously as a chained run; resolves once it is durably queued. */
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

/**
 * Outbox `chain` (semantics.md "Chaining"): the parent's data (a non-object wrapped as `{data}`)
 * starts the named tool. A tool chaining to itself, a cycle, or a chain deeper than 10 is refused
 * and recorded.
 */
export function createChainHandler(deps: { store: Store; starter: ChainStarter }) {
  return async (row: { runId: string | null; payload: JsonObject }) => {
    const toolId = row.payload.toolId;
    if (!row.runId || typeof toolId !== 'string')
      return { abandon: 'chain row without a run id or tool id' } as const;
    const parent = await deps.store.getRun(row.runId);
    if (parent?.status !== 'success') return { done: true } as const;
    const runId = chainedRunId(parent.runId, toolId);
    const ancestors = await lineage(deps.store, parent);
    let reason: string | undefined;
    if (toolId === parent.toolId) reason = `tool '${toolId}' cannot chain to itself`;
    else if (ancestors.includes(toolId))
      reason = `chaining to '${toolId}' would form a cycle (${[...ancestors].reverse().join(' -> ')} -> ${toolId})`;
    else if (ancestors.length >= MAX_CHAIN_DEPTH)
      reason = `the chain is deeper than ${MAX_CHAIN_DEPTH} tools`;
    if (reason) {
      await deps.starter.recordRefused({ runId, toolId, parent, reason: `Chain refused: ${reason}` });
      return { done: true } as const;
    }
    const result = await deps.store.getRunResult(parent.runId);
    const data = result?.data ?? null;
    const inputs: JsonObject = data && typeof data === 'object' && !Array.isArray(data) ? data : { data };
    await deps.starter.startChained({ runId, toolId, inputs, parent });
    return { done: true } as const;
  };
}
