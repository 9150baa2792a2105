/**
 * Time as schedules see it: what time it is, and a wake-up at a time. The operator uses the system clock;
 * tests a clock they move by hand, so a tick a day away is reached at once.
 */
export interface ScheduleClock {
  now(): Date;
  /** Calls wake once at `when` (or a little later); the returned function cancels it. */
  at(when: Date, wake: () => void): () => void;
}

/** setTimeout's ceiling: a later wake-up comes early, and whoever wakes looks again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const SYSTEM_CLOCK: ScheduleClock = {
  now: () => new Date(),
  at: (when, wake) => {
    const timer = setTimeout(wake, Math.min(MAX_TIMER_MS, Math.max(0, when.getTime() - Date.now())));
    timer.unref();
    return () => clearTimeout(timer);
  },
};
