import { describe, expect, it } from 'vitest';
import { defaultOperatorSettings } from '../../../config/config.ts';
import {
  AdmissionReason,
  RunReason,
  ToolRunConditionType,
  ToolRunEventReason,
} from '../../../contract/reasons.ts';
import type { ToolRunResource, ToolRunStatus } from '../../../contract/resources/kinds.ts';
import { RECORDED_FINALIZER } from '../../../contract/resources/labels.ts';
import type { Condition } from '../../../contract/resources/meta.ts';
import { decodeSummary, encodeSummary } from '../../../contract/wire/runner.ts';
import type { Execution } from '../../../operator/launchers/launcher.ts';
import {
  type Action,
  decide,
  podOutcome,
  STATUS_ERROR_LIMIT,
  statusError,
  type ToolRunObservation,
} from '../../../operator/toolrun/reconcile.ts';
import type { StoredRun } from '../../../store/index.ts';

const NOW = new Date('2026-03-01T10:10:00.000Z');
const settings = defaultOperatorSettings();
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();

const admitted: Condition = {
  type: ToolRunConditionType.Admitted,
  status: 'True',
  reason: AdmissionReason.Admitted,
  message: 'The run holds an execution slot',
  lastTransitionTime: '2026-03-01T10:00:00Z',
};

function toolRun(
  status: ToolRunStatus | undefined,
  opts: { cancel?: boolean; deleting?: boolean; finalizers?: string[]; modify?: boolean } = {},
): ToolRunResource {
  return {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolRun',
    metadata: {
      name: 'run-r1-0123456789',
      namespace: 'ns',
      uid: 'uid-1',
      generation: 1,
      finalizers: opts.finalizers ?? [RECORDED_FINALIZER],
      ...(opts.deleting ? { deletionTimestamp: ago(1000) } : {}),
    },
    spec: {
      runId: 'r1',
      tool: {
        id: 't',
        steps: [
          {
            id: 'a',
            config: { type: 'transform', transformCode: '(s) => s' },
            ...(opts.modify ? { modify: true } : {}),
          },
        ],
      },
      requestSource: 'api',
      executionMode: 'prod',
      ...(opts.cancel ? { cancel: true } : {}),
    } as ToolRunResource['spec'],
    ...(status ? { status } : {}),
  };
}

const live = { status: 'running' as const, metadata: { startedAt: ago(60_000) } };
const ended = (status: StoredRun['status'], error?: string) => ({
  status,
  ...(error ? { error } : {}),
  metadata: { startedAt: ago(60_000), completedAt: ago(1_000), durationMs: 59_000 },
});
const launchedStatus: ToolRunStatus = {
  status: 'running',
  attempt: 1,
  podName: 'run-r1-0123456789-a1',
  executionPhase: 'Running',
  startedAt: ago(60_000),
  conditions: [admitted],
};

const pod = (e: Partial<Execution>): Execution => ({
  launcher: 'pod',
  phase: 'None',
  cooperativeCancel: true,
  ...e,
});
const pool = (e: Partial<Execution>): Execution => ({
  launcher: 'pool',
  phase: 'None',
  cooperativeCancel: false,
  ...e,
});

function observe(partial: Partial<ToolRunObservation>): ToolRunObservation {
  return { now: NOW, toolRun: toolRun(undefined), run: live, execution: pod({}), settings, ...partial };
}

const types = (actions: Action[]) => actions.map((a) => (a.type === 'event' ? `event:${a.reason}` : a.type));
const finishOf = (actions: Action[]) =>
  actions.find((a) => a.type === 'finishRun') as Extract<Action, { type: 'finishRun' }> | undefined;
const patches = (actions: Action[]) =>
  actions.filter((a): a is Extract<Action, { type: 'patchStatus' }> => a.type === 'patchStatus');
const condition = (actions: Action[], type: string) =>
  patches(actions)
    .flatMap((p) => p.patch.conditions ?? [])
    .filter((c) => c.type === type)
    .at(-1);

describe('admission', () => {
  it('admits and launches in one pass: status, Admitted event, Pod, PodCreated event', () => {
    const { actions } = decide(observe({ admission: { admit: true } }));
    expect(types(actions)).toEqual([
      'patchStatus',
      'event:Admitted',
      'launch',
      'patchStatus',
      'event:PodCreated',
    ]);
    expect(patches(actions)[0]?.patch).toMatchObject({ status: 'running', startedAt: NOW.toISOString() });
    expect(patches(actions)[1]?.patch).toMatchObject({
      attempt: 1,
      podName: 'run-r1-0123456789-a1',
      executionPhase: 'Pending',
    });
    expect(condition(actions, ToolRunConditionType.Admitted)).toMatchObject({
      status: 'True',
      reason: 'Admitted',
    });
    expect(condition(actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'Unknown',
      reason: 'Pending',
    });
  });

  it('the pool launcher gets a Started event and no podName', () => {
    const { actions } = decide(observe({ admission: { admit: true }, execution: pool({}) }));
    expect(types(actions)).toContain('event:Started');
    expect(patches(actions)[1]?.patch.podName).toBeUndefined();
  });

  it('a waiting run is Admitted=False AdmissionLimit with its position, Queued once', () => {
    const verdict = { admit: false as const, position: 3, scope: 'global' as const, inUse: 2, limit: 2 };
    const first = decide(observe({ admission: verdict }));
    expect(types(first.actions)).toEqual(['patchStatus', 'event:Queued']);
    const queued = condition(first.actions, ToolRunConditionType.Admitted);
    expect(queued).toMatchObject({ status: 'False', reason: AdmissionReason.AdmissionLimit });
    expect(queued?.message).toContain('position 3');
    expect(queued?.message).toContain('2 of 2 runs executing');

    const again = decide(
      observe({
        toolRun: toolRun({ ...patches(first.actions)[0]?.patch }),
        admission: verdict,
      }),
    );
    expect(again.actions).toEqual([]);
    const moved = decide(
      observe({
        toolRun: toolRun({ ...patches(first.actions)[0]?.patch }),
        admission: { ...verdict, position: 2 },
      }),
    );
    expect(types(moved.actions)).toEqual(['patchStatus']);
  });

  it("a run waiting for its tool's slot is Admitted=False ToolConcurrencyLimit, Queued once, and looks again within a second", () => {
    const verdict = {
      admit: false as const,
      position: 2,
      scope: 'tool' as const,
      toolId: 't',
      inUse: 3,
      limit: 3,
    };
    const first = decide(observe({ admission: verdict }));
    expect(types(first.actions)).toEqual(['patchStatus', 'event:Queued']);
    expect(first.requeueAfterMs).toBe(1_000);
    const queued = condition(first.actions, ToolRunConditionType.Admitted);
    expect(queued).toMatchObject({ status: 'False', reason: AdmissionReason.ToolConcurrencyLimit });
    expect(queued?.message).toBe(
      'Waiting for a slot of tool t: position 2 in its queue; 3 of 3 runs executing (maxConcurrentRuns)',
    );
    expect(condition(first.actions, ToolRunConditionType.Succeeded)?.reason).toBe(RunReason.Queued);
    const again = decide(
      observe({ toolRun: toolRun({ ...patches(first.actions)[0]?.patch }), admission: verdict }),
    );
    expect(again.actions).toEqual([]);
    expect(again.requeueAfterMs).toBe(1_000);
  });

  it('a namespace limit names the namespace', () => {
    const { actions } = decide(
      observe({ admission: { admit: false, position: 1, scope: 'namespace', inUse: 1, limit: 1 } }),
    );
    expect(condition(actions, ToolRunConditionType.Admitted)?.message).toContain(
      'runs of namespace ns executing',
    );
  });
});

describe('launch and execution', () => {
  it('an admitted run whose launch was never recorded is launched (operator restarted before the Pod)', () => {
    const { actions } = decide(observe({ toolRun: toolRun({ status: 'running', conditions: [admitted] }) }));
    expect(types(actions)).toEqual(['launch', 'patchStatus', 'event:PodCreated']);
  });

  it('a Pod found without a launch record is adopted', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun({ status: 'running', conditions: [admitted] }),
        execution: pod({ phase: 'Pending', since: ago(1000), podName: 'run-r1-0123456789-a1' }),
      }),
    );
    expect(types(actions)).not.toContain('launch');
    expect(patches(actions)[0]?.patch).toMatchObject({ attempt: 1, podName: 'run-r1-0123456789-a1' });
  });

  it('records Running once, and asks to be woken for the heartbeat and deadline watchdogs', () => {
    const running = pod({ phase: 'Running', since: ago(10_000), heartbeatAt: ago(5_000), podName: 'p' });
    const first = decide(
      observe({ toolRun: toolRun({ ...launchedStatus, executionPhase: 'Pending' }), execution: running }),
    );
    expect(types(first.actions)).toEqual(['patchStatus', 'event:Running']);
    expect(first.requeueAfterMs).toBe(settings.heartbeatStaleMs - 5_000);
    const second = decide(observe({ toolRun: toolRun(launchedStatus), execution: running }));
    expect(second.actions).toEqual([]);
  });

  it.each([
    [
      'no heartbeat since the container started',
      { since: ago(settings.heartbeatStaleMs + 1), heartbeatAt: null },
    ],
    [
      'the last heartbeat is too old',
      { since: ago(10 * 60_000), heartbeatAt: ago(settings.heartbeatStaleMs) },
    ],
  ])('fails a Running Pod whose runner is silent (%s): HeartbeatStale, Pod stopped', (_case, e) => {
    const { actions } = decide(
      observe({
        toolRun: toolRun(launchedStatus, { modify: true }),
        execution: pod({ phase: 'Running', podName: 'p', ...e }),
      }),
    );
    expect(finishOf(actions)).toMatchObject({ status: 'failed', reason: RunReason.HeartbeatStale });
    expect(finishOf(actions)?.error).toMatch(/no heartbeat for \d+ s while its Pod p was Running/);
    expect(finishOf(actions)?.error).toContain('(it modifies data, so it was not retried)');
    expect(types(actions)).toEqual(['stop', 'finishRun', 'event:PodFailed']);
  });

  it('the pool launcher has no heartbeat watchdog', () => {
    const { actions, requeueAfterMs } = decide(
      observe({
        toolRun: toolRun(launchedStatus),
        execution: pool({ phase: 'Running', since: ago(60 * 60_000) }),
      }),
    );
    expect(actions).toEqual([]);
    expect(requeueAfterMs).toBeUndefined();
  });

  it('the deadline watchdog fires when a Pod runs past activeDeadlineSeconds plus a margin', () => {
    const deadline = (300 + 60 + 60) * 1000;
    const { actions } = decide(
      observe({
        toolRun: toolRun(launchedStatus),
        execution: pod({ phase: 'Running', podName: 'p', since: ago(deadline), heartbeatAt: ago(1000) }),
      }),
    );
    expect(finishOf(actions)).toMatchObject({ reason: RunReason.DeadlineExceeded });
  });

  it.each([
    ['ErrImagePull', RunReason.ImagePullFailed, 'its image could not be pulled'],
    ['ImagePullBackOff', RunReason.ImagePullFailed, 'its image could not be pulled'],
    ['Unschedulable', RunReason.Unschedulable, 'it could not be scheduled'],
    ['CreateContainerConfigError', RunReason.PodPendingTimeout, 'it did not start'],
  ])('a Pod pending too long (%s) fails the run as %s', (waiting, reason, text) => {
    const pending = pod({
      phase: 'Pending',
      podName: 'p',
      since: ago(settings.pendingTimeoutMs),
      waiting: { reason: waiting, message: 'details' },
    });
    const { actions } = decide(observe({ toolRun: toolRun(launchedStatus), execution: pending }));
    expect(finishOf(actions)).toMatchObject({ status: 'failed', reason });
    expect(finishOf(actions)?.error).toContain(text);
    expect(finishOf(actions)?.error).toContain(`${waiting} (details)`);
    expect(types(actions)).toContain('stop');
  });

  it('a Pod pending for less than the timeout is left alone until then', () => {
    const pending = pod({
      phase: 'Pending',
      podName: 'p',
      since: ago(10_000),
      waiting: { reason: 'ErrImagePull' },
    });
    const { actions, requeueAfterMs } = decide(
      observe({ toolRun: toolRun({ ...launchedStatus, executionPhase: 'Pending' }), execution: pending }),
    );
    expect(actions).toEqual([]);
    expect(requeueAfterMs).toBe(settings.pendingTimeoutMs - 10_000);
  });

  it('a Pod gone while a modifying run is live fails it as PodLost; an in-process execution as ExecutionLost', () => {
    const lost = decide(observe({ toolRun: toolRun(launchedStatus, { modify: true }), execution: pod({}) }));
    expect(finishOf(lost.actions)).toMatchObject({ reason: RunReason.PodLost });
    expect(finishOf(lost.actions)?.error).toContain('run-r1-0123456789-a1 disappeared');
    const gone = decide(observe({ toolRun: toolRun(launchedStatus), execution: pool({}) }));
    expect(finishOf(gone.actions)).toMatchObject({ reason: RunReason.ExecutionLost });
    expect(types(gone.actions)).toContain(`event:${ToolRunEventReason.ExecutionLost}`);
  });
});

describe('a lost runner Pod of a read-only run (every step modify: false)', () => {
  const retryOf = (actions: Action[]) =>
    actions.find((a) => a.type === 'retryRun') as Extract<Action, { type: 'retryRun' }> | undefined;
  const launchOf = (actions: Action[]) =>
    actions.find((a) => a.type === 'launch') as Extract<Action, { type: 'launch' }> | undefined;
  const summary = (s: Parameters<typeof encodeSummary>[0]) => decodeSummary(encodeSummary(s));

  it('a Pod gone before it reported: the store hands the run back and attempt 2 gets a new Pod', () => {
    const { actions } = decide(observe({ toolRun: toolRun(launchedStatus), execution: pod({}) }));
    expect(finishOf(actions)).toBeUndefined();
    expect(types(actions)).toEqual([
      'retryRun',
      'patchStatus',
      'event:Retrying',
      'launch',
      'patchStatus',
      'event:PodCreated',
    ]);
    expect(retryOf(actions)).toMatchObject({ fromAttempt: 1, otherwise: { reason: RunReason.PodLost } });
    expect(launchOf(actions)).toEqual({ type: 'launch', attempt: 2 });
    expect(patches(actions).at(-1)?.patch).toMatchObject({
      attempt: 2,
      podName: 'run-r1-0123456789-a2',
      executionPhase: 'Pending',
    });
    expect(condition(actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'Unknown',
      reason: RunReason.Retrying,
    });
    const event = actions.find((a) => a.type === 'event' && a.reason === ToolRunEventReason.Retrying);
    expect(event).toBeDefined();
    expect((event as { message: string }).message).toMatch(
      /run-r1-0123456789-a1 disappeared .*; the run is read-only, so it starts over: attempt 2 of at most 3/,
    );
  });

  it('an evicted Pod: attempt 2 starts and the ended Pod of attempt 1 is removed', () => {
    const execution = pod({
      phase: 'Finished',
      podName: 'run-r1-0123456789-a1',
      since: ago(1000),
      exit: { reason: 'Evicted', message: 'The node was low on resource: memory.' },
    });
    const { actions } = decide(observe({ toolRun: toolRun(launchedStatus), execution }));
    expect(retryOf(actions)).toMatchObject({ fromAttempt: 1, otherwise: { reason: RunReason.Evicted } });
    expect(launchOf(actions)?.attempt).toBe(2);
    expect(actions).toContainEqual({ type: 'cleanup', attempt: 1, token: false, pod: true });
  });

  it('a runner stopped by SIGTERM (it says interrupted, stored nothing): read-only starts over, modifying fails', () => {
    const execution = pod({
      phase: 'Finished',
      podName: 'run-r1-0123456789-a1',
      since: ago(1000),
      exit: {
        exitCode: 1,
        reason: 'Error',
        summary: summary({
          v: 1,
          runId: 'r1',
          status: 'aborted',
          resultStored: false,
          interrupted: true,
          error: 'The runner was stopped by SIGTERM before the run finished',
        }),
      },
    });
    const readOnly = decide(observe({ toolRun: toolRun(launchedStatus), execution }));
    expect(launchOf(readOnly.actions)?.attempt).toBe(2);
    const modifying = decide(observe({ toolRun: toolRun(launchedStatus, { modify: true }), execution }));
    expect(finishOf(modifying.actions)).toMatchObject({ status: 'failed', reason: RunReason.PodLost });
    expect(finishOf(modifying.actions)?.error).toBe(
      'The runner Pod run-r1-0123456789-a1 was stopped before the run finished (Pod deleted, evicted or ' +
        'its node drained) (it modifies data, so it was not retried)',
    );
    expect(finishOf(modifying.actions)?.error).not.toMatch(/cancel/i);
  });

  it('a Pod being deleted whose runner ended without a summary: lost, not a runner failure', () => {
    const execution = pod({
      phase: 'Finished',
      podName: 'run-r1-0123456789-a1',
      terminating: true,
      since: ago(1000),
      exit: { exitCode: 143, reason: 'Error' },
    });
    expect(launchOf(decide(observe({ toolRun: toolRun(launchedStatus), execution })).actions)?.attempt).toBe(
      2,
    );
    const modifying = decide(observe({ toolRun: toolRun(launchedStatus, { modify: true }), execution }));
    expect(finishOf(modifying.actions)).toMatchObject({ reason: RunReason.PodLost });
    expect(finishOf(modifying.actions)?.error).toBe(
      'The runner Pod run-r1-0123456789-a1 was deleted before the run finished (it modifies data, so it was not retried)',
    );
  });

  it('a silent runner (node lost): its Pod is stopped first, then attempt 2 starts', () => {
    const execution = pod({
      phase: 'Running',
      podName: 'run-r1-0123456789-a1',
      since: ago(settings.heartbeatStaleMs + 1),
      heartbeatAt: null,
    });
    const { actions } = decide(observe({ toolRun: toolRun(launchedStatus), execution }));
    expect(types(actions).slice(0, 2)).toEqual(['stop', 'retryRun']);
    expect(actions[0]).toEqual({ type: 'stop', attempt: 1, graceMs: 0 });
    expect(launchOf(actions)?.attempt).toBe(2);
  });

  it('attempts are bounded: the last allowed attempt lost fails the run, saying how many were made', () => {
    const third = { ...launchedStatus, attempt: 3, podName: 'run-r1-0123456789-a3' };
    const { actions } = decide(observe({ toolRun: toolRun(third), execution: pod({}) }));
    expect(types(actions)).not.toContain('launch');
    expect(finishOf(actions)).toMatchObject({ status: 'failed', reason: RunReason.PodLost });
    expect(finishOf(actions)?.error).toContain(
      'it was not retried again: 3 of at most 3 attempts were made, KUBEGLUE_MAX_RUN_ATTEMPTS',
    );
    const more = decide(
      observe({
        toolRun: toolRun(third),
        execution: pod({}),
        settings: { ...settings, maxRunAttempts: 5 },
      }),
    );
    expect(launchOf(more.actions)?.attempt).toBe(4);
  });

  it('a retry whose launch was not recorded: the old attempt’s Pod is left, the store’s attempt launched', () => {
    const execution = pod({
      phase: 'Finished',
      podName: 'run-r1-0123456789-a1',
      since: ago(1000),
      exit: { reason: 'Evicted' },
    });
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus), run: { ...live, attempt: 2 }, execution }),
    );
    expect(types(actions)).toEqual(['launch', 'patchStatus', 'event:PodCreated']);
    expect(launchOf(actions)?.attempt).toBe(2);
  });

  it('OOMKilled, a deadline or a failing runner are not lost Pods: no retry', () => {
    for (const exit of [
      { exitCode: 137, reason: 'OOMKilled' },
      { reason: 'DeadlineExceeded', message: 'Pod was active too long' },
      { exitCode: 1, reason: 'Error', message: 'TypeError' },
    ]) {
      const execution = pod({ phase: 'Finished', podName: 'p', since: ago(1000), exit });
      const { actions } = decide(observe({ toolRun: toolRun(launchedStatus), execution }));
      expect(types(actions)).toEqual(['finishRun', 'event:PodFailed']);
    }
  });
});

describe('a run the worker pool handed back at shutdown (embedded)', () => {
  it('the store is at attempt 2, the ToolRun at 1: attempt 2 is launched, not failed as ExecutionLost', () => {
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus), run: { ...live, attempt: 2 }, execution: pool({}) }),
    );
    expect(finishOf(actions)).toBeUndefined();
    expect(types(actions)).toEqual(['launch', 'patchStatus', 'event:Started']);
    expect(actions[0]).toEqual({ type: 'launch', attempt: 2 });
    expect(patches(actions)[0]?.patch).toMatchObject({ attempt: 2, executionPhase: 'Pending' });
    const started = actions.find((a) => a.type === 'event') as { message: string };
    expect(started.message).toBe('The run started in the worker pool (attempt 2)');
  });

  it('a ToolRun whose first launch was never recorded starts at the store’s attempt', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun({ status: 'running', conditions: [admitted] }),
        run: { ...live, attempt: 2 },
        execution: pool({}),
      }),
    );
    expect(actions[0]).toEqual({ type: 'launch', attempt: 2 });
  });

  it('an in-process execution gone at the same attempt is still ExecutionLost', () => {
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus), run: { ...live, attempt: 1 }, execution: pool({}) }),
    );
    expect(finishOf(actions)).toMatchObject({ reason: RunReason.ExecutionLost });
  });
});

describe('outcome of a Pod that ended before the store had a terminal state', () => {
  const summary = (s: Parameters<typeof encodeSummary>[0]) => decodeSummary(encodeSummary(s));
  it.each([
    [
      'the runner summary (failed)',
      {
        exitCode: 2,
        reason: 'Error',
        summary: summary({ v: 1, runId: 'r1', status: 'failed', resultStored: false, error: 'step a: boom' }),
      },
      RunReason.RunnerFailed,
      'step a: boom',
    ],
    [
      'a success summary whose result never arrived',
      {
        exitCode: 0,
        reason: 'Completed',
        summary: summary({ v: 1, runId: 'r1', status: 'success', resultStored: false }),
      },
      RunReason.RunnerFailed,
      'result never reached the store',
    ],
    [
      'OOMKilled',
      { exitCode: 137, reason: 'OOMKilled' },
      RunReason.OOMKilled,
      'The runner Pod was OOMKilled (memory limit 256Mi)',
    ],
    [
      'Evicted',
      { reason: 'Evicted', message: 'The node was low on resource: memory.' },
      RunReason.Evicted,
      'evicted: The node was low',
    ],
    [
      'DeadlineExceeded',
      { reason: 'DeadlineExceeded', message: 'Pod was active too long' },
      RunReason.DeadlineExceeded,
      'exceeded its deadline',
    ],
    [
      'a crash with a log tail',
      { exitCode: 1, reason: 'Error', message: 'TypeError: x is undefined' },
      RunReason.RunnerFailed,
      'exited with code 1: TypeError',
    ],
    [
      'exit 0 without result',
      { exitCode: 0, reason: 'Completed' },
      RunReason.RunnerFailed,
      'without recording a result',
    ],
  ])('%s', (_case, exit, reason, text) => {
    const execution = pod({ phase: 'Finished', podName: 'p', memoryLimit: '256Mi', exit, since: ago(1000) });
    const { actions } = decide(observe({ toolRun: toolRun(launchedStatus, { modify: true }), execution }));
    expect(finishOf(actions)).toMatchObject({ status: 'failed', reason });
    expect(finishOf(actions)?.error).toContain(text);
    expect(types(actions)).toEqual(['finishRun', 'event:PodFailed']);
    expect(podOutcome(observe({ execution })).reason).toBe(reason);
  });

  it('the store wins: a terminal record is mirrored whatever the Pod says', () => {
    const execution = pod({ phase: 'Finished', podName: 'p', exit: { exitCode: 137, reason: 'OOMKilled' } });
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus), run: ended('success'), execution }),
    );
    expect(finishOf(actions)).toBeUndefined();
    expect(condition(actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
    });
  });
});

describe('finish: mirror, finalizer, cleanup, retention', () => {
  it('mirrors success: status, steps, Succeeded=True, events, token cleanup, Pod deleted, finalizer released', () => {
    const execution = pod({ phase: 'Finished', podName: 'p', exit: { exitCode: 0, reason: 'Completed' } });
    const { actions, requeueAfterMs } = decide(
      observe({
        toolRun: toolRun(launchedStatus),
        run: ended('success'),
        steps: [{ id: 'a', success: true }],
        execution,
      }),
    );
    expect(types(actions)).toEqual([
      'patchStatus',
      'event:Succeeded',
      'cleanup',
      'event:Retained',
      'patchStatus',
      'cleanup',
      'event:PodDeleted',
      'releaseFinalizer',
    ]);
    expect(patches(actions)[0]?.patch).toMatchObject({
      status: 'success',
      reason: 'Succeeded',
      durationMs: 59_000,
      duration: '59s',
      steps: [{ id: 'a', success: true }],
    });
    expect(actions[2]).toEqual({ type: 'cleanup', attempt: 1, token: true, pod: false });
    expect(actions[5]).toEqual({ type: 'cleanup', attempt: 1, token: false, pod: true });
    expect(requeueAfterMs).toBe(settings.toolRunRetentionMs - 1_000);
  });

  it('keeps a failed Pod for the retention, then deletes it', () => {
    const execution = pod({ phase: 'Finished', podName: 'p', exit: { exitCode: 2 } });
    const first = decide(
      observe({ toolRun: toolRun(launchedStatus), run: ended('failed', 'step a: boom'), execution }),
    );
    expect(types(first.actions)).toContain('event:PodRetained');
    expect(first.actions.filter((a) => a.type === 'cleanup' && a.pod)).toEqual([]);
    expect(first.requeueAfterMs).toBe(settings.failedPodRetentionMs - 1_000);
    expect(condition(first.actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'False',
      reason: 'Failed',
      message: 'The run failed: step a: boom',
    });

    const later = decide(
      observe({
        now: new Date(NOW.getTime() + settings.failedPodRetentionMs),
        toolRun: toolRun({ ...launchedStatus, status: 'failed' }, { finalizers: [] }),
        run: ended('failed', 'step a: boom'),
        execution,
      }),
    );
    expect(types(later.actions)).toEqual(['patchStatus', 'cleanup', 'event:PodDeleted']);
  });

  it('names the cause the operator recorded (status.reason) in the Succeeded condition', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun({ ...launchedStatus, reason: RunReason.OOMKilled }),
        run: ended('failed', 'The runner Pod was OOMKilled (memory limit 256Mi)'),
        execution: pod({}),
      }),
    );
    expect(condition(actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'False',
      reason: 'OOMKilled',
    });
  });

  it('redacts and truncates the error to 1 KiB', () => {
    const error = `GET https://user:pw@x.example/a?api_key=s3cr3t&x=1 failed: Bearer abcdefghijklmnop ${'é'.repeat(2000)}`;
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus), run: ended('failed', error), execution: pod({}) }),
    );
    const written = patches(actions)[0]?.patch.error ?? '';
    expect(Buffer.byteLength(written)).toBeLessThanOrEqual(STATUS_ERROR_LIMIT);
    expect(written).not.toContain('s3cr3t');
    expect(written).not.toContain('pw@');
    expect(written).not.toContain('abcdefghijklmnop');
    expect(written.endsWith('…')).toBe(true);
    expect(statusError('short')).toBe('short');
  });

  it('deletes the ToolRun after the retention (cleaning up its Pod and Secret too)', () => {
    const { actions } = decide(
      observe({
        now: new Date(NOW.getTime() + settings.toolRunRetentionMs),
        toolRun: toolRun(
          { ...launchedStatus, status: 'success', executionPhase: 'Finished' },
          { finalizers: [] },
        ),
        run: ended('success'),
        execution: pod({}),
      }),
    );
    expect(types(actions)).toEqual(['cleanup', 'delete', 'event:Deleted']);
  });

  it('a run cancelled while queued: Admitted=False NotAdmitted, Cancelled, no Pod work', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun(undefined),
        run: ended('aborted', 'Run was cancelled'),
        execution: pod({}),
      }),
    );
    expect(condition(actions, ToolRunConditionType.Admitted)).toMatchObject({
      status: 'False',
      reason: 'NotAdmitted',
    });
    expect(condition(actions, ToolRunConditionType.Succeeded)).toMatchObject({
      status: 'False',
      reason: 'Cancelled',
    });
    expect(types(actions)).toEqual(['patchStatus', 'event:Cancelled', 'event:Retained', 'releaseFinalizer']);
  });

  it('the store has no run: failed RunNotFound, finalizer released', () => {
    const { actions } = decide(observe({ run: undefined }));
    expect(types(actions)).toEqual(['patchStatus', 'event:Failed', 'releaseFinalizer']);
    expect(patches(actions)[0]?.patch).toMatchObject({ status: 'failed', reason: RunReason.RunNotFound });
  });
});

describe('cancel', () => {
  it.each([
    ['spec.cancel', { cancel: true }],
    ['deletion of a live ToolRun', { deleting: true }],
  ])('%s aborts the run in the store; the runner learns it from its heartbeat', (_case, opts) => {
    const { actions } = decide(
      observe({
        toolRun: toolRun(launchedStatus, opts),
        execution: pod({ phase: 'Running', podName: 'p', since: ago(1000) }),
      }),
    );
    expect(types(actions)).toEqual(['abortRun']);
  });

  it('an in-process execution is stopped at once', () => {
    const { actions } = decide(
      observe({ toolRun: toolRun(launchedStatus, { cancel: true }), execution: pool({ phase: 'Running' }) }),
    );
    expect(types(actions)).toEqual(['abortRun', 'stop']);
  });

  it('the runner gets the grace period after the cancel, then its Pod is deleted', () => {
    const running = pod({ phase: 'Running', podName: 'p', since: ago(60_000) });
    const cancelled = {
      ...ended('aborted', 'Run was cancelled'),
      metadata: { startedAt: ago(60_000), completedAt: ago(5_000) },
    };
    const during = decide(
      observe({
        toolRun: toolRun({ ...launchedStatus, status: 'aborted' }, { cancel: true }),
        run: cancelled,
        execution: running,
      }),
    );
    expect(types(during.actions)).not.toContain('stop');
    expect(during.requeueAfterMs).toBe(settings.cancelGraceMs - 5_000);
    const after = decide(
      observe({
        now: new Date(NOW.getTime() + settings.cancelGraceMs),
        toolRun: toolRun({ ...launchedStatus, status: 'aborted' }, { cancel: true }),
        run: cancelled,
        execution: running,
      }),
    );
    expect(after.actions[0]).toEqual({
      type: 'stop',
      attempt: 1,
      graceMs: settings.runnerTerminationGraceSeconds * 1000,
    });
    expect(types(after.actions)).toContain(`event:${ToolRunEventReason.Stopping}`);
  });

  it('a deleted ToolRun whose run has ended is released and not deleted again', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun({ ...launchedStatus }, { deleting: true }),
        run: ended('aborted', 'Run was cancelled'),
        execution: pod({ phase: 'Finished', podName: 'p', exit: { exitCode: 2 } }),
      }),
    );
    expect(types(actions)).toContain('releaseFinalizer');
    expect(types(actions)).not.toContain('delete');
    expect(types(actions)).not.toContain('event:Retained');
  });
});

describe('cancel of a run whose Pod never started', () => {
  it('deletes the pending Pod at once', () => {
    const { actions } = decide(
      observe({
        toolRun: toolRun({ ...launchedStatus, executionPhase: 'Pending', status: 'aborted' }),
        run: ended('aborted', 'Run was cancelled'),
        execution: pod({ phase: 'Pending', podName: 'p', since: ago(1000) }),
      }),
    );
    expect(actions[0]).toEqual({
      type: 'stop',
      attempt: 1,
      graceMs: settings.runnerTerminationGraceSeconds * 1000,
    });
  });
});
