import { describe, expect, it } from 'vitest';
import { encodeSummary } from '../../../contract/wire/runner.ts';
import type { Pod } from '../../../kube/types.ts';
import { executionFromPod } from '../../../operator/launchers/pod.ts';

function pod(status: Pod['status'], extra: Partial<Pod['metadata']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'run-a-a1', creationTimestamp: '2026-03-01T10:00:00Z', ...extra },
    spec: { containers: [{ name: 'runner', image: 'x', resources: { limits: { memory: '256Mi' } } }] },
    status,
  };
}

const container = (state: NonNullable<NonNullable<Pod['status']>['containerStatuses']>[number]['state']) => ({
  containerStatuses: [{ name: 'runner', ready: false, restartCount: 0, image: 'x', imageID: '', state }],
});

describe('executionFromPod', () => {
  it('no Pod: None', () => {
    expect(executionFromPod(undefined)).toEqual({ launcher: 'pod', phase: 'None', cooperativeCancel: true });
  });

  it.each([
    [
      'waiting for its image',
      {
        phase: 'Pending' as const,
        ...container({ waiting: { reason: 'ImagePullBackOff', message: 'Back-off' } }),
      },
      { reason: 'ImagePullBackOff', message: 'Back-off' },
    ],
    [
      'unschedulable',
      {
        phase: 'Pending' as const,
        conditions: [
          { type: 'PodScheduled', status: 'False' as const, reason: 'Unschedulable', message: '0/1 nodes' },
        ],
      },
      { reason: 'Unschedulable', message: '0/1 nodes' },
    ],
    ['just created', { phase: 'Pending' as const }, undefined],
  ])('Pending: %s', (_case, status, waiting) => {
    const execution = executionFromPod(pod(status));
    expect(execution).toMatchObject({
      phase: 'Pending',
      since: '2026-03-01T10:00:00Z',
      podName: 'run-a-a1',
      memoryLimit: '256Mi',
    });
    expect(execution.waiting).toEqual(waiting);
  });

  it('Running since the container started, with the heartbeat', () => {
    const execution = executionFromPod(
      pod({ phase: 'Running', ...container({ running: { startedAt: '2026-03-01T10:00:02Z' } }) }),
      '2026-03-01T10:00:05Z',
    );
    expect(execution).toMatchObject({
      phase: 'Running',
      since: '2026-03-01T10:00:02Z',
      heartbeatAt: '2026-03-01T10:00:05Z',
    });
  });

  it.each([
    [
      'OOMKilled',
      {
        phase: 'Failed' as const,
        ...container({ terminated: { exitCode: 137, reason: 'OOMKilled', finishedAt: 't' } }),
      },
      { exitCode: 137, reason: 'OOMKilled' },
    ],
    [
      'Evicted (the Pod’s reason and message)',
      { phase: 'Failed' as const, reason: 'Evicted', message: 'low on memory' },
      { reason: 'Evicted', message: 'low on memory' },
    ],
    [
      'DeadlineExceeded wins over the container’s reason',
      {
        phase: 'Failed' as const,
        reason: 'DeadlineExceeded',
        message: 'Pod was active on the node longer than the specified deadline',
        ...container({ terminated: { exitCode: 137, reason: 'Error', finishedAt: 't' } }),
      },
      {
        exitCode: 137,
        reason: 'DeadlineExceeded',
        message: 'Pod was active on the node longer than the specified deadline',
      },
    ],
    [
      'a log tail (FallbackToLogsOnError) is a message, not a summary',
      {
        phase: 'Failed' as const,
        ...container({
          terminated: { exitCode: 1, reason: 'Error', message: 'TypeError: x', finishedAt: 't' },
        }),
      },
      { exitCode: 1, reason: 'Error', message: 'TypeError: x' },
    ],
  ])('Finished: %s', (_case, status, exit) => {
    const execution = executionFromPod(pod(status));
    expect(execution.phase).toBe('Finished');
    expect(execution.exit).toEqual(exit);
  });

  it('Finished: the runner summary in the termination message', () => {
    const message = encodeSummary({ v: 1, runId: 'a', status: 'failed', resultStored: false, error: 'boom' });
    const execution = executionFromPod(
      pod({
        phase: 'Failed',
        ...container({ terminated: { exitCode: 2, reason: 'Error', message, finishedAt: 't' } }),
      }),
    );
    expect(execution.exit).toEqual({
      exitCode: 2,
      reason: 'Error',
      summary: { v: 1, runId: 'a', status: 'failed', resultStored: false, error: 'boom' },
    });
  });

  it('marks a Pod being deleted', () => {
    expect(executionFromPod(pod({ phase: 'Running' }, { deletionTimestamp: 'x' })).terminating).toBe(true);
  });
});
