/**
 * How `--follow` draws a run's events: on a terminal what is under way rewrites one line and what
 * happened stays; anywhere else every event is a plain line, without carriage returns or escapes.
 */
import { describe, expect, it } from 'vitest';
import { Progress } from '../../../bin/cli/progress.ts';
import type { RunLogEvent } from '../../../contract/api/run.ts';

function event(
  type: RunLogEvent['type'],
  message: string,
  timestamp = '2025-01-01T00:00:00.000Z',
): RunLogEvent {
  return {
    id: `r:${message}`,
    type,
    level: 'INFO',
    message,
    timestamp,
    traceId: 't',
    runId: 'r',
    toolId: 'x',
  };
}

const EVENTS = [
  event('run_started', 'Run r started'),
  event('step_started', "Step 'a' started"),
  event('page_fetched', "Step 'a': page 1 fetched, 2 item(s) so far", '2025-01-01T00:00:01.000Z'),
  event('step_finished', "Step 'a' succeeded in 3000 ms"),
  event('run_finished', 'Run r succeeded in 3100 ms'),
];

function terminal(isTTY: boolean) {
  let written = '';
  return { isTTY, columns: 60, write: (text: string) => (written += text), written: () => written };
}

describe('the progress of a followed run', () => {
  it('writes one plain line per event when not on a terminal', () => {
    const out = terminal(false);
    const progress = new Progress(out);
    for (const one of EVENTS) progress.event(one);
    progress.stop();
    expect(out.written()).toBe(`${EVENTS.map((one) => one.message).join('\n')}\n`);
  });

  it('rewrites a progress line on a terminal, with the time the step has taken so far', () => {
    const out = terminal(true);
    // Two seconds after the step started.
    const progress = new Progress(out, () => Date.parse('2025-01-01T00:00:02.000Z'));
    for (const one of EVENTS) progress.event(one);
    progress.stop();
    expect(out.written()).toBe(
      '\r\x1b[2KRun r started\n' +
        "\r\x1b[2K… Step 'a' started (2 s)" +
        // A page of the same step keeps the step's clock.
        "\r\x1b[2K… Step 'a': page 1 fetched, 2 item(s) so far (2 s)" +
        "\r\x1b[2KStep 'a' succeeded in 3000 ms\n" +
        '\r\x1b[2KRun r succeeded in 3100 ms\n',
    );
  });

  it('cuts the progress line to the width of the terminal', () => {
    const out = { ...terminal(true), columns: 20 };
    const progress = new Progress(out, () => Date.parse('2025-01-01T00:00:00.000Z'));
    progress.event(event('step_started', "Step 'a-very-long-step-id' started"));
    progress.stop();
    expect(out.written()).toBe("\r\x1b[2K… Step 'a-very-lon…\r\x1b[2K");
  });
});

describe('the progress of a run whose events quote control characters', () => {
  // What a step's error may quote from a system's answer: a clipboard write, clear the screen, a C1 CSI.
  const hostile = [
    event('step_started', "Step 'a' started \x1b]52;c;cHduZWQ=\x07"),
    event('step_finished', "Step 'a' failed: HTTP 500 \x1b[2J\x9b31m"),
  ];

  it('shows them as escapes on a terminal, where only its own line control is written', () => {
    const out = terminal(true);
    const progress = new Progress(out, () => Date.parse('2025-01-01T00:00:00.000Z'));
    for (const one of hostile) progress.event(one);
    progress.stop();
    expect(out.written()).toBe(
      "\r\x1b[2K… Step 'a' started \\x1b]52;c;cHduZWQ=\\x07 (0 s)" +
        "\r\x1b[2KStep 'a' failed: HTTP 500 \\x1b[2J\\x9b31m\n",
    );
  });

  it('shows them as escapes in plain lines', () => {
    const out = terminal(false);
    const progress = new Progress(out);
    for (const one of hostile) progress.event(one);
    expect(out.written()).toBe(
      "Step 'a' started \\x1b]52;c;cHduZWQ=\\x07\nStep 'a' failed: HTTP 500 \\x1b[2J\\x9b31m\n",
    );
  });
});
