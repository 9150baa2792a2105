import type { ScheduleClock } from '../../schedules/clock.ts';

/**
 * A schedule clock the test moves by hand: `set` and `advance` jump to a time and fire every wake-up due
 * by then, so a reconciler waiting for a tick an hour (or a day) away reaches it at once.
 */
export class ManualClock implements ScheduleClock {
  #now: number;
  readonly #wakes = new Set<{ at: number; wake: () => void }>();

  constructor(start: string | Date) {
    this.#now = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  at(when: Date, wake: () => void): () => void {
    const entry = { at: when.getTime(), wake };
    this.#wakes.add(entry);
    if (entry.at <= this.#now) setImmediate(() => this.#fire());
    return () => {
      this.#wakes.delete(entry);
    };
  }

  /** Moves to `to` (never backwards in these tests) and fires what is due. */
  set(to: string | Date): void {
    this.#now = new Date(to).getTime();
    this.#fire();
  }

  advance(ms: number): void {
    this.set(new Date(this.#now + ms));
  }

  /** Wake-ups still waiting (tests of the controller's timers). */
  pending(): Date[] {
    return [...this.#wakes].map((entry) => new Date(entry.at));
  }

  #fire(): void {
    for (const entry of [...this.#wakes]) {
      if (entry.at > this.#now) continue;
      this.#wakes.delete(entry);
      entry.wake();
    }
  }
}
