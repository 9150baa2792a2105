import { type ConditionReasons, type ConditionType, conditionStatus } from '../contract/reasons.ts';
import type { Condition } from '../contract/resources/meta.ts';

/** Condition messages are capped like metav1.Condition's (32 768 characters). */
export const CONDITION_MESSAGE_LIMIT = 32_768;

/**
 * A condition to write: a declared reason of its type (contract/reasons.ts), which also fixes its status,
 * and the message with the particulars.
 */
export type DesiredCondition = {
  [T in ConditionType]: {
    type: T;
    reason: ConditionReasons[T];
    message: string;
    observedGeneration?: number;
  };
}[ConditionType];

/** The status the condition is written with: the one its reason is declared with. */
export function statusOf(desired: DesiredCondition): Condition['status'] {
  return conditionStatus<ConditionType>(desired.type, desired.reason);
}

/**
 * The conditions with `desired` set: lastTransitionTime changes only when the status does, so a new
 * reason or message alone is not a transition. Other types are kept in their order.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  desired: DesiredCondition,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === desired.type);
  const current = index >= 0 ? list[index] : undefined;
  const status = statusOf(desired);
  const next: Condition = {
    type: desired.type,
    status,
    reason: desired.reason,
    message: conditionMessage(desired.message),
    lastTransitionTime: current && current.status === status ? current.lastTransitionTime : kubeTime(now),
    ...(desired.observedGeneration !== undefined ? { observedGeneration: desired.observedGeneration } : {}),
  };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition already reads so (ignoring lastTransitionTime). */
export function conditionIs(
  conditions: readonly Condition[] | undefined,
  desired: DesiredCondition,
): boolean {
  const current = findCondition(conditions, desired.type);
  return (
    current !== undefined &&
    current.status === statusOf(desired) &&
    current.reason === desired.reason &&
    current.message === conditionMessage(desired.message) &&
    (desired.observedGeneration === undefined || current.observedGeneration === desired.observedGeneration)
  );
}

/** RFC 3339 with second precision: what metav1.Time stores, so writes compare equal to reads. */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** At most `limit` UTF-8 bytes, cut on a character boundary, with `…` when cut. */
export function truncateBytes(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text;
  const cut = Buffer.from(text)
    .subarray(0, Math.max(0, limit - 3))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${cut}…`;
}

/** A message as a condition holds it: at most CONDITION_MESSAGE_LIMIT characters, with `…` when cut. */
export function conditionMessage(text: string): string {
  return text.length <= CONDITION_MESSAGE_LIMIT ? text : `${text.slice(0, CONDITION_MESSAGE_LIMIT - 1)}…`;
}
