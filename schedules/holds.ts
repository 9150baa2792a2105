/**
 * What holds an enabled schedule back: why its ticks would start no run now. Its tool is missing or
 * archived, its payload no longer satisfies the tool's inputSchema, or the API key it runs as was revoked
 * or may no longer run the tool. The operator looks before every tick (a tick never starts a run that would
 * be refused, nor one with the rights of a revoked key); the REST view looks at every read (a revocation
 * or a changed tool shows at once). A held schedule is `paused` with the reason, never a failed run per tick.
 */
import { isApiError } from '../contract/api/errors.ts';
import type { Tool } from '../contract/api/tool.ts';
import { ScheduleReason } from '../contract/reasons.ts';
import type { ToolScheduleSpec } from '../contract/resources/kinds.ts';
import { assertInputsMatchSchema } from '../runs/input-schema.ts';
import { type KeyNow, keyProblem } from '../runs/run-as.ts';

export interface ScheduleHold {
  reason: ScheduleReason;
  message: string;
}

/** Whether a schedule's tool can run: what pauses a schedule before anything else is looked at. */
export type ToolState = 'ready' | 'archived' | 'missing';

/** The hold of a tool that is archived or missing; undefined for one that is there. */
export function toolHold(tool: ToolState): ScheduleHold | undefined {
  if (tool === 'archived') {
    return {
      reason: ScheduleReason.ToolArchived,
      message: 'The tool is archived: no tick starts a run until it is unarchived',
    };
  }
  if (tool === 'missing') {
    return {
      reason: ScheduleReason.ToolNotFound,
      message: 'The tool does not exist: no tick starts a run until it is created again',
    };
  }
  return undefined;
}

/**
 * What holds the schedule back, first the tool, then the key (a revoked key's schedule says so even when
 * its payload is wrong too), then the payload; undefined when its ticks may start runs. `tool`: the tool
 * as it is now, undefined when it does not exist.
 */
export function scheduleHold(
  spec: Pick<ToolScheduleSpec, 'toolId' | 'inputs'>,
  tool: Tool | undefined,
  key: KeyNow,
): ScheduleHold | undefined {
  const onTool = toolHold(!tool ? 'missing' : tool.archived ? 'archived' : 'ready');
  if (onTool || !tool) return onTool;
  const problem = keyProblem(key, spec.toolId, tool.steps);
  if (problem) {
    return {
      reason: problem.kind === 'revoked' ? ScheduleReason.KeyRevoked : ScheduleReason.KeyNotAllowed,
      message:
        `No tick starts a run: the API key '${problem.keyId}' the schedule runs as ${problem.what}. ` +
        'A key that may run the tool takes the schedule over by changing it (any PUT, such as pausing and resuming it)',
    };
  }
  try {
    assertInputsMatchSchema(tool, spec.inputs ?? {});
  } catch (error) {
    if (!isApiError(error)) throw error;
    return {
      reason: ScheduleReason.InputsInvalid,
      message: `No tick starts a run until the payload satisfies the tool's inputSchema again: ${error.message}`,
    };
  }
  return undefined;
}
