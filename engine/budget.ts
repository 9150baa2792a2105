/**
 * Systems' rate budgets as a run's requests take from them. The budget itself is the host's (the store,
 * shared by every replica, worker and runner Pod: systems/budgets.ts); here a step's requests ask it when
 * they may go, wait that long (bounded by the run's deadline, told as a `budget_wait` event) and give a
 * maxConcurrent slot back when they end. A system without a rateLimit in the order gets no budget at all:
 * its requests ask nothing.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import type { BudgetSource, RequestBudget } from './types.ts';

const NOTHING_TO_RELEASE = (): void => {};

/**
 * A request ready to go more than half a rate interval after its slot (the answer came late, or its timer
 * fired late: a busy host, a stalled worker) takes a new slot once, rather than going at once beside the
 * requests whose slots are now: late requests sent together are exactly the burst the budget is there to
 * prevent. The missed slot stays unused. Never less than this many ms (timers are not more precise).
 */
const MIN_LATE_MS = 5;

/** How a system reads in a wait message: its base URL's host, else its id. */
export function budgetLabel(system: ResolvedSystem): string {
  try {
    return system.url ? new URL(system.url).host : system.id;
  } catch {
    return system.id;
  }
}

/** The budget of a step's system, or undefined when it has none (or the run has no budget source). */
export function requestBudget(
  source: BudgetSource | undefined,
  system: ResolvedSystem | undefined,
  onWait: (system: string, waitMs: number) => void,
  now: () => number = Date.now,
): RequestBudget | undefined {
  if (!source || !system?.rateLimit) return undefined;
  const label = budgetLabel(system);
  const id = system.id;
  const rate = system.rateLimit.requestsPerSecond;
  const lateMs = rate ? Math.max(MIN_LATE_MS, 500 / rate) : Number.POSITIVE_INFINITY;
  return {
    async take(signal, deadline) {
      let told = false;
      let retaken = false;
      for (;;) {
        signal.throwIfAborted();
        const withinMs = deadline - now();
        if (withinMs <= 0) throw new Error(`the run's deadline passed while waiting for ${label}'s budget`);
        const ticket = await source.take(id, withinMs);
        if ('retryInMs' in ticket) {
          // Every slot is in use: ask again (told once, not at every question).
          const waitMs = Math.min(ticket.retryInMs, deadline - now());
          if (!told) onWait(label, waitMs);
          told = true;
          await sleepFor(Math.max(0, waitMs), undefined, { signal });
          continue;
        }
        const answeredAt = now();
        const release = ticket.lease ? () => source.release(id, ticket.lease as string) : NOTHING_TO_RELEASE;
        if (ticket.waitMs > 0) {
          onWait(label, ticket.waitMs);
          try {
            await sleepFor(ticket.waitMs, undefined, { signal });
          } catch (error) {
            release();
            throw error;
          }
        }
        // The slot's moment on this clock: the host's (a worker of its pool), else the wait's end.
        const slot = ticket.at ?? answeredAt + ticket.waitMs;
        if (!retaken && now() - slot > lateMs) {
          retaken = true;
          release();
          continue;
        }
        return release;
      }
    },
    pause(forMs) {
      source.pause(id, forMs);
    },
  };
}
