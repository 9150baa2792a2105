import { describe, expect, it } from 'vitest';
import { loadOperatorSettings, SETTINGS } from '../../../config/config.ts';
import { ToolRunEventReason } from '../../../contract/reasons.ts';
import { ResourceError } from '../../../kube/resources/index.ts';
import type { Event } from '../../../kube/types.ts';
import { createEventRecorder, type EventSink, type InvolvedObject } from '../../../operator/events.ts';

function memorySink() {
  const events = new Map<string, Event>();
  const sink: EventSink = {
    create: async (event) => {
      events.set(event.metadata.name, event);
      return event;
    },
    patch: async (name, patch) => {
      const current = events.get(name);
      if (!current) throw new ResourceError('NotFound', `events "${name}" not found`);
      const next = { ...current, ...(patch as Partial<Event>) } as Event;
      events.set(name, next);
      return next;
    },
  };
  return { sink, events };
}

const object: InvolvedObject<'ToolRun'> = {
  apiVersion: 'kubeglue.dev/v1alpha1',
  kind: 'ToolRun',
  metadata: { name: 'run-a', namespace: 'ns', uid: 'u1', resourceVersion: '7' },
};

describe('the event recorder', () => {
  it('records a core v1 Event about the object, Normal or Warning as its reason is declared', async () => {
    const { sink, events } = memorySink();
    const recorder = createEventRecorder({
      sink,
      instance: 'op-1',
      now: () => new Date('2026-03-01T10:00:00.500Z'),
    });
    await recorder.record(object, ToolRunEventReason.PodFailed, 'The runner Pod was OOMKilled');
    const [event] = [...events.values()];
    expect(event).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { namespace: 'ns' },
      involvedObject: {
        apiVersion: 'kubeglue.dev/v1alpha1',
        kind: 'ToolRun',
        name: 'run-a',
        namespace: 'ns',
        uid: 'u1',
      },
      reason: 'PodFailed',
      message: 'The runner Pod was OOMKilled',
      type: 'Warning',
      count: 1,
      firstTimestamp: '2026-03-01T10:00:00Z',
      lastTimestamp: '2026-03-01T10:00:00Z',
      source: { component: 'kubeglue-operator', host: 'op-1' },
      reportingComponent: 'kubeglue-operator',
    });
    expect(event?.metadata.name).toMatch(/^run-a\.[0-9a-f]+$/);
    await recorder.record(object, ToolRunEventReason.Succeeded, 'The run succeeded in 1.2s');
    expect([...events.values()].map((e) => [e.type, e.reason])).toEqual([
      ['Warning', 'PodFailed'],
      ['Normal', 'Succeeded'],
    ]);
  });

  it('counts repeats on one Event, and starts a new one when it expired', async () => {
    const { sink, events } = memorySink();
    const recorder = createEventRecorder({ sink });
    await recorder.record(object, ToolRunEventReason.Queued, 'position 1');
    await recorder.record(object, ToolRunEventReason.Queued, 'position 1');
    await recorder.record(object, ToolRunEventReason.Queued, 'position 1');
    expect([...events.values()].map((e) => e.count)).toEqual([3]);
    await recorder.record(object, ToolRunEventReason.Queued, 'position 2');
    expect(events.size).toBe(2);
    events.clear();
    await recorder.record(object, ToolRunEventReason.Queued, 'position 1');
    expect([...events.values()].map((e) => e.count)).toEqual([1]);
  });

  it('cuts long messages to 1 KiB and never throws', async () => {
    const { sink, events } = memorySink();
    const lines: string[] = [];
    const recorder = createEventRecorder({ sink, log: (line) => lines.push(line) });
    await recorder.record(object, ToolRunEventReason.Failed, 'x'.repeat(5000));
    expect(Buffer.byteLength([...events.values()][0]?.message ?? '')).toBeLessThanOrEqual(1024);
    const failing = createEventRecorder({
      sink: {
        create: () => Promise.reject(new Error('forbidden')),
        patch: () => Promise.reject(new Error('no')),
      },
      log: (line) => lines.push(line),
    });
    await failing.record(object, ToolRunEventReason.Admitted, 'ok');
    expect(lines.at(-1)).toBe('event Admitted for ToolRun run-a not recorded: forbidden');
  });

  it('without a sink records nothing', async () => {
    await expect(
      createEventRecorder({ sink: undefined }).record(object, ToolRunEventReason.Queued, 'y'),
    ).resolves.toBeUndefined();
  });
});

describe('operator settings', () => {
  it('have defaults', () => {
    expect(loadOperatorSettings({})).toMatchObject({
      maxAsyncRuns: 64,
      maxAsyncRunsPerNamespace: undefined,
      runnerUserId: 65532,
      runnerMemoryLimit: '512Mi',
      deleteSucceededPods: true,
      failedPodRetentionMs: 900_000,
      toolRunRetentionMs: 3_600_000,
      egress: { privateDefault: 'deny' },
      runnerImagePullSecrets: [],
    });
  });

  it('read KUBEGLUE_* variables', () => {
    const settings = loadOperatorSettings({
      KUBEGLUE_MAX_ASYNC_RUNS_PER_NAMESPACE: '3',
      KUBEGLUE_RUNNER_IMAGE_PULL_SECRETS: 'a, b,',
      KUBEGLUE_DELETE_SUCCEEDED_PODS: 'false',
      KUBEGLUE_RUNNER_MEMORY_LIMIT: '1Gi',
    });
    expect(settings).toMatchObject({
      maxAsyncRunsPerNamespace: 3,
      runnerImagePullSecrets: ['a', 'b'],
      deleteSucceededPods: false,
      runnerMemoryLimit: '1Gi',
    });
  });

  it('name every invalid variable', () => {
    expect(() =>
      loadOperatorSettings({
        KUBEGLUE_RUNNER_MEMORY_LIMIT: 'lots',
        KUBEGLUE_MAX_ASYNC_RUNS: '0',
        KUBEGLUE_INTERNAL_URL: 'nope',
        KUBEGLUE_RUNNER_GATEWAY_RELAY: 'relay.svc',
      }),
    ).toThrow(
      /KUBEGLUE_RUNNER_MEMORY_LIMIT: .*KUBEGLUE_INTERNAL_URL: .*KUBEGLUE_RUNNER_GATEWAY_RELAY: must be host:port.*KUBEGLUE_MAX_ASYNC_RUNS: /s,
    );
    expect(loadOperatorSettings({ KUBEGLUE_RUNNER_GATEWAY_RELAY: '[fd00::1]:8082' }).runnerGatewayRelay).toBe(
      '[fd00::1]:8082',
    );
  });

  it('document each one', () => {
    const read = [...SETTINGS.byName.values()].filter((setting) => setting.roles.includes('operator'));
    for (const row of read) {
      expect(row.name).toMatch(/^KUBEGLUE_[A-Z_]+$/);
      expect(row.doc.length).toBeGreaterThan(10);
    }
    expect(new Set(read.map((r) => r.name)).size).toBe(read.length);
  });
});
