/**
 * Systems' rate budgets, the host's side: what a run's requests to a system with a rateLimit ask before
 * they go (engine/budget.ts asks over IPC from a worker, or through the internal API from a runner Pod).
 * The budget is the store's (store/queries/system-budgets.ts), so every replica, worker and runner Pod
 * takes from the same one; the limits are the System's as this process's systems cache has it now, never
 * what the asker says.
 */
import { randomUUID } from 'node:crypto';
import { isLimited, type RateLimit, type RateLimitUse } from '../contract/api/system.ts';
import type { SystemResource } from '../contract/resources/kinds.ts';
import type { BudgetSource, BudgetTicket } from '../engine/types.ts';
import type { BudgetUse, ExecutionMode, Store } from '../store/index.ts';

/** The budget of a system variant: its key in the store (the resource's name) and its limits. */
export interface BudgetOf {
  key: string;
  limit: RateLimit;
}

/** A variant's rateLimitUse in its REST shape: present once a budgeted system was used. */
export async function presentBudgetUse(
  store: Pick<Store, 'systemBudgets'>,
  resource: SystemResource,
  now: number,
): Promise<{ rateLimitUse?: RateLimitUse }> {
  const limit = resource.spec.rateLimit;
  if (!isLimited(limit)) return {};
  const use = await store.systemBudgets.use(resource.metadata.name, limit, now);
  if (!use) return {};
  const { pausedUntil, lastRequestAt, ...counts } = use;
  return {
    rateLimitUse: {
      ...counts,
      ...(pausedUntil > 0 ? { pausedUntil: new Date(pausedUntil).toISOString() } : {}),
      ...(lastRequestAt > 0 ? { lastRequestAt: new Date(lastRequestAt).toISOString() } : {}),
    },
  };
}

/** What the metrics registry counts per system (api/metrics.ts). */
export interface BudgetMetrics {
  /** A request took from the system's budget after waiting waitMs (0: it went at once). */
  budgetTaken(systemId: string, waitMs: number): void;
  /** The system answered 429 or 503 with Retry-After: its budget paused. */
  budgetThrottled(systemId: string): void;
}

export interface SystemBudgetsDeps {
  store: Pick<Store, 'systemBudgets'>;
  /** The system variant a run in `mode` uses, if it has a rateLimit (the systems cache). */
  budgetOf(systemId: string, mode: ExecutionMode): Promise<BudgetOf | undefined>;
  /**
   * How long a request that finds every maxConcurrent slot in use waits before it asks again
   * (KUBEGLUE_BUDGET_SLOT_POLL_MS): slots free without a notification, so this bounds how late one is seen.
   */
  slotPollMs: number;
  metrics?: BudgetMetrics | undefined;
  log?: ((line: string) => void) | undefined;
  now?: () => number;
}

export class SystemBudgets {
  readonly #deps: SystemBudgetsDeps;
  readonly #now: () => number;

  constructor(deps: SystemBudgetsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** The budget source of a run in `mode`, as the engine asks it (engine/types.ts BudgetSource). */
  forRun(mode: ExecutionMode): BudgetSource {
    return {
      take: (systemId, withinMs) => this.take(systemId, mode, withinMs),
      release: (systemId, lease) => this.#background(this.release(systemId, mode, lease), 'release'),
      pause: (systemId, forMs) => this.#background(this.pause(systemId, mode, forMs), 'pause'),
    };
  }

  /**
   * When a request to the system may go. A system without a budget (removed since the order was built)
   * goes at once. Throws, with a message safe to show, when nothing could go within `withinMs`.
   */
  async take(systemId: string, mode: ExecutionMode, withinMs: number): Promise<BudgetTicket> {
    const budget = await this.#deps.budgetOf(systemId, mode);
    if (!budget || !isLimited(budget.limit)) return { waitMs: 0 };
    const now = this.#now();
    const take = await this.#deps.store.systemBudgets.take({
      key: budget.key,
      limit: budget.limit,
      now,
      deadline: now + withinMs,
      leaseId: randomUUID(),
    });
    if (take.granted) {
      const waitMs = Math.max(0, take.at - now);
      this.#deps.metrics?.budgetTaken(systemId, waitMs);
      return {
        waitMs,
        at: Math.max(now, take.at),
        ...(take.lease !== undefined ? { lease: take.lease } : {}),
      };
    }
    if (take.reason === 'concurrency') {
      return { retryInMs: Math.max(1, Math.min(this.#deps.slotPollMs, take.at - now)) };
    }
    throw new Error(
      `system '${systemId}'s rate budget admits no request before the run's deadline ` +
        `(the next would go in ${((take.at - now) / 1000).toFixed(1)} s)`,
    );
  }

  async release(systemId: string, mode: ExecutionMode, lease: string): Promise<void> {
    const budget = await this.#deps.budgetOf(systemId, mode);
    if (budget) await this.#deps.store.systemBudgets.release(budget.key, lease);
  }

  async pause(systemId: string, mode: ExecutionMode, forMs: number): Promise<void> {
    const budget = await this.#deps.budgetOf(systemId, mode);
    if (!budget) return;
    this.#deps.metrics?.budgetThrottled(systemId);
    await this.#deps.store.systemBudgets.pause(budget.key, this.#now() + forMs);
  }

  /** What the system variant's budget is doing (undefined: no budget, or never used). */
  async use(systemId: string, mode: ExecutionMode): Promise<BudgetUse | undefined> {
    const budget = await this.#deps.budgetOf(systemId, mode);
    if (!budget) return undefined;
    return this.#deps.store.systemBudgets.use(budget.key, budget.limit, this.#now());
  }

  /** A release or pause nobody waits for: a failure is logged, never thrown (a lease expires anyway). */
  #background(done: Promise<void>, what: string): void {
    done.catch((error: unknown) => {
      this.#deps.log?.(
        `rate budget ${what} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  }
}
