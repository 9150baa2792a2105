import type { Db } from '../driver.ts';
import { toNumber } from './values.ts';

/**
 * Rate budgets of systems (migration 25), shared by every process on the database: a token bucket kept as
 * GCRA (one theoretical arrival time per budget, so a take is one locked read and one write, and a request
 * learns at once when it may go instead of polling), a pause set by a 429/503 with Retry-After, and the
 * requests in flight of a budget with maxConcurrent as leases that expire at their run's deadline.
 * Times are epoch ms of the caller's clock (replicas' clocks agree through NTP, as leases and heartbeats
 * already assume).
 */
export interface BudgetLimit {
  requestsPerSecond?: number | undefined;
  /** Requests that may go at once after a quiet spell (default 1). */
  burst?: number | undefined;
  maxConcurrent?: number | undefined;
}

export interface BudgetTakeRequest {
  /** The System variant's resource name. */
  key: string;
  limit: BudgetLimit;
  now: number;
  /** Nothing is reserved for a request that could not go before this (its run's deadline). */
  deadline: number;
  /** The lease a maxConcurrent budget records for the request (unique). */
  leaseId: string;
}

export type BudgetTake =
  /** The request may go at `at` (now or later); with maxConcurrent it holds `lease` until released. */
  | { granted: true; at: number; lease?: string }
  /**
   * Nothing reserved: every slot is in use (`concurrency`; the earliest lease expires at `at`), or the
   * request could not go before its deadline (`deadline`; it could go at `at`).
   */
  | { granted: false; reason: 'concurrency' | 'deadline'; at: number };

/** What the budget is doing, for the dashboard and the REST System (counters since the budget's first use). */
export interface BudgetUse {
  requests: number;
  /** Requests that had to wait for the budget, and their waits in all. */
  waits: number;
  waitMs: number;
  /** Answers of 429 or 503 with Retry-After. */
  throttled: number;
  /** Epoch ms the budget is paused until (a Retry-After); 0 when not paused. */
  pausedUntil: number;
  /** Requests holding a lease now (maxConcurrent). */
  inFlight: number;
  /** How far ahead the bucket is reserved: what a request taking now would wait, in ms. */
  backlogMs: number;
  /** Epoch ms of the last request; 0 when none. */
  lastRequestAt: number;
}

export interface SystemBudgetQueries {
  take(request: BudgetTakeRequest): Promise<BudgetTake>;
  release(key: string, lease: string): Promise<void>;
  /** Nothing of the budget goes before `until` (a later pause wins); counts a throttled answer. */
  pause(key: string, until: number): Promise<void>;
  /** Undefined for a budget never used. */
  use(key: string, limit: BudgetLimit, now: number): Promise<BudgetUse | undefined>;
}

interface BudgetRow {
  tat_us: number | string | bigint;
  paused_until_ms: number | string | bigint;
}

/** µs between two requests at the rate; rounded up, so the rounding never sends faster. */
function intervalUs(limit: BudgetLimit): number {
  return limit.requestsPerSecond ? Math.ceil(1_000_000 / limit.requestsPerSecond) : 0;
}

/** How much earlier than the theoretical arrival time a request may go: the burst. */
function toleranceUs(limit: BudgetLimit): number {
  return (Math.max(1, limit.burst ?? 1) - 1) * intervalUs(limit);
}

export function bindSystemBudgetQueries(db: Db): SystemBudgetQueries {
  const d = db.dialect;
  return {
    take({ key, limit, now, deadline, leaseId }) {
      return db.transaction(async (tx) => {
        // The row exists before it is locked: two first takes then queue on one row.
        await tx.query(
          'INSERT INTO system_budgets (budget_key) VALUES ($1) ON CONFLICT (budget_key) DO NOTHING',
          [key],
        );
        const { rows } = await tx.query<BudgetRow>(
          `SELECT tat_us, paused_until_ms FROM system_budgets WHERE budget_key = $1${d.forUpdate}`,
          [key],
        );
        const row = rows[0] as BudgetRow;
        if (limit.maxConcurrent !== undefined) {
          await tx.query('DELETE FROM system_budget_leases WHERE budget_key = $1 AND expires_at_ms <= $2', [
            key,
            now,
          ]);
          const held = await tx.query<{
            n: number | string | bigint;
            first: number | string | bigint | null;
          }>(
            'SELECT count(*) AS n, min(expires_at_ms) AS first FROM system_budget_leases WHERE budget_key = $1',
            [key],
          );
          const { n, first } = held.rows[0] ?? { n: 0, first: null };
          if (toNumber(n) >= limit.maxConcurrent) {
            return { granted: false, reason: 'concurrency', at: first === null ? now : toNumber(first) };
          }
        }
        const nowUs = now * 1000;
        const tat = Math.max(toNumber(row.tat_us), nowUs);
        const allowedUs = Math.max(tat - toleranceUs(limit), nowUs, toNumber(row.paused_until_ms) * 1000);
        const at = Math.ceil(allowedUs / 1000);
        if (at >= deadline) return { granted: false, reason: 'deadline', at };
        const nextTat = Math.max(tat, allowedUs) + intervalUs(limit);
        const waited = at - now;
        await tx.query(
          `UPDATE system_budgets SET tat_us = $2, requests = requests + 1, waits = waits + $3,
             wait_ms = wait_ms + $4, last_request_ms = $5 WHERE budget_key = $1`,
          [key, limit.requestsPerSecond ? nextTat : 0, waited > 0 ? 1 : 0, Math.max(0, waited), now],
        );
        if (limit.maxConcurrent === undefined) return { granted: true, at };
        await tx.query(
          'INSERT INTO system_budget_leases (budget_key, lease_id, expires_at_ms) VALUES ($1, $2, $3)',
          [key, leaseId, deadline],
        );
        return { granted: true, at, lease: leaseId };
      });
    },

    async release(key, lease) {
      await db.query('DELETE FROM system_budget_leases WHERE budget_key = $1 AND lease_id = $2', [
        key,
        lease,
      ]);
    },

    async pause(key, until) {
      await db.query(
        `INSERT INTO system_budgets (budget_key, paused_until_ms, throttled) VALUES ($1, $2, 1)
         ON CONFLICT (budget_key) DO UPDATE SET
           paused_until_ms = ${d.greatest('system_budgets.paused_until_ms', 'excluded.paused_until_ms')},
           throttled = system_budgets.throttled + 1`,
        [key, until],
      );
    },

    async use(key, limit, now) {
      const { rows } = await db.query<{
        tat_us: number | string | bigint;
        paused_until_ms: number | string | bigint;
        requests: number | string | bigint;
        waits: number | string | bigint;
        wait_ms: number | string | bigint;
        throttled: number | string | bigint;
        last_request_ms: number | string | bigint;
        in_flight: number | string | bigint;
      }>(
        `SELECT b.*, (SELECT count(*) FROM system_budget_leases l
                       WHERE l.budget_key = b.budget_key AND l.expires_at_ms > $2) AS in_flight
           FROM system_budgets b WHERE b.budget_key = $1`,
        [key, now],
      );
      const row = rows[0];
      if (!row) return undefined;
      const pausedUntil = toNumber(row.paused_until_ms);
      const allowedUs = Math.max(toNumber(row.tat_us) - toleranceUs(limit), pausedUntil * 1000);
      return {
        requests: toNumber(row.requests),
        waits: toNumber(row.waits),
        waitMs: toNumber(row.wait_ms),
        throttled: toNumber(row.throttled),
        pausedUntil: pausedUntil > now ? pausedUntil : 0,
        inFlight: toNumber(row.in_flight),
        backlogMs: Math.max(0, Math.ceil(allowedUs / 1000) - now),
        lastRequestAt: toNumber(row.last_request_ms),
      };
    },
  };
}
