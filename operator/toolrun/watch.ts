/**
 * The execution phase of a live, admitted run: launch it, note Pending/Running, and fire the
 * watchdogs (pending too long, heartbeat stale, deadline, execution gone). When the execution ended
 * without a terminal record in the store, decide the outcome from the termination summary and the
 * Pod's state.
 */
import { RunReason, ToolRunConditionType, ToolRunEventReason } from '../../contract/reasons.ts';
import { afterInterruption } from '../../runs/interrupted.ts';
import { truncateBytes } from '../conditions.ts';
import { runnerPodName } from '../launchers/launcher.ts';
import { attemptOf, elapsed, launchAttempt, type Plan, seconds, type ToolRunObservation } from './plan.ts';
import { activeDeadlineSeconds, runTimeoutMs } from './pod.ts';

const IMAGE_PULL_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
]);

/** Masks what looks like a credential in an error before it goes into a resource. */

// --- launch and watch ---

export function launch(o: ToolRunObservation, plan: Plan, attempt = launchAttempt(o)): void {
  const pod = o.execution.launcher === 'pod';
  const podName = pod ? runnerPodName(o.toolRun.metadata.name, attempt) : undefined;
  plan.add({ type: 'launch', attempt });
  plan.patch({ attempt, ...(podName ? { podName } : {}), executionPhase: 'Pending' });
  plan.event(
    pod ? ToolRunEventReason.PodCreated : ToolRunEventReason.Started,
    pod
      ? `Created the runner Pod ${podName} (attempt ${attempt})`
      : `The run started in the worker pool${attempt > 1 ? ` (attempt ${attempt})` : ''}`,
  );
}

export function watch(o: ToolRunObservation, plan: Plan): void {
  const execution = o.execution;
  const attempt = attemptOf(o.toolRun);
  const launched = o.toolRun.status?.attempt !== undefined;

  // The store holds a newer attempt than the one launched: handed back by a shutdown, or a retry whose
  // launch was not recorded. The execution seen is the old attempt's: launch the new one.
  if (launched && launchAttempt(o) > attempt) {
    launch(o, plan);
    return;
  }

  if (execution.phase === 'None') {
    if (!launched) launch(o, plan);
    else if (execution.launcher === 'pod') {
      const name = o.toolRun.status?.podName ?? runnerPodName(o.toolRun.metadata.name, attempt);
      lost(
        o,
        plan,
        RunReason.PodLost,
        `The runner Pod ${name} disappeared while the run was running (node lost or Pod deleted)`,
      );
    } else {
      fail(
        plan,
        RunReason.ExecutionLost,
        'The process executing this run stopped before it finished',
        ToolRunEventReason.ExecutionLost,
      );
    }
    return;
  }
  // Found without a record of its launch: the Pod of an operator that stopped before noting it.
  if (!launched) plan.patch({ attempt, ...(execution.podName ? { podName: execution.podName } : {}) });

  if (execution.phase === 'Pending') {
    plan.patch({ executionPhase: 'Pending' });
    const waited = elapsed(o, execution.since ?? o.toolRun.status?.startedAt);
    const left = o.settings.pendingTimeoutMs - waited;
    if (left > 0) {
      plan.after(left);
      return;
    }
    const why = execution.waiting;
    const detail = why ? `: ${why.reason}${why.message ? ` (${why.message})` : ''}` : '';
    const reason = !why
      ? RunReason.PodPendingTimeout
      : IMAGE_PULL_REASONS.has(why.reason)
        ? RunReason.ImagePullFailed
        : why.reason === 'Unschedulable'
          ? RunReason.Unschedulable
          : RunReason.PodPendingTimeout;
    const what =
      reason === RunReason.ImagePullFailed
        ? 'its image could not be pulled'
        : reason === RunReason.Unschedulable
          ? 'it could not be scheduled'
          : 'it did not start';
    fail(
      plan,
      reason,
      `The runner Pod ${execution.podName ?? ''} was pending for ${seconds(waited)}: ${what}${detail}`,
    );
    plan.add({ type: 'stop', attempt, graceMs: 0 });
    return;
  }

  if (execution.phase === 'Running') {
    if (o.toolRun.status?.executionPhase !== 'Running') {
      plan.patch({ executionPhase: 'Running', reason: RunReason.Running }, [
        {
          type: ToolRunConditionType.Succeeded,
          reason: RunReason.Running,
          message: 'The run is executing',
        },
      ]);
      plan.event(
        ToolRunEventReason.Running,
        execution.podName ? `The runner Pod ${execution.podName} is running` : 'The run is executing',
      );
    }
    if (execution.launcher !== 'pod') return;
    // Heartbeats: none yet counts from the container's start.
    const lastSign = execution.heartbeatAt ?? execution.since;
    const silent = elapsed(o, lastSign);
    if (silent >= o.settings.heartbeatStaleMs) {
      // The Pod goes first: a new attempt must not overlap a runner that is still somewhere.
      plan.add({ type: 'stop', attempt, graceMs: 0 });
      lost(
        o,
        plan,
        RunReason.HeartbeatStale,
        `The runner sent no heartbeat for ${seconds(silent)} while its Pod ${execution.podName ?? ''} was Running (node lost or runner hung)`,
      );
      return;
    }
    plan.after(o.settings.heartbeatStaleMs - silent);
    // Kubernetes enforces activeDeadlineSeconds; this catches a kubelet that does not.
    const deadlineMs =
      (activeDeadlineSeconds(o.toolRun, o.settings) + o.settings.deadlineMarginSeconds) * 1000;
    const running = elapsed(o, execution.since);
    if (running >= deadlineMs) {
      fail(plan, RunReason.DeadlineExceeded, deadlineMessage(o));
      plan.add({ type: 'stop', attempt, graceMs: 0 });
      return;
    }
    plan.after(deadlineMs - running);
    return;
  }

  // Finished while the store is still running: the runner never recorded its outcome.
  const outcome = podOutcome(o);
  if (!outcome.lost) {
    fail(plan, outcome.reason, outcome.error);
    return;
  }
  lost(o, plan, outcome.reason, outcome.error);
  // The ended Pod of the lost attempt is not needed for its logs: the run goes on.
  if (plan.actions.some((a) => a.type === 'retryRun')) {
    plan.add({ type: 'cleanup', attempt, token: false, pod: true });
  }
}

/**
 * The runner Pod was lost before it reported (deleted, evicted, its node gone): a read-only run starts
 * over as its next attempt, in a new Pod; any other run fails with the cause (runs/interrupted.ts).
 */
function lost(o: ToolRunObservation, plan: Plan, reason: RunReason, cause: string): void {
  const attempt = attemptOf(o.toolRun);
  const verdict = afterInterruption({
    cause,
    tool: o.toolRun.spec.tool,
    async: true,
    attempt,
    maxAttempts: o.settings.maxRunAttempts,
  });
  if (!verdict.retry) {
    fail(plan, reason, verdict.error);
    return;
  }
  plan.add({
    type: 'retryRun',
    fromAttempt: attempt,
    otherwise: { error: `${cause} (its completion was announced already, so it was not retried)`, reason },
  });
  const message = `${cause}; the run is read-only, so it starts over: attempt ${verdict.attempt} of at most ${o.settings.maxRunAttempts}`;
  plan.patch({ reason: RunReason.Retrying }, [
    { type: ToolRunConditionType.Succeeded, reason: RunReason.Retrying, message },
  ]);
  plan.event(ToolRunEventReason.Retrying, message);
  launch(o, plan, verdict.attempt);
}

function deadlineMessage(o: ToolRunObservation): string {
  const timeout = runTimeoutMs(o.toolRun, o.settings);
  return `The run exceeded its deadline: the runner Pod ran longer than ${activeDeadlineSeconds(o.toolRun, o.settings)} s (timeout ${timeout} ms + ${o.settings.deadlineMarginSeconds} s margin)`;
}

/**
 * Why a runner Pod ended without a terminal record in the store; `lost`: it was stopped from outside
 * before the run finished (evicted, or deleted: its runner says it was interrupted), which a read-only
 * run survives by starting over.
 */
export function podOutcome(o: ToolRunObservation): { reason: RunReason; error: string; lost: boolean } {
  const exit = o.execution.exit ?? {};
  const summary = exit.summary;
  if (summary?.interrupted) {
    return {
      reason: RunReason.PodLost,
      error: `The runner Pod ${o.execution.podName ?? ''} was stopped before the run finished (Pod deleted, evicted or its node drained)`,
      lost: true,
    };
  }
  if (summary && summary.status !== 'success') {
    // An aborted summary with a running store: the runner was stopped by something else than a cancel.
    return {
      reason: RunReason.RunnerFailed,
      error: summary.error ?? `The runner reported the run ${summary.status} without an error`,
      lost: false,
    };
  }
  if (exit.reason === 'OOMKilled') {
    return {
      reason: RunReason.OOMKilled,
      error: `The runner Pod was OOMKilled${o.execution.memoryLimit ? ` (memory limit ${o.execution.memoryLimit})` : ''}`,
      lost: false,
    };
  }
  if (exit.reason === 'Evicted') {
    return {
      reason: RunReason.Evicted,
      error: `The runner Pod was evicted${exit.message ? `: ${exit.message}` : ''}`,
      lost: true,
    };
  }
  if (exit.reason === 'DeadlineExceeded')
    return { reason: RunReason.DeadlineExceeded, error: deadlineMessage(o), lost: false };
  // Being deleted while the run lives, by someone else (the operator deletes Pods of ended runs only),
  // and ended without a word from the runner: stopped from outside, as if it had vanished.
  if (o.execution.terminating && !summary) {
    return {
      reason: RunReason.PodLost,
      error: `The runner Pod ${o.execution.podName ?? ''} was deleted before the run finished`,
      lost: true,
    };
  }
  if (summary) {
    return {
      reason: RunReason.RunnerFailed,
      error: 'The runner finished the run but its result never reached the store',
      lost: false,
    };
  }
  const tail = exit.message ? `: ${truncateBytes(exit.message.trim(), 512)}` : '';
  if (exit.exitCode !== undefined && exit.exitCode !== 0) {
    return {
      reason: RunReason.RunnerFailed,
      error: `The runner exited with code ${exit.exitCode}${tail}`,
      lost: false,
    };
  }
  return {
    reason: RunReason.RunnerFailed,
    error: `The runner exited without recording a result${tail}`,
    lost: false,
  };
}

/** The operator's terminal write, and a Warning naming the cause. */
function fail(
  plan: Plan,
  reason: RunReason,
  error: string,
  event: ToolRunEventReason = ToolRunEventReason.PodFailed,
): void {
  plan.add({ type: 'finishRun', status: 'failed', error, reason });
  plan.event(event, error);
}
