/**
 * The run order (contract/wire/run-order.ts) of a running run, built here and nowhere else: the sync path
 * sends it to a worker of this process, the pool launcher too, the internal API serves it to a runner Pod.
 * What differs between them is where the parts come from (OrderSources); the rules are one: the ids, the
 * inputs, the timeout, the tool's persistent state, and which failures refuse the order for good.
 */
import { ApiError } from '../../contract/api/errors.ts';
import type { RunOptions, RuntimeCredentials } from '../../contract/api/run.ts';
import { Tool } from '../../contract/api/tool.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import type { ResolvedSystem, RunOrder } from '../../contract/wire/run-order.ts';
import type { StoredRun, StoreQueries } from '../../store/index.ts';
import { stateForRun } from '../../tools/state.ts';
import { asReused, type StepResultsStore, storedStepResults } from './reuse.ts';
import { runSpanId } from './trace.ts';

/** Where the parts of a run's order come from, for one transport. */
export interface OrderSources {
  /**
   * The run's tool, checked already by the caller (the sync path's definition, a ToolRun's snapshot);
   * absent: the run's stored snapshot, checked here (one that is not a Tool refuses the order).
   */
  tool?: Tool;
  /** The run's systems with their credentials for its mode. */
  systems(run: StoredRun): Promise<ResolvedSystem[]>;
  /** The runtime credentials the run was started with (read, not removed: an order may be built again). */
  runtimeCredentials(run: StoredRun): Promise<RuntimeCredentials | undefined>;
  /** Where the tool's persistent state is read, and a resumed run's reused step results. */
  store: Pick<StoreQueries, 'toolState'> & StepResultsStore;
  /**
   * What the run's timeout counts from. `accepted`: the run's start (`metadata.startedAt`), so the order
   * gets what is left and a run whose time ran out while it waited is refused; a runner Pod's order, which
   * is fetched after admission, scheduling and the image pull. `order`: the order gets the whole timeout
   * and the worker starts the clock; a run executing in this process (the sync path, the pool launcher).
   */
  timeoutFrom: 'accepted' | 'order';
  /**
   * A try (POST /v1/tools/run with untilStep, synchronous only): the step after which the run stops. Not
   * stored with the run: an order built again from the store runs the whole tool.
   */
  untilStep?: string | undefined;
  /** This process exports traces (report.ts `traced`): the order asks the engine for its spans. */
  traced?: boolean | undefined;
}

/** Why an order can never be built for a run: the run fails (finish.ts) with this message. */
export class OrderRefusal extends Error {}

/**
 * The RunOrder of a running run. `now` (epoch ms) is when it is built, for a timeout counted from the
 * run's acceptance. Throws OrderRefusal when no order can ever be built (an invalid snapshot, the time ran
 * out, a system that is gone); other errors may pass (a store or a Secret store that did not answer).
 */
export async function buildOrder(run: StoredRun, sources: OrderSources, now: number): Promise<RunOrder> {
  const tool = sources.tool ?? checkedSnapshot(run);
  const options = run.options as RunOptions | undefined;
  const timeout = options?.timeout;
  let timeoutMs = timeout;
  if (timeout !== undefined && sources.timeoutFrom === 'accepted') {
    timeoutMs = Date.parse(run.metadata.startedAt) + timeout - now;
    if (timeoutMs <= 0) throw new OrderRefusal(`Run timed out after ${timeout} ms before it started`);
  }
  let systems: ResolvedSystem[];
  try {
    systems = await sources.systems(run);
  } catch (error) {
    // E.g. a system deleted after the run was accepted: that will not change by asking again.
    if (error instanceof ApiError && error.statusCode < 500) throw new OrderRefusal(error.message);
    throw error;
  }
  return {
    runId: run.runId,
    ...(run.userId !== undefined ? { keyId: run.userId } : {}),
    tool,
    inputs: run.toolPayload ?? {},
    systems,
    runtimeCredentials: await sources.runtimeCredentials(run),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    traceId: run.traceId ?? run.runId,
    ...(sources.traced ? { trace: { spanId: runSpanId(run.runId) } } : {}),
    ...(await stateForRun(sources.store, run, tool)),
    ...(await reusedSteps(run, tool, sources.store)),
    ...((options?.record ?? tool.record) ? { record: true } : {}),
    ...(sources.untilStep !== undefined ? { untilStep: sources.untilStep } : {}),
  };
}

/**
 * A resumed run's reused step results (runs/resume.ts decided how many when it accepted the run), read
 * from the resumed run's stored results each time the order is built: a run handed back for another
 * attempt reuses them again. Gone meanwhile (retention): the order is refused for good.
 */
async function reusedSteps(
  run: StoredRun,
  tool: Tool,
  store: StepResultsStore,
): Promise<Pick<RunOrder, 'reusedSteps'>> {
  const count = run.reusedSteps ?? 0;
  if (run.resumedFrom === undefined || count === 0) return {};
  const stored = await storedStepResults(store, run.resumedFrom);
  const reused = asReused(stored ?? [], count, run.resumedFrom);
  const whole =
    reused.length === count &&
    reused.every((result, index) => result.stepId === tool.steps[index]?.id && result.data !== undefined);
  if (!whole) {
    throw new OrderRefusal(
      `The stored step results of run ${run.resumedFrom} this resumed run reuses are no longer stored in full`,
    );
  }
  return { reusedSteps: reused };
}

function checkedSnapshot(run: StoredRun): Tool {
  const tool = Tool.safeParse(run.tool);
  if (!tool.success)
    throw new OrderRefusal(`The run's tool snapshot is invalid: ${formatIssues(tool.error)}`);
  return tool.data;
}
