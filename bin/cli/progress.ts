/**
 * How `--follow` shows a run's events. On a terminal, what is under way (a step started, a page fetched)
 * is one line that rewrites itself, with the time it has taken so far; what happened (a step finished, a
 * retry, the outcome) stays as a line of its own. Anywhere else (a pipe, a file) every event is one plain
 * line: no carriage returns, no escape sequences.
 */
import { LOOP_FAILURES_LISTED, type RunLogEvent, type StepLoop } from '../../contract/api/run.ts';
import type { Terminal } from './command.ts';
import { printable } from './output.ts';

/** Events that only say what is going on now: the progress line on a terminal. */
const UNDER_WAY: ReadonlySet<RunLogEvent['type']> = new Set(['step_started', 'page_fetched']);

const CLEAR_LINE = '\r\x1b[2K';

/**
 * The lines under a loop step that went on past failed items (failureBehavior continue): one per failed
 * item listed, each error on one line, then how many more and where they are.
 */
export function failedItemLines(
  step: { success: boolean; loop?: StepLoop | undefined },
  rest: string,
): string[] {
  const loop = step.loop;
  if (!step.success || !loop || loop.failed === 0) return [];
  const lines = loop.failedItems.map(
    (item) => `  item ${item.index} failed: ${item.error.replace(/\s+/g, ' ')}`,
  );
  const more = loop.failed - loop.failedItems.length;
  if (more > 0) lines.push(`  … and ${more} more failed item${more === 1 ? '' : 's'} (${rest})`);
  return lines;
}

export class Progress {
  readonly #out: Terminal;
  readonly #now: () => number;
  #current: { text: string; since: number } | undefined;
  #ticker: NodeJS.Timeout | undefined;

  constructor(out: Terminal, now: () => number = Date.now) {
    this.#out = out;
    this.#now = now;
  }

  get #tty(): boolean {
    return this.#out.isTTY === true;
  }

  event(event: RunLogEvent): void {
    if (event.type === 'step_finished') {
      this.line(event.message);
      const rest = `kubeglue logs ${event.runId} lists the first ${LOOP_FAILURES_LISTED}`;
      for (const line of failedItemLines({ success: event.status === 'success', loop: event.loop }, rest)) {
        this.line(line);
      }
      return;
    }
    if (this.#tty && UNDER_WAY.has(event.type)) {
      // A new page of the same step keeps the step's clock.
      const since =
        event.type === 'page_fetched' && this.#current ? this.#current.since : Date.parse(event.timestamp);
      this.#current = { text: printable(event.message), since: Number.isNaN(since) ? this.#now() : since };
      this.#draw();
      this.#ticker ??= setInterval(() => this.#draw(), 1000).unref();
      return;
    }
    this.line(event.message);
  }

  /**
   * A line that stays (on a terminal, written above the progress line). It quotes step ids and errors the
   * API sends: never a control sequence of its own.
   */
  line(text: string): void {
    const printed = printable(text);
    if (!this.#tty) {
      this.#out.write(`${printed}\n`);
      return;
    }
    this.#out.write(`${CLEAR_LINE}${printed}\n`);
    this.#current = undefined;
  }

  #draw(): void {
    if (!this.#current) return;
    const seconds = Math.max(0, Math.floor((this.#now() - this.#current.since) / 1000));
    const text = `… ${this.#current.text} (${seconds} s)`;
    const width = (this.#out.columns || 80) - 1;
    this.#out.write(`${CLEAR_LINE}${text.length > width ? `${text.slice(0, width - 1)}…` : text}`);
  }

  /** Clears the progress line and stops its clock. */
  stop(): void {
    if (this.#ticker) clearInterval(this.#ticker);
    this.#ticker = undefined;
    if (this.#tty && this.#current) this.#out.write(CLEAR_LINE);
    this.#current = undefined;
  }
}
