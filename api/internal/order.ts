import { ApiError } from '../../contract/api/errors.ts';
import type { RunOptions, RuntimeCredentials } from '../../contract/api/run.ts';
import { Tool } from '../../contract/api/tool.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import type { ResolvedSystem, RunOrder } from '../../contract/wire/run-order.ts';
import type { ExecutionMode, StoredRun, StoreQueries } from '../../store/index.ts';
import { stateForRun } from '../../tools/state.ts';

export interface OrderSources {
  /** Systems of the run's tool, with their credentials for the run's mode. */
  resolveSystems(systemIds: string[], mode: ExecutionMode): Promise<ResolvedSystem[]>;
  /** The runtime credentials the run was started with (read, not removed: the order may be fetched again). */
  takeRuntimeCredentials(runId: string): Promise<RuntimeCredentials | undefined>;
  /** Where the tool's persistent state is read. */
  store: Pick<StoreQueries, 'toolState'>;
}

/** Why an order can never be built for a run: the run fails with this message. */
export class OrderRefusal extends Error {}

/**
 * The RunOrder of a running run, from its stored row: the tool snapshot and inputs it was accepted with,
 * systems resolved now, and what is left of its timeout counted from when it was accepted (time spent
 * queued counts, as it does for a sync run waiting for a worker).
 */
export async function buildRunOrder(run: StoredRun, sources: OrderSources, now: number): Promise<RunOrder> {
  const tool = Tool.safeParse(run.tool);
  if (!tool.success)
    throw new OrderRefusal(`The run's tool snapshot is invalid: ${formatIssues(tool.error)}`);
  const timeout = (run.options as RunOptions | undefined)?.timeout;
  let timeoutMs: number | undefined;
  if (timeout !== undefined) {
    timeoutMs = Date.parse(run.metadata.startedAt) + timeout - now;
    if (timeoutMs <= 0) throw new OrderRefusal(`Run timed out after ${timeout} ms before it started`);
  }
  let systems: ResolvedSystem[];
  try {
    systems = await sources.resolveSystems(run.systemIds, run.executionMode ?? 'prod');
  } catch (error) {
    // E.g. a system deleted after the run was accepted: that will not change by asking again.
    if (error instanceof ApiError && error.statusCode < 500) throw new OrderRefusal(error.message);
    throw error;
  }
  return {
    runId: run.runId,
    tool: tool.data,
    inputs: run.toolPayload ?? {},
    systems,
    runtimeCredentials: await sources.takeRuntimeCredentials(run.runId),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    traceId: run.traceId ?? run.runId,
    ...(await stateForRun(sources.store, run, tool.data)),
  };
}
