/**
 * The Tool reconciler's decision, pure: from the problems validation found (every script compiled in
 * the sandbox, schemas, systems resolved) to the status the Tool should show, and a patch only when
 * that differs from what it shows.
 */
import { ToolConditionType, ToolReason } from '../../contract/reasons.ts';
import type { ToolResource, ToolStatus } from '../../contract/resources/kinds.ts';
import { conditionIs, type DesiredCondition, setCondition } from '../conditions.ts';

export interface ToolObservation {
  now: Date;
  tool: ToolResource;
  /** The spec breaks the Tool schema: these issues, and no further checks. */
  specIssues?: string[];
  /** What checkTool reported (`field: message`, one per problem). */
  problems: string[];
  /** The Systems the steps use that are Ready=False, each described (`System crm-prod (…) is not ready: …`). */
  unreadySystems?: string[];
}

export interface ToolDecision {
  /** The status patch to write through /status; undefined: the status is current. */
  patch?: Partial<ToolStatus>;
}

/** Which kind of problem a findToolProblems line reports. */
export function problemKind(problem: string): ToolReason {
  if (/: (unsupported URL scheme '|.* no step can use yet;)/.test(problem))
    return ToolReason.UnsupportedProtocol;
  if (/\.config\.systemId: system '[^']*' does not exist/.test(problem)) return ToolReason.UnknownSystem;
  if (/^(inputSchema|outputSchema): /.test(problem)) return ToolReason.InvalidSchema;
  if (/\.config\.pagination: /.test(problem)) return ToolReason.InvalidPagination;
  return ToolReason.CompileError;
}

export function readyCondition(o: ToolObservation): DesiredCondition & { reason: ToolReason } {
  const generation = o.tool.metadata.generation ?? 1;
  if (o.specIssues && o.specIssues.length > 0) {
    return {
      type: ToolConditionType.Ready,
      reason: ToolReason.InvalidSpec,
      message: `The tool spec is invalid: ${o.specIssues.join('; ')}`,
      observedGeneration: generation,
    };
  }
  if (o.problems.length === 0 && o.unreadySystems && o.unreadySystems.length > 0) {
    // The tool itself is fine; its runs are refused (KG_ERR_RUN_SYSTEM_NOT_READY) until the System is.
    return {
      type: ToolConditionType.Ready,
      reason: ToolReason.SystemNotReady,
      message: `${o.unreadySystems.join('; ')}; runs of this tool are refused until ${o.unreadySystems.length === 1 ? 'it is' : 'they are'} Ready`,
      observedGeneration: generation,
    };
  }
  if (o.problems.length === 0) {
    return {
      type: ToolConditionType.Ready,
      reason: ToolReason.Valid,
      message: 'Every step checks out: scripts compile, schemas are valid, systems exist',
      observedGeneration: generation,
    };
  }
  const kinds = new Set(o.problems.map(problemKind));
  const reason = kinds.size === 1 ? ([...kinds][0] as ToolReason) : ToolReason.InvalidTool;
  const count = o.problems.length === 1 ? '1 problem' : `${o.problems.length} problems`;
  return {
    type: ToolConditionType.Ready,
    reason,
    message: `${count}: ${o.problems.join('; ')}`,
    observedGeneration: generation,
  };
}

export function decideTool(o: ToolObservation): ToolDecision {
  const status = o.tool.status ?? {};
  const ready = readyCondition(o);
  const generation = o.tool.metadata.generation ?? 1;
  const stepCount = Array.isArray(o.tool.spec.steps) ? o.tool.spec.steps.length : 0;
  const patch: Partial<ToolStatus> = {};
  if (!conditionIs(status.conditions, ready))
    patch.conditions = setCondition(status.conditions, ready, o.now);
  if (status.observedGeneration !== generation) patch.observedGeneration = generation;
  if (status.stepCount !== stepCount) patch.stepCount = stepCount;
  return Object.keys(patch).length > 0 ? { patch } : {};
}
