/**
 * What "the key still has the rights" means for a run started later on a key's behalf (a schedule's tick, a
 * chain): the key as it is then. Revoked: nothing starts. Its scopes or tools narrowed so that it may no
 * longer run the tool (no runs:execute, the tool or one of its systems outside its lists): nothing starts,
 * saying which. Otherwise the run carries what was recorded, narrowed to the key's lists now, never widened.
 */
import { describe, expect, it } from 'vitest';
import { type KeyNow, keyProblem, narrowedCaller } from '../../../runs/run-as.ts';
import { runAsNow } from '../../../runs/scheduled.ts';
import { scheduleHold } from '../../../schedules/holds.ts';

const steps = [
  { id: 'fetch', config: { systemId: 'crm' } },
  { id: 'shape', config: { type: 'transform' } },
];

function active(over: Partial<Extract<KeyNow, { kind: 'active' }>['key']> = {}): KeyNow {
  return {
    kind: 'active',
    key: {
      id: 'k1',
      admin: false,
      scopes: ['tools:read', 'runs:execute'],
      toolIds: ['report', 'other'],
      systemIds: ['crm', 'erp'],
      ...over,
    },
  };
}

describe('the rights of a key when a deferred run starts', () => {
  it('a revoked key may start nothing', () => {
    const key: KeyNow = { kind: 'revoked', keyId: 'k1', revokedAt: '2026-01-01T00:00:00.000Z' };
    expect(keyProblem(key, 'report', steps)).toMatchObject({ kind: 'revoked', keyId: 'k1' });
  });

  it('a key narrowed so that it may no longer run the tool may start nothing, saying which right it lost', () => {
    expect(keyProblem(active(), 'report', steps)).toBeUndefined();
    expect(keyProblem(active({ scopes: ['tools:read'] }), 'report', steps)?.what).toContain('runs:execute');
    expect(keyProblem(active({ toolIds: ['other'] }), 'report', steps)?.what).toContain("tool 'report'");
    expect(keyProblem(active({ systemIds: ['erp'] }), 'report', steps)?.what).toContain(
      "system 'crm' (step 'fetch')",
    );
    // An admin key has every right; no key at all (a schedule applied with kubectl) is not checked.
    expect(keyProblem(active({ admin: true, scopes: [], toolIds: [] }), 'report', steps)).toBeUndefined();
    expect(keyProblem({ kind: 'none' }, 'report', steps)).toBeUndefined();
  });

  it('a run carries what was recorded, narrowed to what the key may do now and never widened', () => {
    const recorded = { id: 'k1', toolIds: ['report', 'other'], systemIds: ['crm', 'erp'] };
    expect(narrowedCaller(recorded, active({ toolIds: ['report'], systemIds: null }))).toEqual({
      id: 'k1',
      toolIds: ['report'],
      systemIds: ['crm', 'erp'],
    });
    expect(narrowedCaller({ id: 'k1', toolIds: ['report'], systemIds: null }, active())).toEqual({
      id: 'k1',
      toolIds: ['report'],
      systemIds: ['crm', 'erp'],
    });
    expect(runAsNow({ userId: 'k1', toolIds: ['report', 'other'] }, active({ toolIds: ['report'] }))).toEqual(
      {
        userId: 'k1',
        toolIds: ['report'],
        systemIds: ['crm', 'erp'],
      },
    );
    expect(runAsNow(undefined, active())).toBeUndefined();
  });

  it("a schedule is held back by its key before its payload, and names the key's problem", () => {
    const tool = {
      id: 'report',
      steps,
      inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    } as unknown as Parameters<typeof scheduleHold>[1];
    const spec = { toolId: 'report', inputs: {} };
    expect(scheduleHold(spec, tool, active({ toolIds: ['other'] }))).toMatchObject({
      reason: 'KeyNotAllowed',
      message: expect.stringContaining(
        "the API key 'k1' the schedule runs as may no longer use tool 'report'",
      ),
    });
    expect(scheduleHold(spec, tool, active())).toMatchObject({ reason: 'InputsInvalid' });
    expect(scheduleHold({ ...spec, inputs: { n: 1 } }, tool, active())).toBeUndefined();
  });
});
