import { describe, expect, it } from 'vitest';
import type { ToolRunResource } from '../../../contract/resources/kinds.ts';
import {
  type AdmissionEntry,
  admissionQueue,
  admissionState,
  queuedMessage,
} from '../../../operator/toolrun/admission.ts';

let seq = 0;
function entry(
  name: string,
  state: AdmissionEntry['state'],
  opts: Partial<AdmissionEntry> = {},
): AdmissionEntry {
  return { namespace: 'a', name, createdAt: '2026-03-01T10:00:00Z', seq: seq++, state, ...opts };
}

const verdicts = (entries: AdmissionEntry[], limits: { global: number; perNamespace?: number }) =>
  Object.fromEntries(
    [...admissionQueue(entries, limits)].map(([key, v]) => [
      key,
      v.admit ? 'admit' : `${v.scope}#${v.position}`,
    ]),
  );

describe('admissionQueue', () => {
  it.each([
    {
      case: 'free slots go to the oldest waiting runs',
      entries: [entry('x', 'active'), entry('w1', 'waiting'), entry('w2', 'waiting'), entry('w3', 'waiting')],
      limits: { global: 3 },
      expected: { 'a/w1': 'admit', 'a/w2': 'admit', 'a/w3': 'global#1' },
    },
    {
      case: 'creation time first, then the order first seen',
      entries: [
        entry('late', 'waiting', { createdAt: '2026-03-01T10:00:05Z', seq: 0 }),
        entry('early', 'waiting', { createdAt: '2026-03-01T10:00:01Z', seq: 9 }),
        entry('same-second-b', 'waiting', { createdAt: '2026-03-01T10:00:03Z', seq: 2 }),
        entry('same-second-a', 'waiting', { createdAt: '2026-03-01T10:00:03Z', seq: 3 }),
      ],
      limits: { global: 1 },
      expected: {
        'a/early': 'admit',
        'a/same-second-b': 'global#1',
        'a/same-second-a': 'global#2',
        'a/late': 'global#3',
      },
    },
    {
      case: 'done runs hold no slot',
      entries: [entry('d', 'done'), entry('w', 'waiting')],
      limits: { global: 1 },
      expected: { 'a/w': 'admit' },
    },
    {
      case: 'a namespace at its limit does not hold the others back',
      entries: [
        entry('a1', 'active'),
        entry('a2', 'waiting'),
        entry('b1', 'waiting', { namespace: 'b' }),
        entry('a3', 'waiting'),
      ],
      limits: { global: 10, perNamespace: 1 },
      expected: { 'a/a2': 'namespace#1', 'b/b1': 'admit', 'a/a3': 'namespace#2' },
    },
    {
      case: 'the global limit applies across namespaces',
      entries: [entry('a1', 'active'), entry('b1', 'waiting', { namespace: 'b' })],
      limits: { global: 1, perNamespace: 5 },
      expected: { 'b/b1': 'global#1' },
    },
  ])('$case', ({ entries, limits, expected }) => {
    expect(verdicts(entries, limits)).toEqual(expected);
  });
});

describe('admissionState', () => {
  const base: ToolRunResource = {
    apiVersion: 'kubeglue.dev/v1alpha1',
    kind: 'ToolRun',
    metadata: { name: 'r' },
    spec: {
      runId: 'r',
      tool: { id: 't', steps: [] },
      requestSource: 'api',
      executionMode: 'prod',
    } as unknown as ToolRunResource['spec'],
  };
  const admitted = [
    { type: 'Admitted', status: 'True' as const, reason: 'Admitted', message: '', lastTransitionTime: '' },
  ];
  it.each([
    ['new', base, 'waiting'],
    ['admitted', { ...base, status: { status: 'running' as const, conditions: admitted } }, 'active'],
    ['finished', { ...base, status: { status: 'success' as const, conditions: admitted } }, 'done'],
    ['cancelled while queued', { ...base, spec: { ...base.spec, cancel: true } }, 'done'],
    ['deleted while queued', { ...base, metadata: { ...base.metadata, deletionTimestamp: 'x' } }, 'done'],
    [
      'deleted while admitted (still holds its slot until the run ends)',
      {
        ...base,
        metadata: { ...base.metadata, deletionTimestamp: 'x' },
        status: { status: 'running' as const, conditions: admitted },
      },
      'active',
    ],
  ])('%s', (_case, toolRun, state) => {
    expect(admissionState(toolRun as ToolRunResource)).toBe(state);
  });
});

describe('queuedMessage', () => {
  it('names the position and the limit, and stops counting past 100', () => {
    expect(queuedMessage({ admit: false, position: 2, scope: 'global', inUse: 4, limit: 4 }, 'ns')).toBe(
      'Waiting for an execution slot: position 2 in the queue; 4 of 4 runs executing (limit KUBEGLUE_MAX_ASYNC_RUNS)',
    );
    expect(queuedMessage({ admit: false, position: 101, scope: 'namespace', inUse: 1, limit: 1 }, 'ns')).toBe(
      'Waiting for an execution slot: position over 100 in the queue; 1 of 1 runs of namespace ns executing (limit KUBEGLUE_MAX_ASYNC_RUNS_PER_NAMESPACE)',
    );
  });
});
