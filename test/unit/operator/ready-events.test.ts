/** Which change of a Tool's or System's Ready condition is told in an Event (operator/events.ts). */
import { describe, expect, it } from 'vitest';
import type { Condition } from '../../../contract/resources/meta.ts';
import { conditionChangeEvent } from '../../../operator/events.ts';

const ready = (status: Condition['status'], reason: string, message = `${reason}!`): Condition[] => [
  { type: 'Ready', status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' },
];

describe('an Event of a Ready change', () => {
  it('warns with the reason and message when Ready turns False, or stays False with another problem', () => {
    expect(
      conditionChangeEvent(undefined, ready('False', 'CompileError', 'steps[0]: boom'), 'Ready'),
    ).toEqual({
      type: 'Warning',
      reason: 'CompileError',
      message: 'steps[0]: boom',
    });
    expect(conditionChangeEvent(ready('True', 'Valid'), ready('False', 'UnknownSystem'), 'Ready')?.type).toBe(
      'Warning',
    );
    expect(
      conditionChangeEvent(ready('False', 'CompileError', 'a'), ready('False', 'CompileError', 'b'), 'Ready'),
    ).toMatchObject({ type: 'Warning', message: 'b' });
  });

  it('is Normal when Ready turns True', () => {
    expect(
      conditionChangeEvent(ready('False', 'SecretNotFound'), ready('True', 'CredentialsReady'), 'Ready'),
    ).toEqual({ type: 'Normal', reason: 'CredentialsReady', message: 'CredentialsReady!' });
    expect(conditionChangeEvent(undefined, ready('True', 'Valid'), 'Ready')?.type).toBe('Normal');
  });

  it('says nothing when Ready reads as before (a resync) or was not written', () => {
    expect(
      conditionChangeEvent(ready('False', 'CompileError'), ready('False', 'CompileError'), 'Ready'),
    ).toBe(undefined);
    expect(conditionChangeEvent(ready('True', 'Valid', 'a'), ready('True', 'Valid', 'b'), 'Ready')).toBe(
      undefined,
    );
    expect(conditionChangeEvent(ready('False', 'CompileError'), undefined, 'Ready')).toBe(undefined);
  });
});
