/**
 * The finish phase: the store holds the run's terminal state (or has no run at all). Mirror it into the
 * status (never payload data), stop a runner still going after the grace period, delete the token
 * Secret, keep or delete the runner Pod, release the finalizer, and delete the ToolRun after retention.
 */
import {
  AdmissionReason,
  RunReason,
  ToolRunConditionType,
  ToolRunEventReason,
} from '../../contract/reasons.ts';
import { humanDuration } from '../../contract/resources/duration.ts';
import { RECORDED_FINALIZER } from '../../contract/resources/labels.ts';
import type { StoredRun } from '../../store/index.ts';
import { type DesiredCondition, kubeTime } from '../conditions.ts';
import { isAdmitted } from './admission.ts';
import {
  ACTIVE_PHASES,
  attemptOf,
  elapsed,
  generation,
  type Plan,
  STATUS_STEP_LIMIT,
  seconds,
  statusError,
  type ToolRunObservation,
} from './plan.ts';

// --- the store has no run ---

export function runMissing(o: ToolRunObservation, plan: Plan): void {
  const message = `The store has no run '${o.toolRun.spec.runId}'; this ToolRun cannot execute`;
  if (o.toolRun.status?.status !== 'failed') {
    plan.patch(
      {
        status: 'failed',
        reason: RunReason.RunNotFound,
        error: message,
        completedAt: o.toolRun.status?.completedAt ?? o.now.toISOString(),
        observedGeneration: generation(o),
      },
      [
        {
          type: ToolRunConditionType.Succeeded,
          reason: RunReason.RunNotFound,
          message,
        },
      ],
    );
    plan.event(ToolRunEventReason.Failed, message);
  }
  if (ACTIVE_PHASES.has(o.execution.phase)) {
    plan.add({ type: 'stop', attempt: attemptOf(o.toolRun), graceMs: 0 });
  }
  releaseAndExpire(o, plan, plan.status.completedAt);
}

// --- the store holds the terminal state ---

/** Causes the operator itself records (execute.ts notes them in status.reason when its write wins). */
const OPERATOR_CAUSES = new Set<string>([
  RunReason.OOMKilled,
  RunReason.Evicted,
  RunReason.DeadlineExceeded,
  RunReason.ImagePullFailed,
  RunReason.Unschedulable,
  RunReason.PodPendingTimeout,
  RunReason.PodLost,
  RunReason.HeartbeatStale,
  RunReason.RunnerFailed,
  RunReason.ExecutionLost,
]);

function finishedReason(o: ToolRunObservation, status: StoredRun['status']): RunReason {
  if (status === 'success') return RunReason.Succeeded;
  if (status === 'aborted') return RunReason.Cancelled;
  const recorded = o.toolRun.status?.reason;
  return recorded && OPERATOR_CAUSES.has(recorded) ? (recorded as RunReason) : RunReason.Failed;
}

export function finish(o: ToolRunObservation, run: NonNullable<ToolRunObservation['run']>, plan: Plan): void {
  const attempt = attemptOf(o.toolRun);
  const execution = o.execution;
  const completedAt = run.metadata.completedAt ?? o.now.toISOString();

  // A runner still going after the run ended (cancelled, or finished by the operator): it learns of it
  // from its next heartbeat answer; it gets the grace period, then its Pod is deleted. A Pod that never
  // started has nobody to tell: it goes at once.
  if (ACTIVE_PHASES.has(execution.phase) && !execution.terminating) {
    const waited = elapsed(o, completedAt);
    const cooperative = execution.cooperativeCancel && execution.phase === 'Running';
    if (!cooperative || waited >= o.settings.cancelGraceMs) {
      plan.add({ type: 'stop', attempt, graceMs: o.settings.runnerTerminationGraceSeconds * 1000 });
      if (cooperative) {
        plan.event(
          ToolRunEventReason.Stopping,
          `The runner did not stop within ${seconds(o.settings.cancelGraceMs)} of the run's end; deleting Pod ${execution.podName ?? ''}`.trim(),
        );
      }
    } else {
      plan.after(o.settings.cancelGraceMs - waited);
    }
  }

  const mirrored = o.toolRun.status?.status === run.status;
  if (!mirrored) mirror(o, run, plan, completedAt);
  if (o.toolRun.status?.attempt !== undefined || execution.phase !== 'None') {
    const phase =
      execution.phase === 'Pending' || execution.phase === 'Running' ? execution.phase : 'Finished';
    plan.patch({ executionPhase: phase });
  }

  // Runner Pod retention: succeeded ones go at once, failed ones stay a while for their logs.
  if (execution.podName && execution.phase === 'Finished' && !execution.terminating) {
    const keepMs =
      run.status === 'success' && o.settings.deleteSucceededPods ? 0 : o.settings.failedPodRetentionMs;
    const left = keepMs - elapsed(o, completedAt);
    if (left <= 0) {
      plan.add({ type: 'cleanup', attempt, token: false, pod: true });
      plan.event(ToolRunEventReason.PodDeleted, `Deleted the runner Pod ${execution.podName}`);
    } else {
      if (!mirrored) {
        plan.event(
          ToolRunEventReason.PodRetained,
          `The runner Pod ${execution.podName} is kept until ${kubeTime(new Date(Date.parse(completedAt) + keepMs))} for inspection`,
        );
      }
      plan.after(left);
    }
  }
  releaseAndExpire(o, plan, completedAt);
}

function mirror(
  o: ToolRunObservation,
  run: NonNullable<ToolRunObservation['run']>,
  plan: Plan,
  completedAt: string,
): void {
  const reason = finishedReason(o, run.status);
  const succeeded = run.status === 'success';
  const error = run.error ? statusError(run.error) : undefined;
  const message = succeeded
    ? 'The run succeeded'
    : run.status === 'aborted'
      ? 'The run was cancelled'
      : `The run failed: ${error ?? 'no error recorded'}`;
  const steps = (o.steps ?? []).slice(0, STATUS_STEP_LIMIT).map((s) => ({
    id: s.id,
    success: s.success,
    ...(s.error ? { error: statusError(s.error) } : {}),
  }));
  const conditions: DesiredCondition[] = [{ type: ToolRunConditionType.Succeeded, reason, message }];
  if (!isAdmitted(o.toolRun)) {
    conditions.push({
      type: ToolRunConditionType.Admitted,
      reason: AdmissionReason.NotAdmitted,
      message: 'The run ended before it was admitted',
    });
  }
  plan.patch(
    {
      status: run.status,
      reason,
      completedAt,
      ...(run.metadata.durationMs !== undefined
        ? { durationMs: run.metadata.durationMs, duration: humanDuration(run.metadata.durationMs) }
        : {}),
      ...(error ? { error } : {}),
      steps,
      observedGeneration: generation(o),
    },
    conditions,
  );
  const duration =
    run.metadata.durationMs !== undefined ? ` in ${humanDuration(run.metadata.durationMs)}` : '';
  if (succeeded) plan.event(ToolRunEventReason.Succeeded, `The run succeeded${duration}`);
  else if (run.status === 'aborted') plan.event(ToolRunEventReason.Cancelled, 'The run was cancelled');
  else plan.event(ToolRunEventReason.Failed, message);
  // The token dies with the run in the store already; its Secret has no use left.
  if (o.execution.launcher === 'pod' && o.toolRun.status?.attempt !== undefined) {
    plan.add({ type: 'cleanup', attempt: attemptOf(o.toolRun), token: true, pod: false });
  }
  if (!o.toolRun.metadata.deletionTimestamp) {
    plan.event(
      ToolRunEventReason.Retained,
      `The finished ToolRun is kept until ${kubeTime(new Date(Date.parse(completedAt) + o.settings.toolRunRetentionMs))}`,
    );
  }
}

/** The finalizer goes once the store is terminal; the ToolRun itself after the retention. */
function releaseAndExpire(o: ToolRunObservation, plan: Plan, completedAt: string | undefined): void {
  if (o.toolRun.metadata.finalizers?.includes(RECORDED_FINALIZER)) plan.add({ type: 'releaseFinalizer' });
  if (o.toolRun.metadata.deletionTimestamp || !completedAt) return;
  const left = o.settings.toolRunRetentionMs - elapsed(o, completedAt);
  if (left <= 0) {
    // Owner references take the Pod and the Secret along; removed here too for clusters without GC.
    if (o.execution.launcher === 'pod' && o.toolRun.status?.attempt !== undefined) {
      plan.add({ type: 'cleanup', attempt: attemptOf(o.toolRun), token: true, pod: true });
    }
    plan.add({ type: 'delete' });
    plan.event(ToolRunEventReason.Deleted, 'Deleted the finished ToolRun after its retention');
  } else plan.after(left);
}
