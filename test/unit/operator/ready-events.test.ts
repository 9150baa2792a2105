/** Which change of a Tool's or System's Ready condition is told in an Event (operator/events.ts). */
import { describe, expect, it } from 'vitest';
import { eventType, SystemReason, ToolReason } from '../../../contract/reasons.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import type { DesiredCondition } from '../../../operator/conditions.ts';
import { conditionChangeEvent } from '../../../operator/events.ts';

const previously = (status: Condition['status'], reason: string, message = `${reason}!`): Condition[] => [
  { type: 'Ready', status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' },
];
const ready = <R extends ToolReason | SystemReason>(reason: R, message = `${reason}!`) =>
  ({ type: 'Ready', reason, message, observedGeneration: 2 }) satisfies DesiredCondition;

describe('an Event of a Ready change', () => {
  it('tells the reason and message when Ready turns False, or stays False with another problem: a Warning', () => {
    expect(conditionChangeEvent(undefined, ready(ToolReason.CompileError, 'steps[0]: boom'))).toEqual({
      reason: 'CompileError',
      message: 'steps[0]: boom',
    });
    expect(conditionChangeEvent(previously('True', 'Valid'), ready(ToolReason.UnknownSystem))?.reason).toBe(
      'UnknownSystem',
    );
    expect(
      conditionChangeEvent(previously('False', 'CompileError', 'a'), ready(ToolReason.CompileError, 'b')),
    ).toEqual({ reason: 'CompileError', message: 'b' });
    expect(eventType('Tool', ToolReason.CompileError)).toBe('Warning');
    expect(eventType('Tool', ToolReason.UnknownSystem)).toBe('Warning');
  });

  it('tells it when Ready turns True: a Normal Event', () => {
    expect(
      conditionChangeEvent(previously('False', 'SecretNotFound'), ready(SystemReason.CredentialsReady)),
    ).toEqual({
      reason: 'CredentialsReady',
      message: 'CredentialsReady!',
    });
    expect(conditionChangeEvent(undefined, ready(ToolReason.Valid))?.reason).toBe('Valid');
    expect(eventType('System', SystemReason.CredentialsReady)).toBe('Normal');
    expect(eventType('Tool', ToolReason.Valid)).toBe('Normal');
  });

  it('says nothing when Ready reads as before (a resync, or a new generation with the same problem)', () => {
    expect(conditionChangeEvent(previously('False', 'CompileError'), ready(ToolReason.CompileError))).toBe(
      undefined,
    );
    expect(conditionChangeEvent(previously('True', 'Valid', 'a'), ready(ToolReason.Valid, 'b'))).toBe(
      undefined,
    );
  });
});
