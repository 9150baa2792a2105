/**
 * What the ToolRun reconciler's phases share: the observation they read, the actions they return, and
 * the Plan that accumulates both (status patches computed against the status as already patched).
 */

import type { OperatorSettings } from '../../config/config.ts';
import type { RunReason, ToolRunEventReason } from '../../contract/reasons.ts';
import type { ToolRunResource, ToolRunStatus } from '../../contract/resources/kinds.ts';
import type { StoredRun } from '../../store/index.ts';
import { conditionIs, type DesiredCondition, setCondition, truncateBytes } from '../conditions.ts';
import type { Execution } from '../launchers/launcher.ts';
import type { AdmissionVerdict } from './admission.ts';

/** Errors in a ToolRun's status are cut to this many bytes. */
export const STATUS_ERROR_LIMIT = 1024;
/** Step summaries kept in a ToolRun's status, at most. */
export const STATUS_STEP_LIMIT = 200;

export type ReconcileSettings = Pick<
  OperatorSettings,
  | 'pendingTimeoutMs'
  | 'heartbeatStaleMs'
  | 'cancelGraceMs'
  | 'deleteSucceededPods'
  | 'failedPodRetentionMs'
  | 'toolRunRetentionMs'
  | 'runnerTerminationGraceSeconds'
  | 'defaultRunTimeoutMs'
  | 'deadlineMarginSeconds'
  | 'maxRunAttempts'
>;

export interface StepSummary {
  id: string;
  success: boolean;
  error?: string;
}

export interface ToolRunObservation {
  now: Date;
  toolRun: ToolRunResource;
  /** The store's row of spec.runId; undefined: the store has no such run. */
  run: Pick<StoredRun, 'status' | 'error' | 'metadata' | 'attempt'> | undefined;
  /** Step results of a terminal run (read when the status still has to mirror them). */
  steps?: StepSummary[];
  /** The launcher's view of the current attempt. */
  execution: Execution;
  /** For a ToolRun waiting for a slot: whether it gets one now. */
  admission?: AdmissionVerdict;
  settings: ReconcileSettings;
}

/** A change of the status; its `reason` is a declared one (the Succeeded condition's, contract/reasons.ts). */
export type StatusPatch = { [K in keyof ToolRunStatus]?: K extends 'reason' ? RunReason : ToolRunStatus[K] };

export type Action =
  | { type: 'patchStatus'; patch: StatusPatch }
  /** Ends the batch when the launcher reports nothing was launched. */
  | { type: 'launch'; attempt: number }
  /** The operator's own terminal write (only while the store has none; the first write wins). */
  | { type: 'finishRun'; status: 'failed'; error: string; reason: RunReason }
  /**
   * A lost execution of a read-only run: the store hands the run back for attempt fromAttempt + 1 (its
   * step results dropped). When the store refuses because the run's completion was announced already, the
   * run fails with `otherwise` instead; when it ended or moved on meanwhile, the batch ends.
   */
  | { type: 'retryRun'; fromAttempt: number; otherwise: { error: string; reason: RunReason } }
  /** Cancel: the store's run becomes aborted if still running, with its completion effects. */
  | { type: 'abortRun' }
  | { type: 'stop'; attempt: number; graceMs: number }
  | { type: 'cleanup'; attempt: number; token: boolean; pod: boolean }
  | { type: 'releaseFinalizer' }
  /** TTL: the finished ToolRun goes (its Pod and Secret with it). */
  | { type: 'delete' }
  /** An Event on the ToolRun; Normal or Warning as its reason is declared. */
  | { type: 'event'; reason: ToolRunEventReason; message: string };

export interface Decision {
  actions: Action[];
  /** Reconcile again after this long (a timer: pending timeout, heartbeat, grace, retention). */
  requeueAfterMs?: number;
}

export const ACTIVE_PHASES = new Set(['Pending', 'Running']);

export function redactError(text: string): string {
  return text
    .replace(/(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 <redacted>')
    .replace(/\bkg_[A-Za-z0-9_-]{8,}/g, 'kg_<redacted>')
    .replace(/(\/\/)[^/\s:@]+:[^/\s@]+@/g, '$1<redacted>@')
    .replace(
      /([?&;\s](?:api[_-]?key|access[_-]?token|token|password|passwd|secret|signature|sig|auth)=)[^&\s"']+/gi,
      '$1<redacted>',
    );
}

export function statusError(text: string): string {
  return truncateBytes(redactError(text), STATUS_ERROR_LIMIT);
}

export function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}

/** Accumulates actions; status patches are computed against the status as already patched. */

export class Plan {
  readonly actions: Action[] = [];
  readonly #now: Date;
  status: ToolRunStatus;
  #requeue: number | undefined;

  constructor(toolRun: ToolRunResource, now: Date) {
    this.status = toolRun.status ?? {};
    this.#now = now;
  }

  /** One status patch; `conditions` listed here are set on the conditions of the status so far. */
  patch(patch: StatusPatch, conditions: DesiredCondition[] = []): void {
    let list = this.status.conditions;
    const changed = conditions.filter((c) => !conditionIs(list, c));
    for (const c of changed) list = setCondition(list, c, this.#now);
    const fields = Object.fromEntries(
      Object.entries(patch).filter(([key, value]) => !same(this.status[key as keyof ToolRunStatus], value)),
    ) as StatusPatch;
    if (changed.length > 0) fields.conditions = list;
    if (Object.keys(fields).length === 0) return;
    this.status = { ...this.status, ...fields };
    this.actions.push({ type: 'patchStatus', patch: fields });
  }

  event(reason: ToolRunEventReason, message: string): void {
    this.actions.push({ type: 'event', reason, message });
  }

  add(action: Action): void {
    this.actions.push(action);
  }

  /** Reconcile again within `ms` (the earliest of all timers wins). */
  after(ms: number): void {
    const wait = Math.max(0, Math.ceil(ms));
    this.#requeue = this.#requeue === undefined ? wait : Math.min(this.#requeue, wait);
  }

  done(): Decision {
    return this.#requeue === undefined
      ? { actions: this.actions }
      : { actions: this.actions, requeueAfterMs: this.#requeue };
  }
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function attemptOf(toolRun: ToolRunResource): number {
  return toolRun.status?.attempt ?? 1;
}

/** The attempt to launch: the store's is ahead when a run was handed back to run again (a shutdown). */
export function launchAttempt(o: ToolRunObservation): number {
  return Math.max(attemptOf(o.toolRun), o.run?.attempt ?? 1);
}

export function elapsed(o: ToolRunObservation, since: string | undefined): number {
  return since ? o.now.getTime() - Date.parse(since) : 0;
}

export const generation = (o: ToolRunObservation) => o.toolRun.metadata.generation ?? 1;
