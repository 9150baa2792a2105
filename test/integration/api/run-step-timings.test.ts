/**
 * A run's stored results keep when each step started and how long it took, so its timeline can be drawn
 * after the fact (the dashboard's run page): synchronous runs, and asynchronous ones executed in this
 * process's pool (the embedded deployment). The synchronous answer itself is unchanged.
 */
import { expect, it } from 'vitest';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const api = useTestApi();

interface Step {
  stepId: string;
  startedAt?: string;
  durationMs?: number;
}

it("stores each step's start and duration with a synchronous run's results", async () => {
  target.route('GET', '/slow', { delayMs: 120, body: { ok: true } });
  const tool = {
    id: 'timed',
    steps: [
      { id: 'first', config: { type: 'transform', transformCode: '() => 1' } },
      { id: 'wait', config: { url: `${target.url}/slow` } },
    ],
  };
  expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  const answer = await api.call<{ runId: string; stepResults: Step[]; metadata: { startedAt: string } }>(
    'POST',
    '/v1/tools/timed/run',
    { body: {} },
  );
  expect(answer.status).toBe(200);
  expect(answer.body.stepResults.map((step) => Object.keys(step).sort())).toEqual([
    ['data', 'stepId', 'success'],
    ['data', 'stepId', 'success'],
  ]);

  const stored = await api.call<{ data: { stepResults: Step[] } }>(
    'GET',
    `/v1/runs/${answer.body.runId}/results`,
  );
  const [first, wait] = stored.body.data.stepResults;
  const runStart = Date.parse(answer.body.metadata.startedAt);
  expect(Date.parse(first?.startedAt ?? '')).toBeGreaterThanOrEqual(runStart);
  expect(Date.parse(wait?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(first?.startedAt ?? ''));
  expect(wait?.durationMs).toBeGreaterThanOrEqual(100);
  expect(first?.durationMs).toBeLessThan(wait?.durationMs ?? 0);
});

it("stores each step's start and duration with an asynchronous run's results", async () => {
  target.route('GET', '/slow', { delayMs: 120, body: { ok: true } });
  const tool = { id: 'timed-async', steps: [{ id: 'wait', config: { url: `${target.url}/slow` } }] };
  expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  const accepted = await api.call<{ runId: string }>('POST', '/v1/tools/timed-async/run', {
    body: { options: { async: true } },
  });
  expect(accepted.status).toBe(202);
  expect((await waitForRun(api, accepted.body.runId)).status).toBe('success');
  const stored = await api.call<{ data: { stepResults: Step[] } }>(
    'GET',
    `/v1/runs/${accepted.body.runId}/results`,
  );
  expect(stored.body.data.stepResults).toEqual([
    expect.objectContaining({
      stepId: 'wait',
      startedAt: expect.stringMatching(/Z$/),
      durationMs: expect.any(Number),
    }),
  ]);
  expect(stored.body.data.stepResults[0]?.durationMs).toBeGreaterThanOrEqual(100);
});

it("dates each step's start by the engine, before its request reaches the system, not by its event's arrival", async () => {
  // The worker sends a run's events together, up to 10 ms after the first, so a start dated on arrival
  // came after the request it started had been answered.
  target.route('GET', '/quick', { delayMs: 4, body: { ok: true } });
  const tool = { id: 'quick', steps: [{ id: 'wait', config: { url: `${target.url}/quick` } }] };
  expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  target.reset();
  const sync = await api.call<{ runId: string }>('POST', '/v1/tools/quick/run', { body: {} });
  const accepted = await api.call<{ runId: string }>('POST', '/v1/tools/quick/run', {
    body: { options: { async: true } },
  });
  expect((await waitForRun(api, accepted.body.runId)).status).toBe('success');
  const [first, second] = target.requests;
  for (const [runId, request] of [
    [sync.body.runId, first],
    [accepted.body.runId, second],
  ] as const) {
    const stored = await api.call<{ data: { stepResults: Step[] } }>('GET', `/v1/runs/${runId}/results`);
    const [step] = stored.body.data.stepResults;
    // One machine, one clock: the step started before the system received its request, and lasted as
    // long as the system took to answer at least.
    expect(Date.parse(step?.startedAt ?? '')).toBeLessThanOrEqual(request?.receivedAt ?? 0);
    expect(step?.durationMs).toBeGreaterThanOrEqual(3);
  }
});
