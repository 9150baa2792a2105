import { expect, it } from 'vitest';
import { describeStore, runningRun } from '../../support/store.ts';

const ended = { completedAt: '2026-03-01T10:00:02.000Z', durationMs: 2000 };

describeStore('runner executions', (store) => {
  async function running(runId: string, attempt = 1): Promise<string> {
    await store.insertRun(runningRun(runId));
    const tokenHash = `hash-${runId}-${attempt}`;
    expect(await store.issueRunToken(runId, attempt, tokenHash, '2026-03-01T10:00:01.000Z')).toBe(true);
    return tokenHash;
  }

  it('issues a token for a running run only, and finds its execution by the hash', async () => {
    const hash = await running('x-issue');
    expect(await store.findRunnerAttemptByToken(hash)).toEqual({ runId: 'x-issue', attempt: 1 });
    expect(await store.getRunnerAttempt('x-issue')).toEqual({
      attempt: 1,
      issuedAt: '2026-03-01T10:00:01.000Z',
      heartbeatAt: null,
      lastSeq: 0,
    });
    expect(await store.findRunnerAttemptByToken('hash-nobody')).toBeUndefined();
    expect(await store.issueRunToken('x-unknown', 1, 'hash-x-unknown')).toBe(false);

    await store.insertRun(
      runningRun('x-done', { status: 'success', metadata: { startedAt: ended.completedAt, ...ended } }),
    );
    expect(await store.issueRunToken('x-done', 1, 'hash-x-done')).toBe(false);
    expect(await store.getRunnerAttempt('x-done')).toBeUndefined();
  });

  it('stops answering for a token once its run ended, except to say how it ended', async () => {
    const hash = await running('x-end');
    expect(await store.finishRun('x-end', { status: 'success', ...ended })).toBe(true);
    expect(await store.findRunnerAttemptByToken(hash)).toBeUndefined();
    expect(await store.findEndedRunnerAttemptByToken(hash)).toEqual({
      runId: 'x-end',
      attempt: 1,
      status: 'success',
    });

    const aborted = await running('x-abort');
    expect(await store.findEndedRunnerAttemptByToken(aborted)).toBeUndefined();
    await store.abortRun('x-abort', { error: 'cancelled', completedAt: ended.completedAt });
    expect(await store.findRunnerAttemptByToken(aborted)).toBeUndefined();
    expect((await store.findEndedRunnerAttemptByToken(aborted))?.status).toBe('aborted');
  });

  it('replaces the token for a new attempt, restarts the sequence and drops partial step results', async () => {
    const first = await running('x-attempt');
    expect(await store.acceptEvents('x-attempt', 1, 1, 3)).toBe(3);
    await store.saveStepResult('x-attempt', 0, { stepId: 'a', success: true, data: 1 });
    await store.recordHeartbeat('x-attempt', 1, '2026-03-01T10:00:03.000Z');

    expect(await store.issueRunToken('x-attempt', 2, 'hash-x-attempt-2', '2026-03-01T10:00:04.000Z')).toBe(
      true,
    );
    expect(await store.findRunnerAttemptByToken(first)).toBeUndefined();
    expect(await store.findRunnerAttemptByToken('hash-x-attempt-2')).toEqual({
      runId: 'x-attempt',
      attempt: 2,
    });
    expect(await store.getRunnerAttempt('x-attempt')).toEqual({
      attempt: 2,
      issuedAt: '2026-03-01T10:00:04.000Z',
      heartbeatAt: null,
      lastSeq: 0,
    });
    expect(await store.getStepResults('x-attempt')).toEqual([]);
    expect(await store.nextStepSeq('x-attempt')).toBe(0);

    // The old attempt is refused everywhere; an older attempt cannot take the token back.
    expect(await store.acceptEvents('x-attempt', 1, 4, 1)).toBeUndefined();
    expect(await store.recordHeartbeat('x-attempt', 1, '2026-03-01T10:00:05.000Z')).toBe(false);
    expect(await store.issueRunToken('x-attempt', 1, 'hash-x-attempt-1b')).toBe(false);
    expect(await store.acceptEvents('x-attempt', 2, 1, 2)).toBe(2);
  });

  it('issuing again for the same attempt replaces only the token', async () => {
    await running('x-reissue');
    expect(await store.acceptEvents('x-reissue', 1, 1, 2)).toBe(2);
    await store.saveStepResult('x-reissue', 0, { stepId: 'a', success: true });
    expect(await store.issueRunToken('x-reissue', 1, 'hash-x-reissue-again')).toBe(true);
    expect(await store.findRunnerAttemptByToken('hash-x-reissue-1')).toBeUndefined();
    expect((await store.getRunnerAttempt('x-reissue'))?.lastSeq).toBe(2);
    expect(await store.getStepResults('x-reissue')).toHaveLength(1);
  });

  it('counts only new events: resent ones are acknowledged, gaps and ended runs refused', async () => {
    await running('x-events');
    expect(await store.acceptEvents('x-events', 1, 1, 3)).toBe(3);
    expect(await store.acceptEvents('x-events', 1, 1, 3)).toBe(0);
    expect(await store.acceptEvents('x-events', 1, 2, 4)).toBe(2);
    expect(await store.acceptEvents('x-events', 1, 6, 0)).toBe(0);
    expect(await store.acceptEvents('x-events', 1, 8, 1)).toBeUndefined();
    expect((await store.getRunnerAttempt('x-events'))?.lastSeq).toBe(5);
    expect(await store.acceptEvents('x-events', 1, 6, 1)).toBe(1);
    await store.finishRun('x-events', { status: 'failed', ...ended });
    expect(await store.acceptEvents('x-events', 1, 7, 1)).toBeUndefined();
    expect(await store.acceptEvents('x-nobody', 1, 1, 1)).toBeUndefined();
  });

  it('applies a batch sent twice at once only once', async () => {
    await running('x-race');
    const apply = () =>
      store.transaction(async (tx) => {
        const fresh = await tx.acceptEvents('x-race', 1, 1, 2);
        if (fresh) {
          const seq = await tx.nextStepSeq('x-race');
          await tx.saveStepResult('x-race', seq, { stepId: 'a', success: true });
          await tx.saveStepResult('x-race', seq + 1, { stepId: 'b', success: true });
        }
        return fresh;
      });
    const results = await Promise.all([apply(), apply(), apply()]);
    expect(results.sort()).toEqual([0, 0, 2]);
    expect((await store.getStepResults('x-race')).map((s) => s.stepId)).toEqual(['a', 'b']);
    expect(await store.nextStepSeq('x-race')).toBe(2);
  });

  it('records heartbeats for the current attempt of a running run, never moving back', async () => {
    await running('x-beat');
    expect(await store.recordHeartbeat('x-beat', 1, '2026-03-01T10:00:05.000Z')).toBe(true);
    expect(await store.recordHeartbeat('x-beat', 1, '2026-03-01T10:00:04.000Z')).toBe(true);
    expect((await store.getRunnerAttempt('x-beat'))?.heartbeatAt).toBe('2026-03-01T10:00:05.000Z');
    expect(await store.recordHeartbeat('x-beat', 2, '2026-03-01T10:00:06.000Z')).toBe(false);
    await store.abortRun('x-beat', { error: 'cancelled', completedAt: ended.completedAt });
    expect(await store.recordHeartbeat('x-beat', 1, '2026-03-01T10:00:07.000Z')).toBe(false);
    expect((await store.getRunnerAttempt('x-beat'))?.heartbeatAt).toBe('2026-03-01T10:00:05.000Z');
  });

  it('refuses the same token hash for two runs', async () => {
    await running('x-dup-a');
    await store.insertRun(runningRun('x-dup-b'));
    await expect(store.issueRunToken('x-dup-b', 1, 'hash-x-dup-a-1')).rejects.toThrow();
  });
});
