/**
 * The ToolRun reconciler's decision: `decide(observed) → actions`, pure. It reads what the controller
 * observed (the ToolRun, the store's run row, the launcher's view of the execution, the admission
 * verdict, the time) and says what to do, phase by phase: finish (the store is terminal), cancel,
 * admit, launch, watch the execution. execute.ts carries the actions out.
 *
 * Outcome precedence: the runner's record in the store wins; else the runner's termination summary;
 * else the Pod's state (OOMKilled, evicted, deadline, pending too long, gone, heartbeat stale). The
 * operator writes a terminal state only while the store has none, and the first terminal write wins.
 */
import {
  AdmissionReason,
  RunReason,
  ToolRunConditionType,
  ToolRunEventReason,
} from '../../contract/reasons.ts';
import { findCondition } from '../conditions.ts';
import { isAdmitted, queuedMessage, TOOL_QUEUE_RECHECK_MS } from './admission.ts';
import { finish, runMissing } from './finish.ts';
import {
  ACTIVE_PHASES,
  attemptOf,
  type Decision,
  generation,
  Plan,
  type ToolRunObservation,
} from './plan.ts';
import { launch, watch } from './watch.ts';

export {
  type Action,
  type Decision,
  type ReconcileSettings,
  redactError,
  STATUS_ERROR_LIMIT,
  STATUS_STEP_LIMIT,
  type StatusPatch,
  type StepSummary,
  statusError,
  type ToolRunObservation,
} from './plan.ts';
export { podOutcome } from './watch.ts';

export function decide(o: ToolRunObservation): Decision {
  const plan = new Plan(o.toolRun, o.now);
  if (!o.run) runMissing(o, plan);
  else if (o.run.status !== 'running') finish(o, o.run, plan);
  else if (o.toolRun.spec.cancel || o.toolRun.metadata.deletionTimestamp) cancel(o, plan);
  else if (!isAdmitted(o.toolRun)) admit(o, plan);
  else watch(o, plan);
  return plan.done();
}

// --- cancel of a live run ---

function cancel(o: ToolRunObservation, plan: Plan): void {
  // Authoritative in the store; the runner learns it from its heartbeat answer, the pool at once.
  plan.add({ type: 'abortRun' });
  if (!o.execution.cooperativeCancel && ACTIVE_PHASES.has(o.execution.phase)) {
    plan.add({ type: 'stop', attempt: attemptOf(o.toolRun), graceMs: 0 });
  }
}

// --- admission ---

function admit(o: ToolRunObservation, plan: Plan): void {
  const verdict = o.admission;
  if (!verdict) return;
  if (!verdict.admit) {
    const wasQueued = findCondition(o.toolRun.status?.conditions, ToolRunConditionType.Admitted)?.reason;
    const message = queuedMessage(verdict, o.toolRun.metadata.namespace ?? '');
    const reason =
      verdict.scope === 'tool' ? AdmissionReason.ToolConcurrencyLimit : AdmissionReason.AdmissionLimit;
    // A tool's slot may be freed by another process (a sync run on another replica): ask again soon.
    if (verdict.scope === 'tool') plan.after(TOOL_QUEUE_RECHECK_MS);
    plan.patch({ observedGeneration: generation(o) }, [
      { type: ToolRunConditionType.Admitted, reason, message },
      {
        type: ToolRunConditionType.Succeeded,
        reason: RunReason.Queued,
        message: 'Waiting for admission',
      },
    ]);
    if (wasQueued !== reason) plan.event(ToolRunEventReason.Queued, message);
    return;
  }
  plan.patch(
    {
      status: 'running',
      reason: RunReason.Pending,
      startedAt: o.toolRun.status?.startedAt ?? o.now.toISOString(),
      observedGeneration: generation(o),
    },
    [
      {
        type: ToolRunConditionType.Admitted,
        reason: AdmissionReason.Admitted,
        message: 'The run holds an execution slot',
      },
      {
        type: ToolRunConditionType.Succeeded,
        reason: RunReason.Pending,
        message: 'Starting the run',
      },
    ],
  );
  plan.event(ToolRunEventReason.Admitted, 'The run was admitted for execution');
  launch(o, plan);
}
