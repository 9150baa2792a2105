/**
 * Run orders as the tests and benches hand them to a worker pool or a runner, without the fields each
 * would otherwise write out again. No vitest here: the benches import it too.
 */
import { Tool, type ToolInput } from '../../contract/api/tool.ts';
import type { RunOrder } from '../../contract/wire/run-order.ts';

/** The W3C example trace id: a run order's trace when the caller names none. */
export const EXAMPLE_TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
let nextOrder = 1;

/**
 * The order for `tool` (its id 'tool' unless it names one) with no inputs and no systems, a run id of its
 * own and the example trace; `extra` replaces any of these.
 */
export function runOrder(
  tool: Omit<ToolInput, 'id'> & { id?: string },
  extra: Partial<RunOrder> = {},
): RunOrder {
  return {
    runId: `run-${nextOrder++}`,
    tool: Tool.parse({ id: 'tool', ...tool }),
    inputs: {},
    systems: [],
    traceId: EXAMPLE_TRACE_ID,
    ...extra,
  };
}
