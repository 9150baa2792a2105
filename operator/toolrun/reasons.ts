/**
 * Names the ToolRun controller writes into conditions and Events. Tests and `kubectl describe` read the
 * same constants; never write these strings inline.
 */

// The conditions and admission reasons are read by the API too (the queue of GET /v1/stats/runs): they
// live with the ToolRun's builder in runs/.
export { AdmissionReason, ConditionType } from '../../runs/toolrun.ts';

/** Reasons of the Succeeded condition (and `status.reason` once the run has ended). */
export const RunReason = {
  /** Live, waiting for a slot. */
  Queued: 'Queued',
  /** Live, admitted, execution starting (the runner Pod is pending). */
  Pending: 'Pending',
  /** Live, executing. */
  Running: 'Running',
  /** Live: the execution of a read-only run was lost, and it starts over as its next attempt. */
  Retrying: 'Retrying',
  /** The run succeeded. */
  Succeeded: 'Succeeded',
  /** The run failed (its error says why). */
  Failed: 'Failed',
  /** The run was cancelled (API cancel, spec.cancel or deletion of the ToolRun). */
  Cancelled: 'Cancelled',
  /** The runner Pod exceeded its memory limit. */
  OOMKilled: 'OOMKilled',
  /** Kubernetes evicted the runner Pod (node pressure, drain). */
  Evicted: 'Evicted',
  /** The runner Pod ran past its activeDeadlineSeconds (or the operator's deadline watchdog fired). */
  DeadlineExceeded: 'DeadlineExceeded',
  /** The runner image could not be pulled within the pending timeout. */
  ImagePullFailed: 'ImagePullFailed',
  /** The runner Pod could not be scheduled within the pending timeout. */
  Unschedulable: 'Unschedulable',
  /** The runner Pod did not start within the pending timeout for another reason. */
  PodPendingTimeout: 'PodPendingTimeout',
  /** The runner Pod disappeared while the run was live (node lost, Pod deleted by someone else). */
  PodLost: 'PodLost',
  /** The runner's Pod claims Running but the runner sent no heartbeat for too long. */
  HeartbeatStale: 'HeartbeatStale',
  /** The runner ended without a result in the store; its exit code and summary say why. */
  RunnerFailed: 'RunnerFailed',
  /** The in-process execution of the run is gone while the run is live (embedded). */
  ExecutionLost: 'ExecutionLost',
  /** The store has no run with the ToolRun's runId. */
  RunNotFound: 'RunNotFound',
} as const;
export type RunReason = (typeof RunReason)[keyof typeof RunReason];

/** Reasons of the Events recorded on a ToolRun. */
export const EventReason = {
  Queued: 'Queued',
  Admitted: 'Admitted',
  /** The runner Pod (and its token Secret) was created. */
  PodCreated: 'PodCreated',
  /** The run started executing in the worker pool (embedded). */
  Started: 'Started',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Cancelled: 'Cancelled',
  /** The cancel grace period ended and the runner is being stopped. */
  Stopping: 'Stopping',
  /** The runner Pod failed; the message names the cause. */
  PodFailed: 'PodFailed',
  /** The in-process execution of a live run is gone (embedded). */
  ExecutionLost: 'ExecutionLost',
  /** A read-only run's execution was lost (its runner Pod gone): the next attempt starts. */
  Retrying: 'Retrying',
  /** A failed runner Pod is kept for inspection until the time in the message. */
  PodRetained: 'PodRetained',
  PodDeleted: 'PodDeleted',
  /** The finished ToolRun is kept until the time in the message. */
  Retained: 'Retained',
  /** The finished ToolRun was deleted after its retention. */
  Deleted: 'Deleted',
  /** The ToolRun could not be processed (e.g. a launch failed); retried. */
  ReconcileError: 'ReconcileError',
} as const;
export type EventReason = (typeof EventReason)[keyof typeof EventReason];
