import { describe, expect, it } from 'vitest';
import type { StepResult } from '../../../contract/api/run.ts';
import { Tool } from '../../../contract/api/tool.ts';
import type { JsonObject } from '../../../contract/json.ts';
import { reusableSteps } from '../../../runs/resume.ts';
import { stepHash } from '../../../runs/step-hash.ts';
import type { StoredRun } from '../../../store/index.ts';

const step = (id: string, code = '(s) => 1') => ({ id, config: { type: 'transform', transformCode: code } });
const tool = (...steps: ReturnType<typeof step>[]) => Tool.parse({ id: 't', steps });
const ran = (definition: Tool): StoredRun => ({
  runId: 'r1',
  toolId: 't',
  status: 'failed',
  requestSource: 'api',
  systemIds: [],
  tool: definition as unknown as JsonObject,
  metadata: { startedAt: '2026-01-01T00:00:00.000Z' },
});
const ok = (stepId: string): StepResult => ({ stepId, success: true, data: { from: stepId } });
const failed = (stepId: string): StepResult => ({ stepId, success: false, data: null, error: 'boom' });

describe('stepHash', () => {
  it('is the same for the same definition whatever its key order', () => {
    const a = { id: 'x', config: { url: '/a', method: 'POST', headers: { b: '2', a: '1' } } };
    const b = { config: { headers: { a: '1', b: '2' }, method: 'POST', url: '/a' }, id: 'x' };
    expect(stepHash(Tool.parse({ id: 't', steps: [a] }).steps[0]!)).toBe(
      stepHash(Tool.parse({ id: 't', steps: [b] }).steps[0]!),
    );
  });

  it('differs when anything in the definition differs, its id included', () => {
    const base = tool(step('a')).steps[0]!;
    expect(stepHash(tool(step('a', '(s) => 2')).steps[0]!)).not.toBe(stepHash(base));
    expect(stepHash(tool(step('b')).steps[0]!)).not.toBe(stepHash(base));
    const continued = Tool.parse({ id: 't', steps: [{ ...step('a'), failureBehavior: 'continue' }] });
    expect(stepHash(continued.steps[0]!)).not.toBe(stepHash(base));
  });
});

describe('reusableSteps', () => {
  const three = tool(step('a'), step('b'), step('c'));

  it('reuses the unchanged steps before the failed one', () => {
    expect(reusableSteps(ran(three), three, [ok('a'), ok('b'), failed('c')])).toBe(2);
    expect(reusableSteps(ran(three), three, [failed('a')])).toBe(0);
  });

  it('reuses every step that ran when the run stopped after them (an output transform, a cancel)', () => {
    expect(reusableSteps(ran(three), three, [ok('a'), ok('b'), ok('c')])).toBe(3);
    expect(reusableSteps(ran(three), three, [ok('a')])).toBe(1);
  });

  it('stops at the first changed step: it and every step after it run again', () => {
    const changed = tool(step('a'), step('b', '(s) => 2'), step('c'));
    expect(reusableSteps(ran(three), changed, [ok('a'), ok('b'), failed('c')])).toBe(1);
    const inserted = tool(step('a'), step('new'), step('b'), step('c'));
    expect(reusableSteps(ran(three), inserted, [ok('a'), ok('b'), failed('c')])).toBe(1);
  });

  it('refuses when a step to reuse was stored without its data', () => {
    const cut = { stepId: 'a', success: true };
    expect(() => reusableSteps(ran(three), three, [cut, ok('b'), failed('c')])).toThrow(
      /step a was stored without its data/,
    );
    // A changed step needs no stored data: it runs again.
    expect(reusableSteps(ran(three), tool(step('a', '(s) => 9'), step('b'), step('c')), [cut])).toBe(0);
  });
});
