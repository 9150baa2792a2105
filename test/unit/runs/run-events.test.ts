import { describe, expect, it } from 'vitest';
import type { RunLogEvent } from '../../../contract/api/run.ts';
import { type RunEventBus, RunEventHub, type RunRef, runLogEvent } from '../../../runs/run-events.ts';

const ref: RunRef = { runId: 'r1', toolId: 'crm-sync', traceId: 't1' };
const at = { seq: 3, timestamp: '2026-01-01T00:00:00.000Z' };

/** An in-memory stand-in for LISTEN/NOTIFY: every message reaches every listener (the sender's too), later. */
function memoryBus() {
  const listeners = new Set<(payload: string) => void>();
  const sent: string[] = [];
  const bus = (): RunEventBus => ({
    publish: async (payload) => {
      sent.push(payload);
      for (const listener of listeners) setImmediate(() => listener(payload));
    },
    subscribe: async (listener) => {
      listeners.add(listener);
      return async () => {
        listeners.delete(listener);
      };
    },
  });
  const reconnect = () => {
    for (const listener of listeners) listener('');
  };
  return { bus, sent, reconnect };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('runLogEvent', () => {
  it('describes each kind of news in one line, with ids, counts and statuses only', () => {
    expect(runLogEvent(ref, { type: 'run_started' }, at)).toEqual({
      id: 'r1:start',
      type: 'run_started',
      level: 'INFO',
      status: 'running',
      message: "Run r1 of tool 'crm-sync' started",
      timestamp: at.timestamp,
      traceId: 't1',
      runId: 'r1',
      toolId: 'crm-sync',
    });
    expect(
      runLogEvent(ref, { type: 'page_fetched', stepId: 'list', page: 2, totalFetched: 200 }, at),
    ).toMatchObject({
      id: 'r1:3',
      message: "Step 'list': page 2 fetched, 200 item(s) so far",
    });
    expect(
      runLogEvent(ref, { type: 'retry', stepId: 'list', attempt: 2, delayMs: 412.7, status: 429 }, at),
    ).toMatchObject({
      level: 'WARN',
      httpStatus: 429,
      delayMs: 413,
      message: "Step 'list': HTTP 429; attempt 2 in 413 ms",
    });
    expect(runLogEvent(ref, { type: 'retry', stepId: 'list', attempt: 3, delayMs: 5 }, at).message).toBe(
      "Step 'list': a network error; attempt 3 in 5 ms",
    );
  });

  it("says a resumed run's reused step was not executed again", () => {
    const reused = runLogEvent(
      ref,
      { type: 'step_finished', result: { stepId: 'list', success: true, data: [1], reusedFrom: 'r0' } },
      at,
    );
    expect(reused).toMatchObject({
      status: 'success',
      message: "Step 'list' reused from run r0 (not executed again)",
    });
    expect(reused.durationMs).toBeUndefined();
  });

  it('never carries step data, and cuts errors to 1 000 characters', () => {
    const finished = runLogEvent(
      ref,
      { type: 'step_finished', result: { stepId: 'list', success: true, data: { secret: 'row-data' } } },
      { ...at, durationMs: 42 },
    );
    expect(finished).toMatchObject({
      status: 'success',
      durationMs: 42,
      message: "Step 'list' succeeded in 42 ms",
    });
    expect(JSON.stringify(finished)).not.toContain('row-data');
    const failed = runLogEvent(
      ref,
      { type: 'step_finished', result: { stepId: 'list', success: false, error: 'x'.repeat(5_000) } },
      at,
    );
    expect(failed.level).toBe('ERROR');
    expect(failed.error).toHaveLength(1_001);
    expect(
      runLogEvent(ref, { type: 'run_finished', status: 'aborted', error: 'Run was cancelled' }, at),
    ).toMatchObject({
      id: 'r1:end',
      level: 'WARN',
      message: 'Run r1 was aborted: Run was cancelled',
    });
  });
});

describe('runLogEvent of a loop step that went on past failed items', () => {
  const loop = {
    items: 20,
    failed: 8,
    failedItems: Array.from({ length: 8 }, (_, i) => ({
      index: i * 2,
      error: `item ${i * 2}: ${'e'.repeat(500)}`,
    })),
  };

  it('says how many items failed, as a warning, and carries the first five with their errors cut short', () => {
    const event = runLogEvent(
      ref,
      { type: 'step_finished', result: { stepId: 'each', success: true, loop } },
      { ...at, durationMs: 42 },
    );
    expect(event).toMatchObject({
      level: 'WARN',
      status: 'success',
      message: "Step 'each' succeeded in 42 ms; 8 of 20 items failed",
      loop: { items: 20, failed: 8 },
    });
    expect(event.loop?.failedItems.map((item) => item.index)).toEqual([0, 2, 4, 6, 8]);
    expect(event.loop?.failedItems[0]?.error).toBe(`item 0: ${'e'.repeat(292)}…`);
    // Small enough to cross between replicas in one notification.
    expect(JSON.stringify(event).length).toBeLessThan(3000);
  });

  it('keeps the message of a loop whose items all succeeded', () => {
    const event = runLogEvent(
      ref,
      {
        type: 'step_finished',
        result: { stepId: 'each', success: true, loop: { items: 3, failed: 0, failedItems: [] } },
      },
      at,
    );
    expect(event).toMatchObject({ level: 'INFO', message: "Step 'each' succeeded" });
  });
});

describe('RunEventHub in one process', () => {
  it('gives a subscriber what is kept of matching runs first, then live events; others see nothing', () => {
    let now = 1_000;
    const hub = new RunEventHub({ now: () => now });
    hub.emit(ref, { type: 'run_started' });
    hub.emit(ref, { type: 'step_started', stepId: 'a' });
    hub.emit({ ...ref, runId: 'other', traceId: 'elsewhere' }, { type: 'run_started' });
    const byTrace: RunLogEvent[] = [];
    const byRun: RunLogEvent[] = [];
    hub.subscribe({ traceId: 't1' }, (event) => byTrace.push(event));
    hub.subscribe({ runId: 'r1' }, (event) => byRun.push(event));
    now += 250;
    hub.emit(ref, { type: 'step_finished', result: { stepId: 'a', success: true } });
    expect(byTrace.map((e) => e.id)).toEqual(['r1:start', 'r1:1', 'r1:2']);
    expect(byRun).toEqual(byTrace);
    // Durations are measured from step_started to step_finished.
    expect(byTrace[2]).toMatchObject({ durationMs: 250 });
  });

  it('keeps at most eventsPerRun events per run (run_started stays) and at most maxRuns runs', () => {
    const hub = new RunEventHub({ eventsPerRun: 3, maxRuns: 2 });
    hub.emit(ref, { type: 'run_started' });
    for (let page = 1; page <= 5; page++)
      hub.emit(ref, { type: 'page_fetched', stepId: 'a', page, totalFetched: page });
    const kept: RunLogEvent[] = [];
    hub.subscribe({ runId: 'r1' }, (event) => kept.push(event)).close();
    expect(kept.map((e) => e.id)).toEqual(['r1:start', 'r1:4', 'r1:5']);

    hub.emit({ ...ref, runId: 'r2' }, { type: 'run_started' });
    hub.emit({ ...ref, runId: 'r3' }, { type: 'run_started' });
    const first: RunLogEvent[] = [];
    hub.subscribe({ runId: 'r1' }, (event) => first.push(event)).close();
    expect(first).toEqual([]);
  });

  it('numbers events by the producer when told (runner Pods), so a repeat is one event', () => {
    const hub = new RunEventHub();
    const seen: RunLogEvent[] = [];
    hub.subscribe({ runId: 'r1' }, (event) => seen.push(event));
    hub.emit(ref, { type: 'step_started', stepId: 'a' }, { seq: 7, timed: false });
    hub.emit(ref, { type: 'step_started', stepId: 'a' }, { seq: 7, timed: false });
    const kept: RunLogEvent[] = [];
    hub.subscribe({ runId: 'r1' }, (event) => kept.push(event));
    expect(kept.map((e) => e.id)).toEqual(['r1:7']);
    // Live delivery does not deduplicate: the stream does (by id).
    expect(seen.map((e) => e.id)).toEqual(['r1:7', 'r1:7']);
  });

  it('never throws to the run that reports, even when a stream fails', () => {
    const lines: string[] = [];
    const hub = new RunEventHub({ log: (line) => lines.push(line) });
    hub.subscribe({ runId: 'r1' }, () => {
      throw new Error('socket gone');
    });
    expect(() => hub.emit(ref, { type: 'run_started' })).not.toThrow();
    expect(lines).toEqual(['run events: a stream failed: socket gone']);
  });
});

describe('RunEventHub across replicas', () => {
  it('forwards only the runs another replica follows, with what was kept of them, in order', async () => {
    const { bus, sent } = memoryBus();
    const a = new RunEventHub({ bus: bus() });
    const b = new RunEventHub({ bus: bus() });
    await a.start();
    await b.start();
    a.emit(ref, { type: 'run_started' });
    a.emit({ ...ref, runId: 'unfollowed', traceId: 'nobody' }, { type: 'run_started' });
    await tick();
    expect(sent.map((p) => JSON.parse(p).k)).toEqual(['h', 'h']);

    const received: RunLogEvent[] = [];
    b.subscribe({ traceId: 't1' }, (event) => received.push(event));
    await tick();
    a.emit(ref, { type: 'step_started', stepId: 'a' });
    a.emit({ ...ref, runId: 'unfollowed', traceId: 'nobody' }, { type: 'step_started', stepId: 'a' });
    await tick();
    expect(received.map((e) => e.id)).toEqual(['r1:start', 'r1:1']);
    const forwarded = sent.map((p) => JSON.parse(p)).filter((m) => m.k === 'e');
    expect(forwarded.every((m) => m.e.runId === 'r1')).toBe(true);
    await a.close();
    await b.close();
  });

  it('asks for everything when it follows too many runs to name, and forgets replicas that went quiet', async () => {
    const { bus, sent } = memoryBus();
    let now = 0;
    const a = new RunEventHub({ bus: bus(), now: () => now });
    // B's announcements say how long A may believe them.
    const b = new RunEventHub({ bus: bus(), now: () => now, interestTtlMs: 1_000 });
    await a.start();
    await b.start();
    for (let i = 0; i < 200; i++) b.subscribe({ traceId: `trace-${'x'.repeat(40)}-${i}` }, () => {});
    await tick();
    const interest = sent.map((p) => JSON.parse(p)).filter((m) => m.k === 'i');
    expect(interest.at(-1)).toMatchObject({ all: true, keys: [] });
    // Once it asks for everything, more streams change nothing it needs to say.
    expect(interest.filter((m) => m.all)).toHaveLength(1);
    expect(sent.every((p) => p.length < 8000)).toBe(true);
    a.emit(ref, { type: 'run_started' });
    await tick();
    expect(sent.filter((p) => JSON.parse(p).k === 'e')).toHaveLength(1);
    // No refresh within the TTL: A stops forwarding.
    now += 5_000;
    a.emit(ref, { type: 'step_started', stepId: 'a' });
    await tick();
    expect(sent.filter((p) => JSON.parse(p).k === 'e')).toHaveLength(1);
    await a.close();
    await b.close();
  });

  it('announces again after the bus reconnected (notifications may have been lost)', async () => {
    const { bus, sent, reconnect } = memoryBus();
    const b = new RunEventHub({ bus: bus() });
    await b.start();
    b.subscribe({ runId: 'r1' }, () => {});
    await tick();
    const before = sent.length;
    reconnect();
    await tick();
    expect(sent.slice(before).map((p) => JSON.parse(p).k)).toEqual(['i', 'h']);
    await b.close();
  });
});
