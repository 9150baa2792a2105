/**
 * A run refused before it started, as a user reads it afterwards: a scheduled tick that acceptance refused
 * and a chain that the guard refused are failed runs with the reason, who they ran as, and no time taken.
 */
import { describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { recordRefusedChain } from '../../../runs/chains.ts';
import { recordRefusedScheduled } from '../../../runs/scheduled.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi();

const runOf = async (runId: string) => {
  const answer = await api.call<Run>('GET', `/v1/runs/${runId}`);
  expect(answer.status).toBe(200);
  return answer.body;
};

describe('refused runs', () => {
  it('a refused scheduled tick is a failed scheduler run with the reason, its inputs and the key it ran as', async () => {
    await recordRefusedScheduled(api.embedded.store, {
      runId: 'refused-tick-1',
      scheduleId: 'nightly',
      toolId: 'report',
      inputs: { day: 'monday' },
      runAs: { userId: 'key-1', toolIds: ['report'], systemIds: ['crm'] },
      reason: 'Scheduled run refused: inputs do not match',
      mode: 'dev',
    });
    const run = await runOf('refused-tick-1');
    expect(run).toMatchObject({
      runId: 'refused-tick-1',
      toolId: 'report',
      status: 'failed',
      error: 'Scheduled run refused: inputs do not match',
      requestSource: 'scheduler',
      scheduleId: 'nightly',
      toolPayload: { day: 'monday' },
      executionMode: 'dev',
    });
    expect(run.metadata.durationMs).toBe(0);
    const stored = await api.embedded.store.getRun('refused-tick-1');
    expect(stored).toMatchObject({ userId: 'key-1', allowedToolIds: ['report'], allowedSystemIds: ['crm'] });
  });

  it("a refused chain is a failed tool-chain run under its parent, with the parent's key and mode", async () => {
    const parent = await api.embedded.store.getRun('refused-tick-1');
    if (!parent) throw new Error('the first test stores the parent');
    await recordRefusedChain(api.embedded.store, {
      runId: 'refused-chain-1',
      toolId: 'next',
      parent,
      reason: "Chain refused: tool 'next' cannot chain to itself",
    });
    const run = await runOf('refused-chain-1');
    expect(run).toMatchObject({
      status: 'failed',
      error: "Chain refused: tool 'next' cannot chain to itself",
      requestSource: 'tool-chain',
      parentRunId: 'refused-tick-1',
      executionMode: 'dev',
    });
    expect(run.toolPayload).toBeUndefined();
    const stored = await api.embedded.store.getRun('refused-chain-1');
    expect(stored).toMatchObject({ userId: 'key-1', allowedToolIds: ['report'], allowedSystemIds: ['crm'] });
  });
});
